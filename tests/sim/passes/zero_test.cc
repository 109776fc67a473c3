// SPDX-License-Identifier: Apache-2.0
// ZeRO pass: stage 3 gather/release around every parameter's readers, gradient reductions per
// family (all_reduce at 0/1, reduce_scatter at 2/3), the persistence threshold, the edp family
// under AutoEP, the folded tp AVERAGE, nothing to do without peers, and every rejection.
#include "sim/passes/zero.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/graph/builder.h"
#include "sim/graph/text_format.h"
#include "sim/graph/verifier.h"
#include "sim/passes/autoep.h"
#include "sim/passes/autosp.h"
#include "sim/passes/autotp.h"
#include "sim/passes/from_config.h"
#include "sim/passes/pipeline.h"
#include "tests/sim/passes/pass_test_util.h"

namespace dsp::sim::passes {
namespace {

using testing::BuildPreset;
using testing::CountOp;
using testing::ModuleLines;

ZeroOptions Stage(int stage) {
  ZeroOptions o;
  o.stage = stage;
  o.dense = {"dp", "DP", 4};
  return o;
}

graph::Graph RunOk(graph::Graph g, ZeroOptions options) {
  ZeroPass pass(std::move(options));
  Result<bool> r = pass.Run(g);
  EXPECT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.ok() && *r);
  Status v = graph::VerifyGraph(g);
  EXPECT_TRUE(v.ok()) << v.error().message;
  return g;
}

int CountAll(const graph::Graph& g, std::string_view op) { return CountOp(g, op, ""); }

// tiny-llama has 2 layers of 9 parameters, the embedding, the final norm and an untied lm_head.
constexpr int kTinyLlamaParams = 2 * 9 + 3;

TEST(ZeroPassTest, Stage3GathersBeforeFirstUseAndReleasesAfterLast) {
  graph::Graph g = RunOk(BuildPreset("tiny-llama.json"), Stage(3));
  EXPECT_EQ(CountAll(g, graph::ops::kAllGather), kTinyLlamaParams);
  EXPECT_EQ(CountAll(g, graph::ops::kRelease), kTinyLlamaParams);
  EXPECT_EQ(CountAll(g, graph::ops::kReduceScatter), kTinyLlamaParams);
  EXPECT_EQ(CountAll(g, graph::ops::kAllReduce), 0);
  EXPECT_EQ(ModuleLines(g, "model.layers.0.self_attn.q_proj"),
            R"(%allgather_layers_0_self_attn_q_proj_weight = all_gather() {module="model.layers.0.self_attn.q_proj", param="model.layers.0.self_attn.q_proj.weight", param_shape=[N*D*H/DP], shape=[N*D, H], group="dp"}
%layers_0_self_attn_q_proj = linear(%layers_0_input_layernorm, %allgather_layers_0_self_attn_q_proj_weight) {module="model.layers.0.self_attn.q_proj", param="model.layers.0.self_attn.q_proj.weight", param_shape=[N*D, H], shape=[B, S, N*D], group=""}
%reduce_grad_layers_0_self_attn_q_proj_weight = reduce_scatter(%layers_0_self_attn_q_proj) {module="model.layers.0.self_attn.q_proj", param="model.layers.0.self_attn.q_proj.weight", param_shape=[N*D, H], shape=[N*D*H/DP], group="dp"}
%release_layers_0_self_attn_q_proj_weight = release(%allgather_layers_0_self_attn_q_proj_weight) {module="model.layers.0.self_attn.q_proj", param="model.layers.0.self_attn.q_proj.weight", shape=[], group=""}
)");
  // The gather comes right before the reader, the release right after it.
  graph::Node* q = g.Find("layers_0_self_attn_q_proj");
  EXPECT_EQ(q->prev()->name, "allgather_layers_0_self_attn_q_proj_weight");
  EXPECT_EQ(q->args.back()->name, "allgather_layers_0_self_attn_q_proj_weight");
}

TEST(ZeroPassTest, TiedEmbeddingIsGatheredOnceAndReleasedAfterTheHead) {
  ModelSpec spec = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  spec.tie_word_embeddings = true;
  auto built = graph::BuildModelGraph(spec);
  ASSERT_TRUE(built.ok());
  graph::Graph g = RunOk(std::move(built).value(), Stage(3));
  graph::Node* gather = g.Find("allgather_embed_tokens_weight");
  ASSERT_NE(gather, nullptr);
  ASSERT_EQ(gather->users.size(), 3u);  // embedding, lm_head, release
  EXPECT_EQ(gather->users[0]->name, "embed_tokens");
  EXPECT_EQ(gather->users[1]->name, "lm_head");
  EXPECT_EQ(gather->users[2]->op, graph::ops::kRelease);
  EXPECT_EQ(g.Find("lm_head")->next()->op, graph::ops::kRelease);
  EXPECT_EQ(CountAll(g, graph::ops::kAllGather), kTinyLlamaParams - 1);
}

TEST(ZeroPassTest, Stages0And1AllReduceAndStage2ReduceScatters) {
  for (int stage : {0, 1}) {
    graph::Graph g = RunOk(BuildPreset("tiny-llama.json"), Stage(stage));
    EXPECT_EQ(CountAll(g, graph::ops::kAllReduce), kTinyLlamaParams) << stage;
    EXPECT_EQ(CountAll(g, graph::ops::kAllGather), 0) << stage;
    EXPECT_EQ(graph::PrintNode(*g.Find("reduce_grad_norm_weight")),
              R"(%reduce_grad_norm_weight = all_reduce(%norm) {module="model.norm", param="model.norm.weight", param_shape=[H], shape=[H], group="dp"})");
  }
  graph::Graph g = RunOk(BuildPreset("tiny-llama.json"), Stage(2));
  EXPECT_EQ(CountAll(g, graph::ops::kReduceScatter), kTinyLlamaParams);
  EXPECT_EQ(CountAll(g, graph::ops::kAllGather), 0);
  EXPECT_EQ(graph::ShapeToString(*g.Find("reduce_grad_lm_head_weight")->shape), "[V*H/DP]");
}

TEST(ZeroPassTest, PersistentParametersAreNotGathered) {
  const ModelSpec spec = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  ZeroOptions o = Stage(3);
  o.persistence_threshold = 1000;  // the norms (H = 64 elements) stay whole; matrices do not
  o.values = graph::ModelSymbolValues(spec, 1, 1);
  graph::Graph g = RunOk(BuildPreset("tiny-llama.json"), o);
  EXPECT_EQ(CountAll(g, graph::ops::kAllGather), kTinyLlamaParams - 5);  // 2x2 layer norms + norm
  EXPECT_EQ(g.Find("allgather_norm_weight"), nullptr);
  EXPECT_NE(g.Find("allgather_lm_head_weight"), nullptr);
  EXPECT_NE(g.Find("reduce_grad_norm_weight"), nullptr);  // its gradient is still reduced
}

TEST(ZeroPassTest, RoutedExpertsReduceOverEdpAfterAutoEp) {
  const ModelSpec spec = dsp::testing::ParsePresetOrDie("tiny-moe.json");
  graph::Graph g = BuildPreset("tiny-moe.json");
  ZeroOptions o = Stage(2);
  o.experts = ZeroGroup{"edp", "EDP", 2};
  Pipeline pipeline;
  pipeline.Add(std::make_unique<AutoEpPass>(AutoEpOptions::ForModel(spec, 2, 1)));
  pipeline.Add(std::make_unique<ZeroPass>(o));
  ASSERT_TRUE(pipeline.Run(g).ok());
  EXPECT_EQ(graph::PrintNode(*g.Find("reduce_grad_layers_0_mlp_experts")),
            R"(%reduce_grad_layers_0_mlp_experts = reduce_scatter(%layers_0_mlp_experts) {module="model.layers.0.mlp.experts", param="model.layers.0.mlp.experts.*", param_shape=[E/EP, 3, FE, H], shape=[3*E*FE*H/EP/EDP], group="edp"})");
  EXPECT_EQ(g.Find("reduce_grad_layers_0_mlp_gate_weight")->group, "dp");  // the router is dense
}

TEST(ZeroPassTest, FoldingAveragesReplicatedGradientsOverTpFirst) {
  const ModelSpec spec = dsp::testing::ParsePresetOrDie("mixtral-8x7b.json");
  graph::Graph g = BuildPreset("mixtral-8x7b.json");
  ZeroOptions o = Stage(1);
  o.experts = ZeroGroup{"edp", "EDP", 2};
  o.fold_tp = 2;
  Pipeline pipeline;
  pipeline.Add(std::make_unique<AutoEpPass>(AutoEpOptions::ForModel(spec, 4, 2)));
  pipeline.Add(std::make_unique<AutoTpPass>(AutoTpOptions::ForModel(spec, 2)));
  pipeline.Add(std::make_unique<ZeroPass>(o));
  Result<bool> r = pipeline.Run(g);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // Router and norms: AVERAGE over tp, then the dp reduction reads the averaged gradient.
  graph::Node* router = g.Find("reduce_grad_layers_0_block_sparse_moe_gate_weight");
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->args[0]->name, "tp_average_grad_layers_0_block_sparse_moe_gate_weight");
  EXPECT_EQ(router->args[0]->group, "tp");
  EXPECT_NE(g.Find("tp_average_grad_layers_0_input_layernorm_weight"), nullptr);
  // TP-sharded attention weights and the routed experts get no tp collective.
  EXPECT_EQ(g.Find("tp_average_grad_layers_0_self_attn_q_proj_weight"), nullptr);
  EXPECT_EQ(g.Find("tp_average_grad_layers_0_block_sparse_moe_experts"), nullptr);
  EXPECT_EQ(g.Find("reduce_grad_layers_0_block_sparse_moe_experts")->group, "edp");
}

