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

namespace dsp::sim {
namespace {

// --ep under Megatron-Core (megatron/core/transformer/moe/token_dispatcher.py
// MoEAlltoAllTokenDispatcher: token_permutation's all_to_all of each routed token's hidden row to
// the rank of its expert, token_unpermutation's all_to_all back) and fsdp2 (torchtitan's
// expert_parallel all-to-alls): k x tokens rows of h each way, forward and backward, with no
// folding restore (that is AutoEP's).
TEST(ExpertParallelCommTest, CommandLineExpertParallelismDispatchesEveryRoutedRow) {
  PlanInputs in = testing::Sizes(8, 8, 1, 1, RankLayout::kMegatron);
  in.ep = 8;
  for (Engine engine : {Engine::kMegatronLm, Engine::kFsdp2}) {
    testing::CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", in,
                        "qwen3-30b-a3b.json", engine);
    const auto planned = c.Run(PlanExpertParallel);
    const PlannedCollective* dispatch = testing::FindPlanned(planned, "ep_dispatch");
    ASSERT_NE(dispatch, nullptr);
    EXPECT_EQ(dispatch->call.group, GroupKind::kEp);
    EXPECT_EQ(dispatch->call.group_size, 8);
    EXPECT_DOUBLE_EQ(dispatch->call.bytes_per_call, 4096.0 * 8 * 2048 * 2);  // top-8 of 2,048-wide rows, bf16
    EXPECT_DOUBLE_EQ(dispatch->calls_per_unit, 48 * 2.0);  // every MoE layer, forward and backward
    EXPECT_NE(testing::FindPlanned(planned, "ep_combine"), nullptr);
    EXPECT_EQ(testing::FindPlanned(planned, "fold_restore_all_gather"), nullptr);
  }
}

}  // namespace
}  // namespace dsp::sim
