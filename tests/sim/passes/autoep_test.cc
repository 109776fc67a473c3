// SPDX-License-Identifier: Apache-2.0
// AutoEP: text-in/text-out on tiny-moe (non-folded and folded), nothing to do at ep=1, every
// rejection (graph untouched), collective counts per MoE layer on Mixtral, and AutoTP leaving
// the blocks AutoEP owns replicated.
#include "sim/passes/autoep.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/graph/text_format.h"
#include "sim/graph/verifier.h"
#include "sim/passes/autotp.h"
#include "sim/passes/pipeline.h"
#include "tests/sim/passes/pass_test_util.h"

namespace dsp::sim::passes {
namespace {

using testing::BuildPreset;
using testing::CountOp;
using testing::ModuleLines;

AutoEpOptions Options(const std::string& file, int64_t ep, int64_t tp = 1) {
  return AutoEpOptions::ForModel(dsp::testing::ParsePresetOrDie(file), ep, tp);
}

graph::Graph RunOk(const std::string& file, AutoEpOptions options) {
  graph::Graph g = BuildPreset(file);
  AutoEpPass pass(std::move(options));
  Result<bool> r = pass.Run(g);
  EXPECT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.ok() && *r);
  EXPECT_TRUE(graph::VerifyGraph(g).ok());
  return g;
}

std::string RunError(const std::string& file, AutoEpOptions options) {
  graph::Graph g = BuildPreset(file);
  const std::string before = graph::PrintGraph(g);
  AutoEpPass pass(std::move(options));
  Result<bool> r = pass.Run(g);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(graph::PrintGraph(g), before) << "a rejected plan must leave the graph untouched";
  return r.ok() ? "" : r.error().message;
}

TEST(AutoEpTest, TinyMoeBlockPrintsAsExpected) {
  graph::Graph g = RunOk("tiny-moe.json", Options("tiny-moe.json", 2));
  EXPECT_EQ(ModuleLines(g, "model.layers.0.mlp"),
            R"(%layers_0_mlp_gate = router(%layers_0_post_attention_layernorm) {module="model.layers.0.mlp.gate", param="model.layers.0.mlp.gate.weight", param_shape=[E, H], shape=[B*S, E], group=""}
%layers_0_mlp_top_k = top_k(%layers_0_mlp_gate) {module="model.layers.0.mlp", param="", shape=[B*S, K], group=""}
%layers_0_mlp_dispatch = dispatch(%layers_0_post_attention_layernorm, %layers_0_mlp_top_k) {module="model.layers.0.mlp", param="", shape=[E/EP, B*S*K*EP/E, H], group="ep"}
%layers_0_mlp_experts = experts(%layers_0_mlp_dispatch) {module="model.layers.0.mlp.experts", param="model.layers.0.mlp.experts.*", param_shape=[E/EP, 3, FE, H], shape=[E/EP, B*S*K*EP/E, H], group=""}
%layers_0_mlp_combine = combine(%layers_0_mlp_experts, %layers_0_mlp_top_k) {module="model.layers.0.mlp", param="", shape=[B*S*K, H], group="ep"}
%layers_0_mlp_weighted_sum = mul(%layers_0_mlp_combine, %layers_0_mlp_top_k) {module="model.layers.0.mlp", param="", shape=[B, S, H], group=""}
)");
  EXPECT_EQ(graph::PrintNode(*g.Find("layers_0_residual_mlp")),
            R"(%layers_0_residual_mlp = add(%layers_0_residual_attn, %layers_0_mlp_weighted_sum) {module="model.layers.0", param="", shape=[B, S, H], group=""})");
}

// deepspeed/module_inject/auto_ep_layer.py (0.19.6), AutoEPMoELayer.forward: the combine is
// _AllToAllV.apply(self.ep_group, expert_output, plan.output_splits, plan.input_splits), the
// dispatch's splits reversed, so it returns the [T*K, H] routed rows; combine_from_routed then
// reshapes them to [T, K, H] and sums over K with the top-k scores.
TEST(AutoEpTest, CombineCarriesTheRoutedRowsAndTheWeightedSumFollows) {
  graph::Graph g = RunOk("mixtral-8x7b.json", Options("mixtral-8x7b.json", 4));
  const graph::Node* combine = g.Find("layers_5_block_sparse_moe_combine");
  ASSERT_NE(combine, nullptr);
  EXPECT_EQ(graph::ShapeToString(*combine->shape), "[B*S*K, H]");
  // Dispatch and combine move the same number of rows: E/EP experts x B*S*K*EP/E rows.
  const graph::Node* dispatch = g.Find("layers_5_block_sparse_moe_dispatch");
  EXPECT_EQ(graph::ShapeToString(*dispatch->shape), "[E/EP, B*S*K*EP/E, H]");
  ASSERT_EQ(combine->users.size(), 1u);
  const graph::Node* sum = combine->users.front();
  EXPECT_EQ(sum->op, graph::ops::kMul);
  EXPECT_EQ(graph::ShapeToString(*sum->shape), "[B, S, H]");
}

TEST(AutoEpTest, FoldingPartitionsDispatchAndRestoresOverTp) {
  graph::Graph g = RunOk("tiny-moe.json", Options("tiny-moe.json", 2, 2));
  const std::string lines = ModuleLines(g, "model.layers.1.mlp");
  EXPECT_NE(lines.find(R"(%layers_1_mlp_dispatch = dispatch(%layers_1_post_attention_layernorm, %layers_1_mlp_top_k) {module="model.layers.1.mlp", param="", shape=[E/EP, B*S*K*EP/E/T, H], group="ep"})"),
            std::string::npos)
      << lines;
  EXPECT_NE(lines.find(R"(%layers_1_mlp_combine = combine(%layers_1_mlp_experts, %layers_1_mlp_top_k) {module="model.layers.1.mlp", param="", shape=[B*S*K/T, H], group="ep"})"),
            std::string::npos)
      << lines;
  // ep_tp_dispatch.py restore_combined (0.19.6): _all_gather_variable_rows gathers every TP
  // peer's expert outputs, so each rank holds all [B*S*K, H] rows before the weighted sum
  // (index_add_ per slot into [T, H]).
  EXPECT_NE(lines.find(R"(%layers_1_mlp_restore = all_gather(%layers_1_mlp_combine) {module="model.layers.1.mlp", param="", shape=[B*S*K, H], group="tp"})"),
            std::string::npos)
      << lines;
  EXPECT_NE(lines.find(R"(%layers_1_mlp_weighted_sum = mul(%layers_1_mlp_restore, %layers_1_mlp_top_k) {module="model.layers.1.mlp", param="", shape=[B, S, H], group=""})"),
            std::string::npos)
      << lines;
  EXPECT_EQ(g.Find("layers_1_residual_mlp")->args[1]->name, "layers_1_mlp_weighted_sum");
}

TEST(AutoEpTest, MixtralHasOneDispatchAndCombinePerMoeLayer) {
  graph::Graph g = RunOk("mixtral-8x7b.json", Options("mixtral-8x7b.json", 4, 2));
  for (int layer : {0, 17, 31}) {
    const std::string block = "model.layers." + std::to_string(layer) + ".block_sparse_moe";
    EXPECT_EQ(CountOp(g, graph::ops::kDispatch, block), 1) << block;
    EXPECT_EQ(CountOp(g, graph::ops::kCombine, block), 1) << block;
    EXPECT_EQ(CountOp(g, graph::ops::kAllGather, block), 1) << block;  // the restore
    EXPECT_EQ(CountOp(g, graph::ops::kExperts, block), 1) << block;
  }
  EXPECT_EQ(CountOp(g, graph::ops::kDispatch, "model."), 32);
  EXPECT_EQ(CountOp(g, graph::ops::kAllToAll, "model."), 0);
}

TEST(AutoEpTest, NothingToDoAtEpOne) {
  graph::Graph g = BuildPreset("tiny-moe.json");
  const std::string before = graph::PrintGraph(g);
  AutoEpPass pass(Options("tiny-moe.json", 1));
  Result<bool> r = pass.Run(g);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(*r);
  EXPECT_EQ(graph::PrintGraph(g), before);
}

TEST(AutoEpTest, Rejections) {
  EXPECT_EQ(RunError("tiny-llama.json", Options("tiny-llama.json", 2)),
            "AutoEP found no MoE layer: the graph has no experts node (is this a dense model?)");
  EXPECT_EQ(RunError("tiny-moe.json", Options("tiny-moe.json", 3)),
            "num_experts (4) not divisible by autoep_size 3: every EP rank holds E/EP whole experts");
  EXPECT_EQ(RunError("tiny-moe.json", Options("tiny-moe.json", 8)),
            "num_experts (4) not divisible by autoep_size 8: every EP rank holds E/EP whole experts");
  EXPECT_EQ(RunError("tiny-moe.json", Options("tiny-moe.json", 1, 2)),
            "AutoEP+AutoTP folding requires autoep_size > 1 (autotp_size is 2)");
  EXPECT_EQ(RunError("tiny-moe.json", Options("tiny-moe.json", 0)), "autoep_size must be >= 1, got 0");
}

TEST(AutoEpTest, AutoTpSkipsTheBlocksAutoEpOwns) {
  const ModelSpec spec = dsp::testing::ParsePresetOrDie("mixtral-8x7b.json");
  graph::Graph g = BuildPreset("mixtral-8x7b.json");
  Pipeline pipeline;
  pipeline.Add(std::make_unique<AutoEpPass>(AutoEpOptions::ForModel(spec, 4, 2)));
  pipeline.Add(std::make_unique<AutoTpPass>(AutoTpOptions::ForModel(spec, 2)));
  Result<bool> r = pipeline.Run(g);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // Attention is tensor-parallel: one copy and one reduce per layer...
  EXPECT_EQ(CountOp(g, graph::ops::kCopyToTp, "model.layers.0.self_attn"), 1);
  EXPECT_EQ(CountOp(g, graph::ops::kReduceFromTp, "model.layers.0.self_attn"), 1);
  // ...the experts are not: the folded block's only tp collective is the restore all-gather.
  EXPECT_EQ(CountOp(g, graph::ops::kCopyToTp, "model.layers.0.block_sparse_moe"), 0);
  EXPECT_EQ(CountOp(g, graph::ops::kReduceFromTp, "model.layers.0.block_sparse_moe"), 0);
  EXPECT_EQ(graph::ShapeToString(*g.Find("layers_0_block_sparse_moe_experts")->param_shape),
            "[E/EP, 3, FE, H]");
}

}  // namespace
}  // namespace dsp::sim::passes