TEST(ZeroPassTest, GradientReductionsSurviveLaterDeadCodeElimination) {
  const ModelSpec spec = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  graph::Graph g = BuildPreset("tiny-llama.json");
  Pipeline pipeline;
  pipeline.Add(std::make_unique<ZeroPass>(Stage(3)));
  pipeline.Add(std::make_unique<AutoSpPass>(AutoSpOptions::ForModel(spec, 2)));  // runs DCE
  ASSERT_TRUE(pipeline.Run(g).ok());
  EXPECT_EQ(CountAll(g, graph::ops::kReduceScatter), kTinyLlamaParams);
  EXPECT_EQ(CountAll(g, graph::ops::kRelease), kTinyLlamaParams);
}

TEST(ZeroPassTest, NothingToDoWithoutPeers) {
  graph::Graph g = BuildPreset("tiny-llama.json");
  const std::string before = graph::PrintGraph(g);
  ZeroOptions o = Stage(3);
  o.dense.size = 1;
  ZeroPass pass(o);
  Result<bool> r = pass.Run(g);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(*r);
  EXPECT_EQ(graph::PrintGraph(g), before);
}

TEST(ZeroPassTest, UnknownGroupSizeAssumesPeers) {
  ZeroOptions o = Stage(2);
  o.dense.size = 0;
  graph::Graph g = RunOk(BuildPreset("tiny-llama.json"), o);
  EXPECT_EQ(CountAll(g, graph::ops::kReduceScatter), kTinyLlamaParams);
}

