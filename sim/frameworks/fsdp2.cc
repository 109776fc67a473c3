// SPDX-License-Identifier: Apache-2.0
// PyTorch FSDP2 (torch.distributed.fsdp.fully_shard) as torchtitan composes it with tensor,
// pipeline, context and expert parallelism (torchtitan v0.2.2
// torchtitan/models/llama3/infra/parallelize.py: apply_tp, apply_cp via context_parallel,
// apply_fsdp; torchtitan/distributed/parallel_dims.py for the device mesh). Accelerate and the
// Hugging Face Trainer wrap the same fully_shard.
#include "sim/frameworks/framework.h"

namespace dsp::sim {

const FrameworkProfile& Fsdp2Profile() {
  static const FrameworkProfile profile = [] {
    FrameworkProfile p;
    p.engine = Engine::kFsdp2;
    p.name = "fsdp2";
    // apply_tp: tok_embeddings RowwiseParallel (vocabulary split), output ColwiseParallel with loss
    // parallel, q/k/v and w1/w3 colwise, wo and w2 rowwise: Megatron's split of every layer.
    p.tensor_parallel = TensorParallelStyle::kMegatron;
    p.tp_always_sequence_parallel = true;  // attention_norm, ffn_norm, norm: SequenceParallel()
    // torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py (pre_forward unshard,
    // post_backward reduce-scatter) and _fsdp_collectives.py (foreach_all_gather,
    // foreach_reduce).
    p.gradients = GradientSync::kFsdp2;
    // torch/distributed/pipelining: Schedule1F1B and ScheduleInterleaved1F1B; with sequence
    // parallel each TP rank sends its own sequence shard of the stage output, as Megatron's
    // schedules do.
    p.pipeline = PipelineRuntime::kMegatronSchedules;
    // ParallelDims' mesh ["pp", "dp_replicate", "dp_shard", "cp", "tp"]: tp fastest, then cp,
    // then data parallel, then pp, Megatron-Core's order.
    p.rank_layout = RankLayout::kMegatron;
    // torchtitan's Llama is eager PyTorch modules (RMSNorm, rotary, SwiGLU, cross entropy) with the
    // same kernels and saved tensors as transformers' eager ones unless torch.compile fuses them.
    p.trains_transformers_modules = true;
    p.ulysses = false;
    p.autoep = false;
    p.interleaved_pipeline = true;  // ScheduleInterleaved1F1B (pipeline_parallel_schedule)
    p.torch_pipelining = true;
    // torchtitan's train.py (forward_backward_step: pp_schedule.step per local batch of the
    // gradient-accumulation loop) and NeMo AutoModel's recipes/llm/train_ft.py.
    p.pipeline_calls_per_local_batch = true;
    // torchtitan/distributed/pipeline_parallel.py pipeline_module_split: the layers of a model that
    // does not divide go to the stages as evenly as they can.
    p.uneven_pipeline_chunks = true;
    p.offload = false;
    p.torch_autocast = false;
    p.deepspeed_checkpointing = false;
    p.context_parallel = ContextParallel::kAllGatherKv;  // apply_cp: torch context_parallel
    p.expert_parallel_flag = true;  // parallelism.expert_parallel_degree (apply_moe_ep_tp)
    p.fp8 = Fp8Linear::kTorchaoFloat8;  // model.converters = ["float8"]
    // Async TP (experimental.enable_async_tensor_parallel, later parallelism.*; apply_tp sets
    // torch._inductor.config._micro_pipeline_tp and enables symmetric memory on the tp group):
    // Inductor's micro_pipeline_tp pass fuses each all-gather with the matmul it feeds
    // (fused_all_gather_matmul) and each matmul with the reduce-scatter of its output
    // (fused_matmul_reduce_scatter), forward and backward. It exists only in compiled graphs:
    // parallelize.py raises "Async TP requires --training.compile".
    p.tp_comm_overlap = true;
    // float8.enable_fsdp_float8_all_gather: torchao's WeightWithDynamicFloat8CastTensor casts each
    // shard to float8 before FSDP2's all-gather.
    p.fp8_param_gather = true;
    // torchtitan/models/moe GroupedExperts (use_grouped_mm): torch._grouped_mm over local experts.
    p.grouped_gemm_experts = true;
    // Full shard (ZeRO-3: reshard after forward) or shard-grad-op (ZeRO-2: keep the gathered
    // parameters until backward); both run under a pipeline (torchtitan shards every stage).
    p.max_zero_stage = 3;
    p.pipeline_max_zero_stage = 3;
    p.sequence_parallel_gradient_dtype = false;
    p.tied_embedding_grad_all_reduce = false;  // Llama 3 unties the embedding
    // MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32): the sharded gradients are fp32
    // (training.mixed_precision_reduce "float32").
    p.fp32_grad_buffer_max_zero_stage = 3;
    p.event_schedule = false;
    // torchtitan's "selective" activation checkpointing with selective_ac_option "op" (its Llama 3
    // train configs): models/llama3/infra/parallelize.py _apply_ac_to_transformer_block.
    p.op_level_sac = true;
    // train.py (9dec370; train_step since): `pred = model(...)`, `loss = loss_fn(pred, labels)`,
    // `del pred`, `loss.backward()`, under `loss_parallel` when TP is on (parallel_dims
    // loss_parallel_enabled, training.disable_loss_parallel false by default).
    p.torchtitan_loss = true;
    // torchtitan/models/attention.py ScaledDotProductAttention: sdpa_kernel([FLASH, EFFICIENT, MATH],
    // set_priority=True), cuDNN first only on sm100.
    p.attention = FrameworkAttention::kTorchSdpa;
    return p;
  }();
  return profile;
}

}  // namespace dsp::sim
