// SPDX-License-Identifier: Apache-2.0
// Megatron-DeepSpeed (github.com/microsoft/Megatron-DeepSpeed): Megatron's GPT model and mpu
// tensor parallelism under DeepSpeed's engine, as the 2021-22 BLOOM and MT-NLG runs trained.
#include "sim/frameworks/framework.h"

namespace dsp::sim {

const FrameworkProfile& MegatronDeepSpeedProfile() {
  static const FrameworkProfile profile = [] {
    FrameworkProfile p;
    p.engine = Engine::kMegatronDeepSpeed;
    p.name = "megatron-deepspeed";
    // megatron/mpu/layers.py: VocabParallelEmbedding, ColumnParallelLinear, RowParallelLinear;
    // megatron/mpu/cross_entropy.py vocab_parallel_cross_entropy.
    p.tensor_parallel = TensorParallelStyle::kMegatron;
    // DeepSpeed's engine reduces the gradients (ZeRO 0/1 with BF16Optimizer in the BLOOM recipe).
    p.gradients = GradientSync::kDeepSpeedZero;
    // megatron/model/gpt_model.py GPTModelPipe: DeepSpeed's PipelineModule and PipelineEngine.
    p.pipeline = PipelineRuntime::kDeepSpeedPipelineEngine;
    p.rank_layout = RankLayout::kMegatron;  // PipelineModule's ProcessTopology: pipe, data, model
    p.trains_transformers_modules = false;  // Megatron's fused kernels
    p.ulysses = false;
    p.autoep = false;
    p.interleaved_pipeline = false;
    p.pipeline_calls_per_local_batch = false;  // PipelineEngine.train_batch: the whole step in one schedule
    p.offload = false;
    p.torch_autocast = false;
    p.deepspeed_checkpointing = true;  // megatron/checkpointing through deepspeed.checkpointing
    p.max_zero_stage = 3;
    p.pipeline_max_zero_stage = 1;  // runtime/pipe/engine.py: ZeRO-2/3 not with pipeline
    p.sequence_parallel_gradient_dtype = false;
    // GPTModelPipe ties the embedding with TiedLayerSpec: PipelineEngine all-reduces its gradient
    // between the first and last stage (_exec_reduce_tied_grads).
    p.tied_embedding_grad_all_reduce = true;
    // runtime/bf16_optimizer.py: fp32 gradient accumulation buffers at ZeRO 0/1.
    p.fp32_grad_buffer_max_zero_stage = 1;
    p.event_schedule = false;
    // megatron/model/transformer.py FlashSelfAttention (--use-flash-attn-v2): flash_attn's kernels.
    p.attention = FrameworkAttention::kFlashAttn2;
    return p;
  }();
  return profile;
}

}  // namespace dsp::sim
