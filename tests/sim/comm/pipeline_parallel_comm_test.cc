// SPDX-License-Identifier: Apache-2.0
// PlanPipelineParallel and PlanTiedEmbeddingGradient: what each framework's pipeline runtime
// sends. DeepSpeed's PipelineEngine sends the whole activation from every TP rank
// (runtime/pipe/engine.py _exec_send_activations); Megatron-LM sends 1/tp and all-gathers it on
// the receiver without SP (p2p_communication.py scatter_gather_tensors_in_pipeline), once per
// virtual stage (schedules.py forward_backward_pipelining_with_interleaving).
#include "tests/sim/comm/comm_test_util.h"

namespace dsp::sim {
namespace {

using testing::CommCase;
using testing::FindPlanned;
using testing::Purposes;
using testing::Sizes;

constexpr const char* kPlain = R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})";

TEST(PipelineParallelCommTest, DeepSpeedSendsTheWholeActivationEachWayPerMicroBatch) {
  CommCase c(kPlain, Sizes(8, 8, 4, 2, RankLayout::kMegatron), "llama-3-8b.json", Engine::kMegatronDeepSpeed);
  const auto planned = c.Run(PlanPipelineParallel);
  ASSERT_EQ(Purposes(planned), std::vector<std::string>{"pp_send_recv"});
  EXPECT_DOUBLE_EQ(planned[0].call.bytes_per_call, 4096.0 * 4096 * 2);
  EXPECT_DOUBLE_EQ(planned[0].calls_per_unit, 2);  // activation forward, gradient backward
}

TEST(PipelineParallelCommTest, MegatronSendsASliceAndGathersItPerVirtualStage) {
  CommCase c(kPlain, Sizes(8, 8, 4, 2, RankLayout::kMegatron), "llama-3-8b.json", Engine::kMegatronLm);
  c.input.engine.virtual_stages = 2;
  const auto planned = c.Run(PlanPipelineParallel);
  ASSERT_EQ(Purposes(planned), (std::vector<std::string>{"pp_send_recv", "pp_tp_all_gather"}));
  EXPECT_DOUBLE_EQ(planned[0].call.bytes_per_call, 4096.0 * 4096 * 2 / 2);
  EXPECT_DOUBLE_EQ(planned[0].calls_per_unit, 4);
  EXPECT_EQ(planned[1].call.group, GroupKind::kTp);
  // With sequence parallelism the activation is already split: no gather.
  c.input.engine.megatron_sp = true;
  EXPECT_EQ(Purposes(c.Run(PlanPipelineParallel)), std::vector<std::string>{"pp_send_recv"});
}

TEST(PipelineParallelCommTest, TiedEmbeddingGradientsMeetOnlyWhereTheFrameworkTiesThem) {
  const double grad_bytes = 4;
  CommCase megatron(kPlain, Sizes(8, 8, 4, 2, RankLayout::kMegatron), "llama-3.2-1b.json", Engine::kMegatronLm);
  const auto tied = megatron.Run(
      [&](const PlanContext& ctx, CollectivePlanner& p) { PlanTiedEmbeddingGradient(ctx, grad_bytes, p); });
  ASSERT_EQ(Purposes(tied), std::vector<std::string>{"pp_embedding_grad_all_reduce"});
  EXPECT_DOUBLE_EQ(tied[0].call.bytes_per_call, 128256.0 * 2048 / 2 * grad_bytes);  // V x h / tp
  EXPECT_EQ(tied[0].schedule, CommSchedule::kStepExposed);
  // Llama-3-8B does not tie its embedding.
  CommCase untied(kPlain, Sizes(8, 8, 4, 2, RankLayout::kMegatron), "llama-3-8b.json", Engine::kMegatronLm);
  EXPECT_TRUE(untied.Run([&](const PlanContext& ctx, CollectivePlanner& p) {
                      PlanTiedEmbeddingGradient(ctx, grad_bytes, p);
                    }).empty());
}

TEST(PipelineParallelCommTest, OneStagePlansNothing) {
  CommCase c(kPlain, Sizes(8, 8), "llama-3-8b.json");
  EXPECT_TRUE(c.Run(PlanPipelineParallel).empty());
}

}  // namespace
}  // namespace dsp::sim
