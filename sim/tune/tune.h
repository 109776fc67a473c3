// SPDX-License-Identifier: Apache-2.0
// tune: enumerate every plan for a model on a cluster, drop what does not fit or what DeepSpeed
// would reject, rank the rest by simulated throughput. Validity is decided by the validate rules
// themselves: each distinct (layout, ZeRO stage, offload, precision, cpu_checkpointing) config with
// a variant that fits and could rank among the best is run through the rules once, so an emitted
// config passes `ds-plan validate`; micro-batch,
// accumulation, recompute, interleaving and Megatron-SP variants reuse that verdict and the plan's
// group tables, which keeps the inner loop at the cost-model evaluation alone.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/json/document.h"
#include "sim/cost/sim_input.h"
#include "core/model/model_spec.h"
#include "core/util/result.h"
#include "sim/cost/cluster.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/step_time.h"
#include "sim/cost/workload.h"

namespace dsp::sim {

struct TuneOptions {
  int64_t world_size = 0;
  int64_t gpus_per_node = 0;       // 0 = the cluster's
  int64_t seq_len = 4096;
  int64_t global_batch = 0;        // distinct samples per optimizer step; 0 = 4M tokens / seq_len
  int top = 10;
  MemoryConvention convention = MemoryConvention::kZeroPaper;
  int64_t max_micro_batch = 64;
  // The engine's own space: megatron engines and fsdp2 search Megatron's tp, SP and virtual
  // stages, context parallelism, expert parallelism and FP8 (when the cluster has an FP8 peak);
  // fsdp2 shards at ZeRO 2/3 under a pipeline too.
  Engine engine = Engine::kDeepSpeed;
  int max_context_parallel = 16;       // cp searched up to this (powers of two)
  // --attention; resolved per engine and GPU (sim/frameworks/attention_kernel.h) for each candidate.
  AttentionKernel attention = AttentionKernel::kFramework;
  bool flash_attention() const { return attention != AttentionKernel::kMaterialized; }
  // --fused-loss, --tiled-mlp, --expandable-segments: what the training script changes (EngineSettings).
  bool fused_loss = false, tiled_mlp = false, expandable_segments = false;
  // --bf16-grad-buffer, --bf16-optimizer-states: the Megatron engine's precision options
  // (EngineSettings), applied to its candidates; --bf16-params (with --bf16-optimizer-states: the
  // moments too) to FSDP2's; --bf16-loss to the engines that run a PyTorch cross-entropy.
  bool bf16_grad_buffer = false, bf16_optimizer_states = false, bf16_params = false, bf16_loss = false;
  bool te_modules = false;  // --te-modules: fsdp2 plans run TransformerEngine's modules
  bool automodel_experts = false;  // --automodel-experts: fsdp2 plans wrap experts as AutoModel does
  bool fake_balanced_gate = false;  // --fake-balanced-gate: fsdp2 expert-parallel plans route as AutoModel's benchmarks
  bool torch_compile = false;  // --torch-compile: fsdp2 plans compile each block (torchtitan's compile.enable)
  bool eager_loss = false;     // --eager-loss: with torch_compile, the loss is not compiled
  bool search_pipeline = true;         // pp over the divisors of the layers (and the world)
  int max_virtual_stages = 8;          // interleaving depth searched (megatron-lm)
  // The best `rerank` plans by the closed form are simulated event by event (sim/schedule) where
  // the schedule covers them (DeepSpeed engine, no pipeline; every model family has a graph) and re-ranked by
  // that time, so closed form and schedule cannot disagree on the winner. 0 = off.
  int rerank = 10;
  // Precision and activation-offload variants of each config: torch_autocast next to bf16 mixed
  // precision (DeepSpeed engine) and cpu_checkpointing with full recompute (both DeepSpeed engines).
  bool search_autocast = true;
  bool search_cpu_checkpointing = true;
  DeepSpeedVersion deepspeed_version = DeepSpeedVersion::Newest();
};

enum class Offload { kNone, kOptimizer, kOptimizerAndParams };
std::string_view OffloadName(Offload o);  // "none", "optimizer", "optimizer+params"

struct TunedPlan {
  Engine engine = Engine::kDeepSpeed;
  // sp: Ulysses under DeepSpeed, context parallelism (--cp) under megatron-lm and fsdp2.
  int64_t tp = 1, sp = 1, ep = 1, dp = 1, edp = 1, pp = 1;
  int64_t etp = 1;  // megatron-lm: the experts' tensor-parallel size (--etp)
  int virtual_stages = 1;
  bool megatron_sp = false;
  int zero_stage = 0;
  Offload offload = Offload::kNone;
  Recompute recompute = Recompute::kNone;
  // torch_autocast (bf16) instead of bf16 mixed precision: fp32 parameters and gradients.
  bool torch_autocast = false;
  // activation_checkpointing.cpu_checkpointing with full recompute: layer inputs in host memory.
  bool cpu_checkpointing = false;
  bool fp8 = false;  // --fp8: the engine's FP8 linear layers
  bool tp_comm_overlap = false;  // --tp-comm-overlap (megatron-lm with sequence parallelism, fsdp2 compiled)
  int64_t micro_batch = 1, grad_accum = 1;
  double peak_bytes = 0;
  double hbm_bytes = 0;
  double step_seconds = 0;      // closed form (sim/step_time)
  double schedule_seconds = 0;  // event simulation of the step (0: not simulated)
  double tokens_per_second = 0; // of the time the plan is ranked by (schedule, else closed form)
  double mfu = 0;
  Json config;  // the DeepSpeed config that realises this plan (passes validate)
  double rank_seconds() const { return schedule_seconds > 0 ? schedule_seconds : step_seconds; }
  // Below the ranking: listed only as its framework's best (tune --engines), its rank unknown.
  bool below_ranking = false;
};

struct TuneResult {
  int64_t evaluated = 0;   // plans whose memory was estimated
  int64_t fitting = 0;     // fit in HBM
  int64_t validated = 0;   // fit, and their config was checked by the validate rules: the
                           // configs with a plan that could enter the best found so far
  int64_t valid = 0;       // of those, the ones whose config passes: the plans ranked
  int64_t autocast_twins = 0;  // torch_autocast plans left out below the same plan in bf16
  int64_t global_batch = 0;
  double seconds = 0;
  int64_t rescheduled = 0;  // plans re-ranked by the event simulation
  std::vector<TunedPlan> plans;  // best first
  // Assumptions the best plan rests on, when its MFU is above what any published run on that GPU
  // reached (PublishedMfuCeiling).
  std::vector<std::string> notes;
};

// The highest MFU a published training run reached on a GPU of this name (A100: Korthikanti et al.
// 2022 Table 5, 1T at 56.3%; H100/H200: the Megatron-LM README's H100 table, 49.4%); 0 when
// unknown. `source` names the run.
double PublishedMfuCeiling(const std::string& gpu_name, std::string* source);

// The notes a ranking carries (torch_autocast plans left out, an MFU above what any published run
// reached); Tune adds them, and a caller that merges the plans of several engines adds them again.
void AddRankingNotes(const Cluster& cluster, const TuneOptions& options, TuneResult& result);

// Whether `a` ranks above `b`: more tokens per second, then less time, less memory, the simpler
// layout (deterministic). Plans of different engines compare by the same measure.
bool RankedBefore(const TunedPlan& a, const TunedPlan& b);

// `progress(done, total)` is called now and then with the layouts searched so far.
// Micro-steps the schedule re-rank simulates; a plan with more is extrapolated from two counts (its
// micro-steps are alike without pipeline stages, which the schedule does not cover).
inline constexpr int64_t kScheduledMicroSteps = 16;

// The event simulation of a tuned plan's step (0 where the schedule does not cover it: pipeline
// stages, Megatron engines), with at most `max_micro_steps` simulated (0: all of them).
double ScheduleStepSeconds(const ModelSpec& model, const Cluster& cluster, const TuneOptions& options,
                           int64_t world, int64_t gpus_per_node, const TunedPlan& plan, int64_t max_micro_steps);

Result<TuneResult> Tune(const ModelSpec& model, const Cluster& cluster, const TuneOptions& options,
                        const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace dsp::sim
