// Step time: FLOPs per operator, compute time from peak x efficiency with a roofline for
// memory-bound operators, every collective the plan implies (costed on its real group, intra- or
// inter-node from the rank lists), and DeepSpeed's overlap of gradient reduction and ZeRO-3 prefetch.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/layout/groups.h"
#include "sim/sim_input.h"

namespace dsp::sim {

enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast };
std::string_view CollectiveKindName(CollectiveKind kind);  // "all_reduce", "all_gather", ...

struct CollectiveCall {
  std::string purpose;          // "tp_all_reduce", "ulysses_all_to_all", "ep_dispatch", "ep_combine",
                                // "fold_restore_all_gather", "dp_grad_reduce", "edp_grad_reduce",
                                // "zero3_all_gather_fwd", "zero3_all_gather_bwd", "zero_param_all_gather"
  CollectiveKind kind = CollectiveKind::kAllReduce;
  GroupKind group = GroupKind::kDp;
  int group_size = 1;
  double bytes_per_call = 0;    // nccl-tests "S": the full buffer size
  double calls_per_step = 0;
  bool inter_node = false;      // decided from the real rank lists
  double seconds = 0;           // total per step (all calls)
  double exposed_seconds = 0;   // not hidden behind compute
};

struct TimeReport {
  double compute_seconds = 0;
  std::map<std::string, double> exposed_seconds_by_purpose;
  double exposed_communication_seconds = 0;
  double step_seconds = 0;
  double tokens_per_second = 0;
  double mfu = 0;               // model FLOPs (6 x active params x tokens + attention) / (peak x step x world)
  double model_flops_per_step = 0;
  std::vector<CollectiveCall> collectives;
};

TimeReport EstimateStepTime(const SimInput& input);

}  // namespace dsp::sim
