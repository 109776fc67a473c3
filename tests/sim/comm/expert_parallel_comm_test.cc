// SPDX-License-Identifier: Apache-2.0
// PlanExpertParallel: AutoEP's dispatch and combine (k x tokens rows of h each way, forward and
// backward) and its count exchange (DeepSpeed 0.19.6 moe/auto_ep_layer.py
// _split_plan_from_expert_counts), and under parallel folding the restore's all-gathers
// (ep_tp_dispatch.py restore_combined).
#include "sim/comm/deepep_dispatch.h"
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

// Megatron-Core core_v0.12.0 megatron/core/transformer/moe/token_dispatcher.py
// MoEAlltoAllTokenDispatcher with tp 2 (sequence parallel: s/tp = 2,048 tokens enter each rank's
// MoE layer) and the default expert-TP size etp = tp (arguments.py validate_args): the all-to-all
// carries k rows of each local token, then gather_from_sequence_parallel_region over the etp group
// all-gathers the received rows (variable split sizes), and the combine reduce-scatters them back;
// preprocess all-gathers the per-expert counts (int64) over tp_ep_group (etp x ep ranks).
TEST(ExpertParallelCommTest, MegatronAllToAllDispatcherGathersOverTheExpertTensorGroup) {
  PlanInputs in = testing::Sizes(16, 8, 1, 2, RankLayout::kMegatron);
  in.ep = 4;
  in.etp = 2;
  testing::CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", in,
                      "qwen3-30b-a3b.json", Engine::kMegatronLm);
  c.input.engine.megatron_sp = true;
  const auto planned = c.Run(PlanExpertParallel);
  const double rows = 2048.0 * 8;  // top-8 of the rank's 2,048 sequence-parallel tokens
  const PlannedCollective* dispatch = testing::FindPlanned(planned, "ep_dispatch");
  ASSERT_NE(dispatch, nullptr);
  EXPECT_EQ(dispatch->call.group_size, 4);
  EXPECT_DOUBLE_EQ(dispatch->call.bytes_per_call, rows * 2048 * 2);
  EXPECT_DOUBLE_EQ(dispatch->calls_per_unit, 48 * 2.0);
  const PlannedCollective* gather = testing::FindPlanned(planned, "etp_dispatch_all_gather");
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ(gather->call.kind, CollectiveKind::kAllGather);
  EXPECT_EQ(gather->call.group_size, 2);
  EXPECT_DOUBLE_EQ(gather->call.bytes_per_call, rows * 2 * 2048 * 2);  // the gathered output, etp x
  const PlannedCollective* scatter = testing::FindPlanned(planned, "etp_combine_reduce_scatter");
  ASSERT_NE(scatter, nullptr);
  EXPECT_EQ(scatter->call.kind, CollectiveKind::kReduceScatter);
  const PlannedCollective* counts = testing::FindPlanned(planned, "ep_split_counts");
  ASSERT_NE(counts, nullptr);
  EXPECT_EQ(counts->call.kind, CollectiveKind::kAllGather);
  EXPECT_EQ(counts->call.group_size, 8);                             // etp x ep
  EXPECT_DOUBLE_EQ(counts->call.bytes_per_call, 8.0 * 128 * 8);     // 128 int64 counts from each of 8
  EXPECT_DOUBLE_EQ(counts->calls_per_unit, 48.0);                    // forward only
  // Whole experts (etp 1): no expert-TP collectives.
  in.etp = 1;
  testing::CommCase whole(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", in,
                          "qwen3-30b-a3b.json", Engine::kMegatronLm);
  EXPECT_EQ(testing::FindPlanned(whole.Run(PlanExpertParallel), "etp_dispatch_all_gather"), nullptr);
}

// moe_layer.py: Megatron's SharedExpertMLP is a TP-split MLP (TEColumnParallelLinear,
// TERowParallelLinear), so each MoE layer with a shared expert keeps one TP pair beside attention's;
// without a shared expert (Qwen3-MoE) the MoE layer has none.
TEST(ExpertParallelCommTest, MegatronSharedExpertKeepsItsTensorParallelPair) {
  PlanInputs in = testing::Sizes(16, 8, 1, 2, RankLayout::kMegatron);
  in.ep = 4;
  in.etp = 2;
  const char* config = R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})";
  testing::CommCase shared(config, in, "qwen2-moe-a2.7b.json", Engine::kMegatronLm);
  testing::CommCase routed_only(config, in, "qwen3-30b-a3b.json", Engine::kMegatronLm);
  for (testing::CommCase* c : {&shared, &routed_only}) c->input.engine.megatron_sp = true;
  const PlannedCollective* with = testing::FindPlanned(shared.Run(PlanTensorParallel), "tp_sp_all_gather");
  const PlannedCollective* without = testing::FindPlanned(routed_only.Run(PlanTensorParallel), "tp_sp_all_gather");
  ASSERT_NE(with, nullptr);
  ASSERT_NE(without, nullptr);
  EXPECT_DOUBLE_EQ(with->calls_per_unit, 24 * 2 * 2.0);     // 24 layers: attention + shared expert, fwd + bwd
  EXPECT_DOUBLE_EQ(without->calls_per_unit, 48 * 1 * 2.0);  // 48 layers: attention only
}

