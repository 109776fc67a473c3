// SPDX-License-Identifier: Apache-2.0
// DeepSpeed's own engine training a Hugging Face model (deepspeed.initialize on a transformers
// model), as of DeepSpeed 0.19.6 (master's version.txt at edaa722).
#include "sim/frameworks/framework.h"

namespace dsp::sim {

const FrameworkProfile& DeepSpeedProfile() {
  static const FrameworkProfile profile = [] {
    FrameworkProfile p;
    p.engine = Engine::kDeepSpeed;
    p.name = "deepspeed";
    // module_inject/auto_tp.py (AutoTP), tp_plan_converter.py for transformers' tp_plan.
    p.tensor_parallel = TensorParallelStyle::kAutoTp;
    // runtime/engine.py allreduce_gradients; zero/stage_1_and_2.py, zero/stage3.py.
    p.gradients = GradientSync::kDeepSpeedZero;
    // runtime/pipe/engine.py PipelineEngine with schedule.py TrainSchedule.
    p.pipeline = PipelineRuntime::kDeepSpeedPipelineEngine;
    p.rank_layout = RankLayout::kDeepSpeed;  // utils/groups.py
    p.trains_transformers_modules = true;
    p.ulysses = true;  // sequence/layer.py DistributedAttention, compile/passes/sp_compile.py
    p.autoep = true;   // moe/ AutoEP (auto_ep_layer.py, auto_ep_folding.py)
    p.interleaved_pipeline = false;
    p.pipeline_calls_per_local_batch = false;  // PipelineEngine.train_batch: the whole step in one schedule
    p.offload = true;  // zero/offload_config.py
    p.torch_autocast = true;  // runtime/torch_autocast.py
    p.deepspeed_checkpointing = true;  // runtime/activation_checkpointing/checkpointing.py
    p.max_zero_stage = 3;
    // runtime/pipe/engine.py asserts zero_optimization_stage() < 2 (ZeRO-2/3 with pipeline).
    p.pipeline_max_zero_stage = 1;
    // engine.py: with sequence parallelism the gradient all-reduce uses
    // seq_parallel_communication_data_type (fp32 unless given).
    p.sequence_parallel_gradient_dtype = true;
    p.tied_embedding_grad_all_reduce = false;  // HF models run without PipelineModule's TiedLayerSpec
    p.fp32_grad_buffer_max_zero_stage = -1;    // bf16 gradients accumulate in bf16 (ZeRO's own buffers)
    p.event_schedule = true;
    p.zero3_release_keeps_viewed_experts = true;  // runtime/zero/partition_parameters.py free_param
    // A Hugging Face model: the kernel its attn_implementation (--attn-impl) names.
    p.attention = FrameworkAttention::kTransformers;
    return p;
  }();
  return profile;
}

}  // namespace dsp::sim
