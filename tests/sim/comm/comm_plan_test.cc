// SPDX-License-Identifier: Apache-2.0
// PlanCollectives is the per-parallelism planners run in order, nothing more: on a plan that uses
// every dimension at once, its list is their lists concatenated.
#include "tests/sim/comm/comm_test_util.h"

namespace dsp::sim {
namespace {

using testing::CommCase;
using testing::Purposes;
using testing::Sizes;

TEST(CommPlanTest, IsTheDimensionPlannersInOrder) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3, "overlap_comm": true},
      "tensor_parallel": {"autotp_size": 2, "preset_model": "mixtral"},
      "expert_parallel": {"enabled": true, "autoep_size": 4, "preset_model": "mixtral"},
      "activation_checkpointing": {"partition_activations": true}})",
             Sizes(8, 8), "mixtral-8x7b.json");
  c.input.workload.recompute = Recompute::kFull;
  c.input.checkpointing.partition_activations = true;
  c.input.workload.grad_accum = 2;
  std::vector<std::string> expected;
  for (const auto& planner : {PlanTensorParallel, PlanPipelineParallel, PlanSequenceParallel, PlanExpertParallel,
                              PlanCheckpointPartitionGathers, PlanDataParallel}) {
    for (const std::string& p : Purposes(c.Run(planner))) expected.push_back(p);
  }
  const std::vector<PlannedCollective> all = PlanCollectives(c.input, StepTimeOptions{});
  EXPECT_EQ(Purposes(all), expected);
  // Each dimension contributed: tp, ep, the checkpoint gather and ZeRO-3's gathers.
  for (const char* purpose : {"tp_all_reduce", "ep_dispatch", "ckpt_partition_all_gather", "zero3_all_gather_fwd",
                              "fold_tp_grad_all_reduce"}) {
    EXPECT_NE(std::find(expected.begin(), expected.end(), purpose), expected.end()) << purpose;
  }
  double planned_seconds = 0, sum = 0;
  for (const PlannedCollective& p : all) planned_seconds += p.call.seconds;
  for (const auto& planner : {PlanTensorParallel, PlanExpertParallel, PlanCheckpointPartitionGathers, PlanDataParallel}) {
    for (const PlannedCollective& p : c.Run(planner)) sum += p.call.seconds;
  }
  EXPECT_DOUBLE_EQ(planned_seconds, sum);
}

TEST(CommPlanTest, NothingWithoutAPlanModelOrCluster) {
  SimInput empty;
  EXPECT_TRUE(PlanCollectives(empty, StepTimeOptions{}).empty());
}

}  // namespace
}  // namespace dsp::sim