// MoEAllGatherTokenDispatcher (the same file): token_permutation gathers every rank's hidden states,
// probabilities and routing map over tp_ep_group, token_unpermutation reduce-scatters the weighted
// expert outputs back; each token travels once, not once per chosen expert.
TEST(ExpertParallelCommTest, MegatronAllGatherDispatcherGathersEveryTokenOfTheTensorAndExpertGroup) {
  PlanInputs in = testing::Sizes(16, 8, 1, 2, RankLayout::kMegatron);
  in.ep = 4;
  in.etp = 2;
  testing::CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", in,
                      "qwen3-30b-a3b.json", Engine::kMegatronLm);
  c.input.engine.megatron_sp = true;
  c.input.engine.moe_dispatcher = MoeDispatcher::kAllGather;
  const auto planned = c.Run(PlanExpertParallel);
  EXPECT_EQ(testing::FindPlanned(planned, "ep_dispatch"), nullptr);
  const double gathered = 2048.0 * 8;  // 2,048 tokens from each of etp x ep = 8 ranks
  const PlannedCollective* hidden = testing::FindPlanned(planned, "moe_allgather_dispatch");
  ASSERT_NE(hidden, nullptr);
  EXPECT_EQ(hidden->call.group_size, 8);
  EXPECT_DOUBLE_EQ(hidden->call.bytes_per_call, gathered * 2048 * 2);
  EXPECT_DOUBLE_EQ(hidden->calls_per_unit, 48 * 2.0);  // its backward is a reduce-scatter of the same size
  const PlannedCollective* map = testing::FindPlanned(planned, "moe_allgather_routing_map");
  ASSERT_NE(map, nullptr);
  EXPECT_DOUBLE_EQ(map->call.bytes_per_call, gathered * 128);  // one bool per expert, no backward
  EXPECT_DOUBLE_EQ(map->calls_per_unit, 48.0);
  const PlannedCollective* combine = testing::FindPlanned(planned, "moe_reduce_scatter_combine");
  ASSERT_NE(combine, nullptr);
  EXPECT_EQ(combine->call.kind, CollectiveKind::kReduceScatter);
  EXPECT_DOUBLE_EQ(combine->call.bytes_per_call, gathered * 2048 * 2);
}

}  // namespace
}  // namespace dsp::sim

namespace dsp::sim {
namespace {

// fsdp2 with --te-modules runs NeMo AutoModel's DeepEP experts (GroupedExpertsDeepEP, fused_a2a.py):
// one row per destination rank, not one per routed assignment. Under --fake-balanced-gate a
// Qwen3-30B-A3B token's 8 consecutive experts sit on one of EP 8's ranks (16 experts each): 1 row
// a token where the plain all-to-all sends 8.
TEST(ExpertParallelCommTest, DeepEpSendsOneRowPerDestinationRank) {
  PlanInputs in = testing::Sizes(8, 8, 1, 1, RankLayout::kMegatron);
  in.ep = 8;
  testing::CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", in,
                      "qwen3-30b-a3b.json", Engine::kFsdp2);
  c.input.engine.te_modules = true;
  c.input.engine.fake_balanced_gate = true;
  auto planned = c.Run(PlanExpertParallel);
  ASSERT_EQ(testing::Purposes(planned), (std::vector<std::string>{"ep_dispatch", "ep_combine", "ep_split_counts"}));
  EXPECT_DOUBLE_EQ(planned[0].call.bytes_per_call, 4096.0 * 1 * 2048 * 2);
  EXPECT_DOUBLE_EQ(planned[0].calls_per_unit, 48 * 2.0);
  EXPECT_DOUBLE_EQ(planned[0].call.seconds,
                   48 * 2.0 * CollectiveSeconds(CollectiveKind::kAllToAll, 8, 4096.0 * 2048 * 2, c.cluster.intra_node));
  // A learned router spreads the 8 experts over 8 (1 - C(112, 8) / C(128, 8)) ranks, about 5.3.
  c.input.engine.fake_balanced_gate = false;
  planned = c.Run(PlanExpertParallel);
  double miss = 1.0;
  for (int i = 0; i < 8; ++i) miss *= (112.0 - i) / (128.0 - i);
  EXPECT_NEAR(planned[0].call.bytes_per_call, 4096.0 * 8 * (1 - miss) * 2048 * 2, 1.0);
}

// Every EP group dispatches at once: the slowest sets the pace. EP 5 on nodes of 8 puts the first
// group inside a node and the second across two (5, 6, 7 | 8, 9): the dispatch is priced as the
// second's RDMA, not as the first's NVLink all-to-all.
TEST(ExpertParallelCommTest, DeepEpIsPricedOnTheSlowestGroup) {
  PlanInputs in = testing::Sizes(10, 8, 1, 1, RankLayout::kMegatron);
  in.ep = 5;
  testing::CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", in,
                      "qwen2-moe-a2.7b.json", Engine::kFsdp2);
  c.input.engine.te_modules = true;
  const std::vector<RankGroup>& groups = c.plan.groups.groups.at(GroupKind::kEp);
  ASSERT_EQ(groups.size(), 2u);
  auto price = [&](const RankGroup& g) {
    const GroupLinkInfo link = DescribeGroup(c.cluster, g, CollectiveKind::kAllToAll);
    const DispatchFanout f = DeepEpFanout(c.model.num_experts, c.model.num_experts_per_tok, g, 8, MoeRouting::kUniform);
    return DeepEpCallSeconds(f, 4096, c.model.hidden_size * 2.0, link, c.cluster.intra_node, c.cluster.inter_node);
  };
  const double inside = price(groups[0]), across = price(groups[1]);
  ASSERT_GT(across, inside);
  const PlannedCollective* dispatch = testing::FindPlanned(c.Run(PlanExpertParallel), "ep_dispatch");
  ASSERT_NE(dispatch, nullptr);
  EXPECT_DOUBLE_EQ(dispatch->call.seconds / dispatch->call.calls_per_step, across);
}

}  // namespace
}  // namespace dsp::sim
