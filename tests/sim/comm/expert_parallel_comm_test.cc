// SPDX-License-Identifier: Apache-2.0
// PlanExpertParallel: AutoEP's dispatch and combine (k x tokens rows of h each way, forward and
// backward) and its count exchange (DeepSpeed 0.19.6 moe/auto_ep_layer.py
// _split_plan_from_expert_counts), and under parallel folding the restore's all-gathers
// (ep_tp_dispatch.py restore_combined).
#include "tests/sim/comm/comm_test_util.h"

namespace dsp::sim {
namespace {

using testing::CommCase;
using testing::FindPlanned;
using testing::Purposes;
using testing::Sizes;

TEST(ExpertParallelCommTest, DispatchAndCombineCarryTopKRowsPerToken) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "expert_parallel": {"enabled": true, "autoep_size": 8, "preset_model": "qwen3_moe"}})",
             Sizes(8, 8), "qwen3-30b-a3b.json");
  const auto planned = c.Run(PlanExpertParallel);
  ASSERT_EQ(Purposes(planned), (std::vector<std::string>{"ep_dispatch", "ep_combine", "ep_split_counts"}));
  EXPECT_DOUBLE_EQ(planned[0].call.bytes_per_call, 4096.0 * 8 * 2048 * 2);  // tokens x k x h bf16
  EXPECT_DOUBLE_EQ(planned[0].calls_per_unit, 48 * 2.0);                   // every MoE layer, fwd + bwd
  EXPECT_DOUBLE_EQ(planned[2].call.bytes_per_call, 4.0 * 128);              // int32 counts per expert
  EXPECT_DOUBLE_EQ(planned[2].calls_per_unit, 48);                          // forward only
}

TEST(ExpertParallelCommTest, FoldingSplitsTheRowsOverTpAndRestoresThem) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "tensor_parallel": {"autotp_size": 2, "preset_model": "mixtral"},
      "expert_parallel": {"enabled": true, "autoep_size": 4, "preset_model": "mixtral"}})",
             Sizes(8, 8), "mixtral-8x7b.json");
  const auto planned = c.Run(PlanExpertParallel);
  EXPECT_EQ(Purposes(planned),
            (std::vector<std::string>{"ep_dispatch", "ep_combine", "ep_split_counts", "fold_restore_all_gather",
                                      "fold_restore_backward_all_reduce", "fold_restore_count_all_gather",
                                      "fold_restore_index_all_gather"}));
  EXPECT_DOUBLE_EQ(FindPlanned(planned, "ep_dispatch")->call.bytes_per_call, 4096.0 * 2 / 2 * 4096 * 2);
  EXPECT_DOUBLE_EQ(FindPlanned(planned, "fold_restore_all_gather")->call.bytes_per_call, 4096.0 * 2 * 4096 * 2);
}

TEST(ExpertParallelCommTest, ExpertsWithoutAutoEpPlanNothing) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", Sizes(8, 8),
             "qwen3-30b-a3b.json");
  EXPECT_TRUE(c.Run(PlanExpertParallel).empty());
}

}  // namespace
}  // namespace dsp::sim
