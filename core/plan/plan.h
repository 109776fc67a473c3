// SPDX-License-Identifier: Apache-2.0
// The plan every command shares: the config's parallel settings, the sizes they imply for a world
// size, and the exact group tables. groups, simulate, visualize and run all start here, so they can
// never disagree about who is in which group.
#pragma once

#include <cstdint>
#include <optional>

#include "core/config/parallel_config.h"
#include "core/json/document.h"
#include "core/layout/groups.h"
#include "core/layout/parallel_sizes.h"
#include "core/util/result.h"

namespace dsp {

struct PlanInputs {
  int64_t world_size = 0;                 // required, > 0
  std::optional<int64_t> gpus_per_node;   // marks groups that cross a node boundary
  int64_t pp = 1;                         // pipeline stages
  // Megatron's tensor-model-parallel size (--tensor-model-parallel-size of Megatron-LM or
  // Megatron-DeepSpeed's mpu); 0 = the config's tensor_parallel.autotp_size.
  int64_t mpu_tp = 0;
  // Context-parallel and expert-parallel sizes of the engines that take them from the command line
  // (Megatron-Core's --context-parallel-size / --expert-model-parallel-size, torchtitan's
  // parallelism.context_parallel_degree / expert_parallel_degree); 0 = the config's
  // sequence_parallel_size and expert_parallel section. Context parallelism fills the sp groups,
  // as Megatron's RankGenerator builds cp where DeepSpeed builds Ulysses.
  int64_t cp = 0;
  int64_t ep = 0;
  // Megatron-Core's --expert-tensor-parallel-size; 0 = the config's (AutoEP folding's).
  int64_t etp = 0;
  RankLayout layout = RankLayout::kDeepSpeed;
  ExpertLayout expert_layout = ExpertLayout::kAuto;
};

struct Plan {
  ParallelConfig parallel;
  ParallelSizes sizes;
  DerivedSizes derived{};
  GroupTables groups;
  std::optional<int64_t> gpus_per_node;
  int64_t zero_stage = 0;
};

// Errors name the offending setting and the values that would work.
Result<Plan> BuildPlan(const Json& config, const PlanInputs& inputs);

// The group over which ZeRO partitions a parameter family: dense parameters over the
// sequence-data-parallel group when Ulysses SP is on (else dense DP), routed experts over EDP.
GroupKind ZeroPartitionGroup(const Plan& plan, bool routed_experts);

// Ranks in a group of `kind` (every group of one kind has the same size); 1 when the plan builds
// none of that kind.
int64_t GroupSizeOf(const Plan& plan, GroupKind kind);
// `rank`'s position in its group of `kind`; 0 when the plan builds none of that kind.
int64_t PositionInGroup(const Plan& plan, GroupKind kind, int rank);

}  // namespace dsp
