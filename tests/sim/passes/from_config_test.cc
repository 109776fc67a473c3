// SPDX-License-Identifier: Apache-2.0
// Which passes a config implies (parallel sections and compile.passes), --passes forcing in
// registry order, pass-list parsing, and the options the passes receive (group sizes from the
// plan, folding, per-rank heads for AutoSP after AutoTP).
#include "sim/passes/from_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/graph/builder.h"
#include "sim/graph/text_format.h"
#include "tests/sim/passes/pass_test_util.h"

namespace dsp::sim::passes {
namespace {

using testing::CountOp;

std::vector<std::string> Names(const Pipeline& p) {
  std::vector<std::string> out;
  for (const auto& pass : p.passes()) out.emplace_back(pass->name());
  return out;
}

std::vector<std::string> Chosen(const std::string& config_text,
                                std::optional<std::vector<std::string>> forced = std::nullopt) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("tiny-moe.json");
  const Json config = Json::parse(config_text);
  PipelineRequest r{.model = &model, .config = &config, .forced = std::move(forced)};
  auto p = PipelineForConfig(r);
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() ? Names(*p) : std::vector<std::string>{};
}

using V = std::vector<std::string>;

// The zero pass runs at every stage: ZeRO-0's engine all-reduces gradients too (engine.py
// allreduce_gradients), and a data-parallel plan without that all-reduce is a wrong answer.
TEST(PipelineForConfigTest, ParallelSectionsPickThePasses) {
  EXPECT_EQ(Chosen(R"({})"), V{"zero"});
  EXPECT_EQ(Chosen(R"({"zero_optimization": {"stage": 0}})"), V{"zero"});
  EXPECT_EQ(Chosen(R"({"zero_optimization": {"stage": 2}})"), V{"zero"});
  EXPECT_EQ(Chosen(R"({"tensor_parallel": {"autotp_size": 2}})"), (V{"autotp", "zero"}));
  EXPECT_EQ(Chosen(R"({"tensor_parallel": {"autotp_size": 1}})"), V{"zero"});
  EXPECT_EQ(Chosen(R"({"sequence_parallel_size": 2, "zero_optimization": {"stage": 1}})"),
            (V{"autosp", "zero"}));
  EXPECT_EQ(Chosen(R"({"expert_parallel": {"enabled": true, "autoep_size": 2},
                       "tensor_parallel": {"autotp_size": 2}, "zero_optimization": {"stage": 1}})"),
            (V{"autoep", "autotp", "zero"}));
  EXPECT_EQ(Chosen(R"({"expert_parallel": {"enabled": false, "autoep_size": 2}})"), V{"zero"});
}

TEST(PipelineForConfigTest, CompilePassesAddTheirPasses) {
  EXPECT_EQ(Chosen(R"({"compile": {"deepcompile": true, "passes": ["z3"]}})"), V{"zero"});
  EXPECT_EQ(Chosen(R"({"compile": {"deepcompile": true, "passes": ["z1"]}})"), V{"zero"});
  EXPECT_EQ(Chosen(R"({"compile": {"deepcompile": true, "passes": ["autosp"]}})"), (V{"autosp", "zero"}));
  EXPECT_EQ(Chosen(R"({"compile": {"deepcompile": true, "passes": ["autotp"]}})"), (V{"autotp", "zero"}));
}

TEST(PipelineForConfigTest, ForcedPassesRunInRegistryOrder) {
  EXPECT_EQ(Chosen(R"({"zero_optimization": {"stage": 3}})", V{"zero", "autoep", "zero"}),
            (V{"autoep", "zero"}));
  EXPECT_EQ(Chosen(R"({"tensor_parallel": {"autotp_size": 2}})", V{"autosp"}), V{"autosp"});
}

TEST(PipelineForConfigTest, ParsePassList) {
  auto ok = ParsePassList(" zero, autotp ,zero");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, (V{"zero", "autotp"}));
  auto unknown = ParsePassList("autotp,z3");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "unknown pass 'z3' (known: autoep, autotp, autosp, zero)");
  auto empty = ParsePassList(" , ");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message, "the pass list is empty (known passes: see `ds-plan passes`)");
}

TEST(PipelineForConfigTest, GroupSizesComeFromThePlan) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  const Json config = Json::parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": 2},
                                      "tensor_parallel": {"autotp_size": 2}})");
  auto run = [&](int64_t world) {
    PlanInputs inputs;
    inputs.world_size = world;
    auto plan = BuildPlan(config, inputs);
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    PipelineRequest r{.model = &model, .config = &config, .plan = &*plan};
    auto pipeline = PipelineForConfig(r);
    EXPECT_TRUE(pipeline.ok());
    auto g = graph::BuildModelGraph(model);
    EXPECT_TRUE(pipeline->Run(*g).ok());
    return std::move(g).value();
  };
  // World 2 = one tp group: dp is 1, nothing to reduce over dp; tp collectives stay.
  graph::Graph alone = run(2);
  EXPECT_EQ(CountOp(alone, graph::ops::kReduceScatter, ""), 0);
  EXPECT_EQ(CountOp(alone, graph::ops::kCopyToTp, ""), 4);
  graph::Graph four = run(4);
  EXPECT_EQ(CountOp(four, graph::ops::kReduceScatter, ""), 21);
  EXPECT_EQ(four.Find("reduce_grad_layers_0_self_attn_q_proj_weight")->group, "dp");
  EXPECT_EQ(graph::ShapeToString(*four.Find("reduce_grad_layers_0_self_attn_q_proj_weight")->shape),
            "[N*D*H/T/DP]");
}

TEST(PipelineForConfigTest, UlyssesReducesOverTheSequenceDataParallelGroup) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  const Json config = Json::parse(R"({"sequence_parallel_size": 2, "zero_optimization": {"stage": 1}})");
  PipelineRequest r{.model = &model, .config = &config};
  auto pipeline = PipelineForConfig(r);
  ASSERT_TRUE(pipeline.ok());
  auto g = graph::BuildModelGraph(model);
  ASSERT_TRUE(pipeline->Run(*g).ok());
  EXPECT_EQ(CountOp(*g, graph::ops::kAllToAll, "model.layers.1"), 4);
  EXPECT_EQ(g->Find("reduce_grad_norm_weight")->group, "sp_dp");
}

}  // namespace
}  // namespace dsp::sim::passes
