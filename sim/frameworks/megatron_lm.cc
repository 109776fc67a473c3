// SPDX-License-Identifier: Apache-2.0
// Megatron-LM / Megatron-Core (github.com/NVIDIA/Megatron-LM) with its own DDP, distributed
// optimizer and pipeline schedules, as the Narayanan et al. 2021 runs trained and NeMo and
// Megatron-Bridge run it today.
#include "sim/frameworks/framework.h"

namespace dsp::sim {

const FrameworkProfile& MegatronLmProfile() {
  static const FrameworkProfile profile = [] {
    FrameworkProfile p;
    p.engine = Engine::kMegatronLm;
    p.name = "megatron-lm";
    p.tensor_parallel = TensorParallelStyle::kMegatron;  // megatron/core/tensor_parallel/layers.py
    // megatron/core/distributed/distributed_data_parallel.py: bucketed all-reduce hooks,
    // overlap_grad_reduce.
    p.gradients = GradientSync::kMegatronDdp;
    // megatron/core/pipeline_parallel/schedules.py: 1F1B and interleaved 1F1B;
    // p2p_communication.py with scatter_gather_tensors_in_pipeline.
    p.pipeline = PipelineRuntime::kMegatronSchedules;
    p.rank_layout = RankLayout::kMegatron;  // core/parallel_state.py RankGenerator
    p.trains_transformers_modules = false;
    p.ulysses = false;
    p.autoep = false;
    p.interleaved_pipeline = true;  // --virtual-pipeline-model-parallel-size
    p.pipeline_calls_per_local_batch = false;  // forward_backward_func: the whole step in one schedule
    p.offload = false;
    p.torch_autocast = false;
    p.deepspeed_checkpointing = false;
    // --context-parallel-size with TransformerEngine's attention and --cp-comm-type p2p (the
    // default): transformer_engine/pytorch/attention.py AttnFuncWithCPAndKVP2P.
    p.context_parallel = ContextParallel::kRingP2p;
    // --expert-model-parallel-size: core/transformer/moe (MoEAlltoAllTokenDispatcher).
    p.expert_parallel_flag = true;
    // --fp8-format hybrid: TransformerEngine's Linear layers (core/extensions/transformer_engine.py).
    p.fp8 = Fp8Linear::kTransformerEngine;
    // --fp8-param-gather: TransformerEngine FP8 parameters, all-gathered in FP8 by the distributed
    // optimizer (NeMo's fp8_params).
    p.fp8_param_gather = true;
    // core/distributed/distributed_data_parallel_config.py grad_reduce_in_fp32 (NeMo's
    // distributed_fused_adam grad_sync_dtype); Megatron-LM's arguments.py forces fp32 under --bf16.
    // NeMo's distributed_fused_adam dtype: the optimizer states' dtype.
    p.megatron_precision_options = true;
    // --expert-tensor-parallel-size, --moe-token-dispatcher-type, --moe-grouped-gemm
    // (core/transformer/moe/token_dispatcher.py, experts.py).
    p.megatron_moe_options = true;
    // --tp-comm-overlap (megatron/core/extensions/transformer_engine.py initialize_ub; NeMo's
    // recipes turn it on with sequence parallelism).
    p.tp_comm_overlap = true;
    // The distributed optimizer shards optimizer states over dp: ZeRO-1's partitioning.
    p.max_zero_stage = 1;
    p.pipeline_max_zero_stage = 1;
    p.sequence_parallel_gradient_dtype = false;
    // core/distributed/finalize_model_grads.py _allreduce_word_embedding_grads.
    p.tied_embedding_grad_all_reduce = true;
    p.fp32_grad_buffer_max_zero_stage = 1;  // bf16 training accumulates into fp32 main_grad
    p.event_schedule = false;
    // TransformerEngine's DotProductAttention: FusedAttention (cuDNN) before flash-attn on sm90+.
    p.attention = FrameworkAttention::kTransformerEngine;
    return p;
  }();
  return profile;
}

}  // namespace dsp::sim