TEST(ZeroPassTest, Rejections) {
  graph::Graph g = BuildPreset("tiny-llama.json");
  const std::string before = graph::PrintGraph(g);
  ZeroPass bad_stage(Stage(4));
  Result<bool> r = bad_stage.Run(g);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "zero_optimization.stage must be 0, 1, 2 or 3, got 4");
  EXPECT_EQ(graph::PrintGraph(g), before);

  ZeroPass once(Stage(3));
  ASSERT_TRUE(once.Run(g).ok());
  const std::string after = graph::PrintGraph(g);
  ZeroPass twice(Stage(3));
  r = twice.Run(g);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "%embed_tokens already reads the gathered %allgather_embed_tokens_weight: the zero "
            "pass ran twice");
  EXPECT_EQ(graph::PrintGraph(g), after);

  auto parsed = graph::ParseGraph(
      "%x = placeholder() {shape=[B, H]}\n"
      "%y = linear(%x) {param=\"w\", shape=[B, H]}\n"
      "%output = output(%y)\n");
  ASSERT_TRUE(parsed.ok());
  ZeroPass no_shape(Stage(1));
  r = no_shape.Run(*parsed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "%y: reads w but has no param_shape");
}

}  // namespace
}  // namespace dsp::sim::passes

namespace dsp::sim::passes {
namespace {

// DeepCompile's ZeRO-1/2 (init_z1_and_2, 0.19.6): gradients are all-reduced (z1.cpp / z2.cpp
// ncclAllReduce): from a config, through PipelineForConfig, as visualize and the schedule build it.
TEST(ZeroPassTest, DeepCompileAllReducesAtStageTwo) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  auto run = [&](const char* json) {
    const Json config = Json::parse(json);
    PlanInputs inputs;
    inputs.world_size = 4;
    auto plan = BuildPlan(config, inputs);
    EXPECT_TRUE(plan.ok());
    auto pipeline = PipelineForConfig({.model = &model, .config = &config, .plan = &*plan});
    EXPECT_TRUE(pipeline.ok());
    auto g = graph::BuildModelGraph(model);
    EXPECT_TRUE(pipeline->Run(*g).ok());
    return std::move(g).value();
  };
  const graph::Graph eager = run(R"({"train_batch_size": 4, "zero_optimization": {"stage": 2}})");
  const graph::Graph compiled =
      run(R"({"train_batch_size": 4, "zero_optimization": {"stage": 2}, "compile": {"deepcompile": true}})");
  EXPECT_EQ(CountAll(eager, graph::ops::kReduceScatter), kTinyLlamaParams);
  EXPECT_EQ(CountAll(compiled, graph::ops::kReduceScatter), 0);
  EXPECT_EQ(CountAll(compiled, graph::ops::kAllReduce), kTinyLlamaParams);
}

}  // namespace
}  // namespace dsp::sim::passes
