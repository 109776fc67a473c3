// Everything the cost model reads: the plan (layout and exact group tables), the model, the
// cluster, the workload and the ZeRO settings of the config. Simulation code never reads JSON.
#pragma once

#include "core/model/model_spec.h"
#include "core/plan/plan.h"
#include "sim/cluster.h"
#include "sim/workload.h"

namespace dsp::sim {

struct ZeroSettings {
  int stage = 0;
  bool offload_optimizer = false;      // offload_optimizer.device is cpu or nvme
  bool offload_param = false;          // offload_param.device is cpu or nvme (stage 3 only)
  double offload_ratio = 1.0;          // offload_optimizer.ratio (stage 3 partial offload)
  bool overlap_comm = false;           // resolved default: true at stage 3
  double reduce_bucket_size = 5e8;     // elements
  double allgather_bucket_size = 5e8;  // elements
  double prefetch_bucket_size = 5e7;   // elements (stage 3)
  double max_live_parameters = 1e9;    // elements (stage 3)
  double param_persistence_threshold = 1e5;  // elements (stage 3)
};

// Reads zero_optimization with DeepSpeed's defaults (and its aliases, e.g. stage3_prefetch_bucket_size).
ZeroSettings ReadZeroSettings(const Json& config);

// Workload::optimizer_state_bytes_per_param for the config's optimizer section (12, Adam, when the
// optimizer is absent or unknown: DeepSpeed's client optimizers are almost always Adam variants).
double ReadOptimizerStateBytes(const Json& config);

class GroupLinkCache;

struct SimInput {
  const Plan* plan = nullptr;
  const ModelSpec* model = nullptr;
  const Cluster* cluster = nullptr;
  Workload workload;
  ZeroSettings zero;
  // Optional: link answers shared across evaluations of the same plan and cluster (tune).
  GroupLinkCache* link_cache = nullptr;
};

}  // namespace dsp::sim
