// tune: enumerate every valid plan for a model on a cluster, drop what does not fit, rank the rest
// by simulated throughput. Validity is decided by the validate rules themselves: each distinct
// (layout, ZeRO stage, offload) config is run through ValidateText once, so an emitted config
// passes `ds-plan validate`; micro-batch, accumulation and recompute variants reuse that verdict
// and the plan's group tables, which keeps the inner loop at the cost-model evaluation alone.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/json/document.h"
#include "sim/sim_input.h"
#include "core/model/model_spec.h"
#include "core/util/result.h"
#include "sim/cluster.h"
#include "sim/memory_model.h"
#include "sim/step_time.h"
#include "sim/workload.h"

namespace dsp::sim {

struct TuneOptions {
  int64_t world_size = 0;
  int64_t gpus_per_node = 0;       // 0 = the cluster's
  int64_t seq_len = 4096;
  int64_t global_batch = 0;        // distinct samples per optimizer step; 0 = 4M tokens / seq_len
  int top = 10;
  MemoryConvention convention = MemoryConvention::kZeroPaper;
  int64_t max_micro_batch = 64;
  Engine engine = Engine::kDeepSpeed;  // megatron engines search Megatron's tp, SP, virtual stages
  bool flash_attention = true;
  bool search_pipeline = true;         // pp over the divisors of the layers (and the world)
  int max_virtual_stages = 8;          // interleaving depth searched (megatron-lm)
  DeepSpeedVersion deepspeed_version = DeepSpeedVersion::Newest();
};

enum class Offload { kNone, kOptimizer, kOptimizerAndParams };
std::string_view OffloadName(Offload o);  // "none", "optimizer", "optimizer+params"

struct TunedPlan {
  int64_t tp = 1, sp = 1, ep = 1, dp = 1, edp = 1, pp = 1;
  int virtual_stages = 1;
  bool megatron_sp = false;
  int zero_stage = 0;
  Offload offload = Offload::kNone;
  Recompute recompute = Recompute::kNone;
  int64_t micro_batch = 1, grad_accum = 1;
  double peak_bytes = 0;
  double hbm_bytes = 0;
  double step_seconds = 0;
  double tokens_per_second = 0;
  double mfu = 0;
  Json config;  // the DeepSpeed config that realises this plan (passes validate)
};

struct TuneResult {
  int64_t evaluated = 0;   // plans costed
  int64_t valid = 0;       // passed the validate rules
  int64_t fitting = 0;     // fit in HBM
  int64_t global_batch = 0;
  double seconds = 0;
  std::vector<TunedPlan> plans;  // best first
  // Assumptions the best plan rests on, when its MFU is above what any published run on that GPU
  // reached (PublishedMfuCeiling).
  std::vector<std::string> notes;
};

// The highest MFU a published training run reached on a GPU of this name (A100: Korthikanti et al.
// 2022 Table 5, 1T at 56.3%; H100/H200: the Megatron-LM README's H100 table, 49.4%); 0 when
// unknown. `source` names the run.
double PublishedMfuCeiling(const std::string& gpu_name, std::string* source);

// `progress(done, total)` is called now and then with the layouts searched so far.
Result<TuneResult> Tune(const ModelSpec& model, const Cluster& cluster, const TuneOptions& options,
                        const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace dsp::sim
