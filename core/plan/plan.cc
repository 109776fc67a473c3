// SPDX-License-Identifier: Apache-2.0
#include "core/plan/plan.h"

#include <limits>

namespace dsp {
namespace {

Result<int> ToInt(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max()) {
    return Error{std::string(what) + " " + std::to_string(v) + " is out of range"};
  }
  return static_cast<int>(v);
}

}  // namespace

Result<Plan> BuildPlan(const Json& config, const PlanInputs& inputs) {
  if (inputs.world_size <= 0) return Error{"a world size is needed: pass --world-size N or --nodes N --gpus-per-node G"};
  if (inputs.world_size > (1 << 20)) return Error{"world size " + std::to_string(inputs.world_size) + " is larger than ds-plan supports (1048576)"};
  Plan plan;
  ConfigView view(config);
  plan.parallel = ReadParallelConfig(view);
  const ParallelConfig& pc = plan.parallel;
  plan.zero_stage = pc.zero_stage.or_default(0);
  plan.gpus_per_node = inputs.gpus_per_node;

  if (inputs.mpu_tp > 0 && pc.tp > 1) {
    return Error{"the config sets tensor_parallel.autotp_size " + std::to_string(pc.tp) +
                 " and Megatron's tensor-model-parallel size is " + std::to_string(inputs.mpu_tp) +
                 ": a model is split by one of them, not both"};
  }
  const int64_t tp = inputs.mpu_tp > 0 ? inputs.mpu_tp : pc.tp;
  for (auto [flag, value, key, set] : {std::tuple{"--cp", inputs.cp, "sequence_parallel_size", pc.sp > 1},
                                       std::tuple{"--ep", inputs.ep, "expert_parallel", pc.autoep_enabled}}) {
    if (value > 0 && set) {
      return Error{std::string("the config sets ") + key + " and the command line gives " + flag + " " +
                   std::to_string(value) + ": give the size in one place"};
    }
  }
  const int64_t sp = inputs.cp > 0 ? inputs.cp : pc.sp;
  const int64_t ep = inputs.ep > 0 ? inputs.ep : pc.ep;
  ParallelSizes& s = plan.sizes;
  for (auto [value, name, dest] : {std::tuple{inputs.world_size, "world size", &s.world},
                                   std::tuple{tp, "tensor parallel size", &s.tp},
                                   std::tuple{sp, inputs.cp > 0 ? "context parallel size" : "sequence_parallel_size", &s.sp},
                                   std::tuple{inputs.pp, "pipeline size", &s.pp},
                                   std::tuple{ep, inputs.ep > 0 ? "expert parallel size" : "expert_parallel.autoep_size", &s.ep},
                                   std::tuple{inputs.etp > 0 ? inputs.etp : pc.etp,
                                              inputs.etp > 0 ? "expert tensor parallel size"
                                                             : "expert_parallel.expert_tensor_parallel_size",
                                              &s.etp}}) {
    auto v = ToInt(value, name);
    if (!v.ok()) return v.error();
    *dest = *v;
  }
  s.expert_parallel = pc.autoep_enabled || inputs.ep > 0;
  s.data_before_expert = pc.data_before_expert;

  auto derived = Derive(s);
  if (!derived.ok()) {
    if (inputs.cp > 0 || inputs.ep > 0) {
      return Error{derived.error().message + " (--cp, --ep and --etp stand for sequence_parallel_size, "
                   "expert_parallel.autoep_size and expert_tensor_parallel_size here" +
                   (inputs.etp > 1 ? std::string("; --etp defaults to --tp under megatron-lm: try --etp 1") : "") +
                   ")"};
    }
    return derived.error();
  }
  plan.derived = *derived;
  auto groups = BuildGroupTables(s, inputs.layout, inputs.expert_layout);
  if (!groups.ok()) return groups.error();
  plan.groups = std::move(groups).value();
  return plan;
}

GroupKind ZeroPartitionGroup(const Plan& plan, bool routed_experts) {
  if (routed_experts && plan.groups.groups.contains(GroupKind::kEdp)) return GroupKind::kEdp;
  if (plan.groups.groups.contains(GroupKind::kSpDp)) return GroupKind::kSpDp;
  return GroupKind::kDp;
}

int64_t GroupSizeOf(const Plan& plan, GroupKind kind) {
  auto it = plan.groups.groups.find(kind);
  if (it == plan.groups.groups.end() || it->second.empty()) return 1;
  return static_cast<int64_t>(it->second.front().size());
}

int64_t PositionInGroup(const Plan& plan, GroupKind kind, int rank) {
  auto it = plan.groups.groups.find(kind);
  if (it == plan.groups.groups.end()) return 0;
  for (const auto& g : it->second) {
    for (size_t i = 0; i < g.size(); ++i) {
      if (g[i] == rank) return static_cast<int64_t>(i);
    }
  }
  return 0;
}

}  // namespace dsp
