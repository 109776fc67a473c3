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
};

enum class Offload { kNone, kOptimizer, kOptimizerAndParams };
std::string_view OffloadName(Offload o);  // "none", "optimizer", "optimizer+params"

struct TunedPlan {
  int64_t tp = 1, sp = 1, ep = 1, dp = 1, edp = 1;
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
};

// `progress(done, total)` is called now and then with the layouts searched so far.
Result<TuneResult> Tune(const ModelSpec& model, const Cluster& cluster, const TuneOptions& options,
                        const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace dsp::sim
