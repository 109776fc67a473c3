// SPDX-License-Identifier: Apache-2.0
// What a training framework does, as the cost model needs to know it: how its tensor parallelism
// splits the model, which parallelisms and ZeRO features it offers, how it reduces gradients, what
// its pipeline runtime sends and schedules. One profile per framework (deepspeed.cc,
// megatron_deepspeed.cc, megatron_lm.cc, fsdp2.cc), chosen once per plan from --engine; the planners in
// sim/comm, sim/cost and sim/tune read the profile's behaviours and never branch on the engine.
// Adding a framework is adding one profile file and its line in registry.cc.
#pragma once

#include <optional>
#include <string_view>

#include "core/layout/groups.h"

namespace dsp::sim {

enum class Engine {
  kDeepSpeed,          // DeepSpeed with AutoTP (embedding and lm_head whole), Ulysses, AutoEP
  kMegatronDeepSpeed,  // Megatron's model (vocab-parallel embedding/lm_head, mpu TP) under
                       // DeepSpeed's engine: its PipelineModule (1F1B), ZeRO 0/1, BF16Optimizer
  kMegatronLm,         // Megatron-LM / Megatron-Core (NeMo, Megatron-Bridge): its own TP/PP
                       // (interleaved 1F1B), CP, EP, DDP or the distributed optimizer
  kFsdp2,              // PyTorch FSDP2 (fully_shard) as torchtitan composes it with TP, PP, CP, EP
};

/// How tensor parallelism splits the model, and where its size comes from.
enum class TensorParallelStyle {
  // DeepSpeed AutoTP (module_inject/auto_tp.py): Linear layers split by the config's
  // tensor_parallel.autotp_size, embedding and lm_head whole unless transformers' tp_plan says
  // otherwise, attention split only where the KV heads divide.
  kAutoTp,
  // Megatron's mpu (--tp): VocabParallelEmbedding, a vocab-parallel lm_head and cross entropy,
  // every attention head split, optional sequence parallelism in the norm and dropout regions
  // (Korthikanti et al. 2022 §4.2.2).
  kMegatron,
};

/// Who reduces the gradients and when.
enum class GradientSync {
  // DeepSpeed's engine and ZeRO optimizers (runtime/engine.py allreduce_gradients, zero/stage_1_and_2.py,
  // zero/stage3.py): all-reduce at the boundary at ZeRO 0/1, reduce-scatter per micro-step at 2/3,
  // ZeRO-3 parameter gathers, ZeRO++ and MiCS.
  kDeepSpeedZero,
  // Megatron-LM's DistributedDataParallel: bucketed all-reduce overlapped with the last
  // micro-step's backward (overlap_grad_reduce), no ZeRO beyond the distributed optimizer.
  kMegatronDdp,
  // PyTorch FSDP2 (torch/distributed/fsdp/_fully_shard): one parameter group per transformer
  // block, all-gathered in the mixed-precision policy's param_dtype before its forward (and again
  // before its backward when it resharded after forward), gradients reduce-scattered in
  // reduce_dtype after its backward, every micro-batch unless gradient sync is off.
  kFsdp2,
};

/// How context (sequence) parallelism exchanges keys and values when the command line gives --cp.
enum class ContextParallel {
  kNone,
  // Megatron-Core with TransformerEngine (transformer_engine/pytorch/attention.py
  // AttnFuncWithCPAndKVP2P, cp_comm_type "p2p"): K and V travel around the CP ring in cp - 1
  // send/recv steps, each overlapped with the attention of the chunk already here; backward
  // sends K, V and their gradients.
  kRingP2p,
  // PyTorch's context_parallel (torch/distributed/tensor/experimental/_attention.py, the default
  // rotate method "allgather"): K and V all-gathered over the CP group before attention, their
  // gradients reduce-scattered after its backward.
  kAllGatherKv,
  // Megatron-Core's --cp-comm-type a2a (TransformerEngine AttnFuncWithCPAndQKVOA2A): Ulysses' scheme,
  // Q, K and V all-to-all'd from sequence shards to head shards before attention and the output
  // back after, mirrored in backward; the key-value heads must divide by cp (no replication).
  kAllToAll,
};

/// How a MoE layer moves its tokens to the experts' ranks (--moe-token-dispatcher, megatron-lm).
enum class MoeDispatcher {
  // Megatron-Core's MoEAlltoAllTokenDispatcher (and AutoEP's, torchtitan's): each assignment's row
  // all-to-all'd over the EP group, then all-gathered over the expert-tensor-parallel group.
  kAllToAll,
  // Megatron-Core's MoEAllGatherTokenDispatcher: every token of the expert TPxEP group all-gathered
  // to every rank of it, each rank's experts pick theirs; the combine reduce-scatters back.
  kAllGather,
};

/// FP8 linear layers (--fp8).
enum class Fp8Linear {
  kNone,
  // TransformerEngine (NeMo, Megatron-Core): fp8 GEMMs with delayed scaling; the weight's fp8
  // copy and its transpose cached across micro-batches (Linear's is_first_microbatch); linear
  // inputs saved for backward in fp8.
  kTransformerEngine,
  // torchao.float8 Float8Linear (torchtitan's float8 converter, tensorwise scaling): inputs,
  // weights and output gradients cast to fp8 around every GEMM; the high-precision input is what
  // autograd saves.
  kTorchaoFloat8,
};

/// The pipeline runtime: what a stage sends and how the schedule runs.
enum class PipelineRuntime {
  // DeepSpeed's PipelineEngine (runtime/pipe/engine.py, schedule.py TrainSchedule): 1F1B with
  // blocking send/recv of the whole activation from every TP rank; no interleaving.
  kDeepSpeedPipelineEngine,
  // Megatron-LM's schedules (core/pipeline_parallel/schedules.py): 1F1B or interleaved 1F1B over
  // virtual stages; without sequence parallelism each rank sends 1/tp of the activation and the
  // receiver all-gathers it inside the TP group (scatter_gather_tensors_in_pipeline).
  kMegatronSchedules,
};

// Where a framework's attention kernel comes from (sim/frameworks/attention_kernel.h resolves it).
enum class FrameworkAttention {
  kTransformers,       // transformers' attn_implementation (sdpa by default)
  kTorchSdpa,          // PyTorch scaled_dot_product_attention with the framework's backend order
  kTransformerEngine,  // TransformerEngine's DotProductAttention
  kFlashAttn2,         // the flash_attn package's FlashAttention-2
};

struct FrameworkProfile {
  Engine engine = Engine::kDeepSpeed;
  std::string_view name;  // the --engine value
  TensorParallelStyle tensor_parallel = TensorParallelStyle::kAutoTp;
  GradientSync gradients = GradientSync::kDeepSpeedZero;
  PipelineRuntime pipeline = PipelineRuntime::kDeepSpeedPipelineEngine;
  // Ranks laid out as Megatron's mpu does (tp fastest, then dp, then pp) or as DeepSpeed's groups.
  RankLayout rank_layout = RankLayout::kDeepSpeed;
  // The model is transformers' eager modules (when the plan says it is a Hugging Face model):
  // memory-bound kernels and saved activations of HF's RMSNorm, rotary, MLP and loss.
  bool trains_transformers_modules = false;
  // Parallelisms and features only this framework offers.
  bool ulysses = false;           // DeepSpeed-Ulysses / AutoSP sequence parallelism
  bool autoep = false;            // AutoEP expert parallelism
  bool interleaved_pipeline = false;  // --virtual-stages
  // The pipeline schedules are torch.distributed.pipelining's: ScheduleInterleaved1F1B runs
  // max(1, m / p) rounds of m / rounds micro-batches (schedules.py microbatches_per_round) and
  // takes fewer micro-batches than stages; Megatron-LM's groups are p (its
  // microbatch_group_size_per_vp_stage default) and it needs m >= p.
  bool torch_pipelining = false;
  // --pp-schedule-micro-batches: the training loop calls the pipeline schedule once per local
  // batch of its gradient-accumulation loop (torch.distributed.pipelining under torchtitan and NeMo
  // AutoModel), not once for the whole step (Megatron's forward_backward_func, DeepSpeed's
  // PipelineEngine.train_batch).
  bool pipeline_calls_per_local_batch = false;
  bool offload = false;           // ZeRO-Offload of optimizer states and parameters
  bool torch_autocast = false;    // DeepSpeed's torch_autocast section
  bool deepspeed_checkpointing = false;  // deepspeed.checkpointing (partition/cpu_checkpointing)
  ContextParallel context_parallel = ContextParallel::kNone;  // --cp
  bool expert_parallel_flag = false;  // --ep: expert parallelism from the command line
  // --etp, --moe-token-dispatcher and --moe-grouped-gemm: Megatron-Core's MoE options.
  bool megatron_moe_options = false;
  // A MoE layer's experts always run as grouped GEMMs (torchtitan's GroupedExperts with
  // use_grouped_mm); otherwise only with --moe-grouped-gemm.
  bool grouped_gemm_experts = false;
  // --fp8-param-gather: the FP8 all-gather of linear weights the framework offers.
  bool fp8_param_gather = false;
  // --bf16-grad-buffer and --bf16-optimizer-states: its gradient buffer and optimizer states can be
  // bf16 (Megatron-Core's grad_reduce_in_fp32=False, NeMo's distributed_fused_adam dtypes).
  bool megatron_precision_options = false;
  // Tensor parallelism always runs with sequence parallelism in the norm regions (torchtitan's TP
  // plan: SequenceParallel on attention_norm and ffn_norm), --megatron-sp or not.
  bool tp_always_sequence_parallel = false;
  Fp8Linear fp8 = Fp8Linear::kNone;  // what --fp8 means
  // --tp-comm-overlap: the sequence-parallel all-gather and reduce-scatter overlap the GEMMs next
  // to them: TransformerEngine's userbuffers (Megatron-Core's --tp-comm-overlap), torchtitan's
  // async TP (needs torch.compile).
  bool tp_comm_overlap = false;
  // Pipeline chunks may hold different numbers of layers (torch.distributed.pipelining stages are
  // whatever modules each holds); false: layers must divide by pp x virtual stages.
  bool uneven_pipeline_chunks = false;
  int max_zero_stage = 3;         // the highest ZeRO stage its optimizer runs
  int pipeline_max_zero_stage = 1;  // ... with pipeline parallelism
  // Ulysses' gradient reduction uses seq_parallel_communication_data_type (engine.py).
  bool sequence_parallel_gradient_dtype = false;
  // The tied embedding's gradient is all-reduced between the first and last pipeline stage.
  bool tied_embedding_grad_all_reduce = false;
  // With bf16, gradients accumulate in an fp32 buffer up to this ZeRO stage (-1: never):
  // DeepSpeed's BF16Optimizer (ZeRO 0/1 under Megatron-DeepSpeed), Megatron-LM's main_grad.
  int fp32_grad_buffer_max_zero_stage = -1;
  // sim/schedule's graph program models this framework's engine (DeepSpeed's hooks and streams);
  // the others are simulated over their planners' collectives (sim/schedule/engine_program.h), and
  // tune re-ranks with the schedule only where this is set.
  bool event_schedule = false;
  // --recompute selective is torchtitan's op-level selective activation checkpointing
  // (activation_checkpoint.selective_ac_option "op"): saves the outputs of every other matmul and of
  // the fused attention, recomputes the rest in backward (sim/cost/recompute_policy.h).
  bool op_level_sac = false;
  // The eager fp32 loss of torchtitan's training loop: the logits' reference dropped before
  // backward outside a pipeline, and DTensor's loss_parallel cross-entropy under tensor parallelism
  // (sim/cost/activation_memory.h LayerShape::loss_parallel).
  bool torchtitan_loss = false;
  // ZeRO-3 releases a gathered parameter by swapping its data for an empty tensor (DeepSpeed's
  // free_param), and the model is transformers' with fused experts, whose matmuls save a view of
  // the weight: each MoE layer's gathered experts outlive their release until backward
  // (sim/cost/zero3_saved_weights.h).
  bool zero3_release_keeps_viewed_experts = false;
  // Which attention kernel --attention flash (the default) means (sim/frameworks/attention_kernel.h).
  FrameworkAttention attention = FrameworkAttention::kTransformers;

