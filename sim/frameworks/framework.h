// SPDX-License-Identifier: Apache-2.0
// What a training framework does, as the cost model needs to know it: how its tensor parallelism
// splits the model, which parallelisms and ZeRO features it offers, how it reduces gradients, what
// its pipeline runtime sends and schedules. One profile per framework (deepspeed.cc,
// megatron_deepspeed.cc, megatron_lm.cc), chosen once per plan from --engine; the planners in
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
  kMegatronLm,         // Megatron-LM: its own TP/PP (interleaved 1F1B), DDP overlapped with
                       // backward, fp16/bf16 optimizer without ZeRO
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
  bool offload = false;           // ZeRO-Offload of optimizer states and parameters
  bool torch_autocast = false;    // DeepSpeed's torch_autocast section
  bool deepspeed_checkpointing = false;  // deepspeed.checkpointing (partition/cpu_checkpointing)
  int max_zero_stage = 3;         // the highest ZeRO stage its optimizer runs
  int pipeline_max_zero_stage = 1;  // ... with pipeline parallelism
  // Ulysses' gradient reduction uses seq_parallel_communication_data_type (engine.py).
  bool sequence_parallel_gradient_dtype = false;
  // The tied embedding's gradient is all-reduced between the first and last pipeline stage.
  bool tied_embedding_grad_all_reduce = false;
  // With bf16, gradients accumulate in an fp32 buffer up to this ZeRO stage (-1: never):
  // DeepSpeed's BF16Optimizer (ZeRO 0/1 under Megatron-DeepSpeed), Megatron-LM's main_grad.
  int fp32_grad_buffer_max_zero_stage = -1;
  // sim/schedule's event simulation models this framework's engine (DeepSpeed's hooks and streams).
  bool event_schedule = false;

  bool megatron_tp() const { return tensor_parallel == TensorParallelStyle::kMegatron; }
};

const FrameworkProfile& DeepSpeedProfile();
const FrameworkProfile& MegatronDeepSpeedProfile();
const FrameworkProfile& MegatronLmProfile();

/// The profile of an engine; every Engine value has one.
const FrameworkProfile& FrameworkOf(Engine engine);
std::string_view EngineName(Engine engine);  // "deepspeed", "megatron-deepspeed", "megatron-lm"
/// The inverse of EngineName; nullopt for any other text.
std::optional<Engine> ParseEngineName(std::string_view name);
/// Whether gradients accumulate in an fp32 buffer (Workload::gradient_bytes_per_element 4).
bool Fp32GradientBuffer(Engine engine, bool bf16, int zero_stage);

}  // namespace dsp::sim