  bool megatron_tp() const { return tensor_parallel == TensorParallelStyle::kMegatron; }
};

const FrameworkProfile& DeepSpeedProfile();
const FrameworkProfile& MegatronDeepSpeedProfile();
const FrameworkProfile& MegatronLmProfile();
const FrameworkProfile& Fsdp2Profile();

/// The profile of an engine; every Engine value has one.
const FrameworkProfile& FrameworkOf(Engine engine);
std::string_view EngineName(Engine engine);  // "deepspeed", "megatron-deepspeed", "megatron-lm", "fsdp2"
/// The inverse of EngineName; nullopt for any other text.
std::optional<Engine> ParseEngineName(std::string_view name);
/// Whether gradients accumulate in an fp32 buffer (Workload::gradient_bytes_per_element 4).
bool Fp32GradientBuffer(Engine engine, bool bf16, int zero_stage);

/// What keeps a plan from overlapping tensor-parallel communication with the GEMMs beside it
/// (--tp-comm-overlap), or kNone. One answer for simulate, tune and the reference-run tables.
enum class TpOverlapBlocker {
  kNone,
  kNoOverlap,              // the framework has none (DeepSpeed's AutoTP)
  kNoTensorParallel,       // tp 1: nothing to overlap
  kNeedsSequenceParallel,  // Megatron-LM arguments.py: "can happen only when sequence parallelism is enabled"
  kNeedsCompile,           // torchtitan's async TP is an Inductor pass (parallelize.py)
  kTeModules,              // ... which fuses PyTorch's matmuls, not TransformerEngine's GEMM calls
};
TpOverlapBlocker TpCommOverlapBlocker(const FrameworkProfile& fw, int tp, bool sequence_parallel,
                                      bool torch_compile, bool te_modules);

}  // namespace dsp::sim
