// SPDX-License-Identifier: Apache-2.0
// What the picture says about each collective's two halves (--direction), the weight and gradient
// shapes on parameter nodes and reduction edges, and --diff's marks against the graph as built.
#include <gtest/gtest.h>

#include <string>

#include "sim/graph/builder.h"
#include "sim/graph/graph.h"
#include "sim/passes/autotp.h"
#include "sim/passes/zero.h"
#include "sim/render/graphviz.h"
#include "tests/sim/render/render_test_util.h"

namespace dsp::sim::render {
namespace {

// tiny-llama after AutoTP (tp 2) and ZeRO-3 over dp with no persistence: every kind of tp
// collective, gathers, releases and gradient reductions.
graph::Graph Rewritten(const ModelSpec& model) {
  auto g = graph::BuildModelGraph(model);
  EXPECT_TRUE(g.ok());
  EXPECT_TRUE(passes::AutoTpPass(passes::AutoTpOptions::ForModel(model, 2)).Run(*g).ok());
  passes::ZeroOptions zero;
  zero.stage = 3;
  EXPECT_TRUE(passes::ZeroPass(zero).Run(*g).ok());
  return std::move(g).value();
}

std::string Dot(const graph::Graph& g, RenderOptions options) {
  options.layers = LayerRange{0, 0};
  auto dot = RenderGraph(g, options, Format::kDot);
  EXPECT_TRUE(dot.ok()) << dot.error().message;
  return dot.ok() ? *dot : "";
}

bool Drawn(const std::string& dot, const std::string& node) {
  return dot.find("\t" + node + "\t[") != std::string::npos || dot.find("\t\t" + node + "\t[") != std::string::npos ||
         dot.find(node + "\t[label=") != std::string::npos;
}

class GraphvizDirectionTest : public ::testing::Test {
 protected:
  const ModelSpec model_ = testing::LoadSampleModel("samples/models/tiny-llama.json");
  const graph::Graph g_ = Rewritten(model_);
};

// graph::ActionsOf: Megatron's f is the identity forward and an all-reduce backward, g the
// reverse (module_inject/layers.py ColumnParallel / RowParallel); an all-to-all's backward is
// an all-to-all; a ZeRO-3 gather runs again before backward; gradient reductions are backward
// only; AutoEP's folded restore all-reduces its gradient (ep_tp_dispatch.py
// _AllGatherVariableRows.backward).
TEST_F(GraphvizDirectionTest, EachCollectiveSaysWhatItDoesInEachDirection) {
  auto actions = [&](const char* name) {
    const graph::Node* n = g_.Find(name);
    EXPECT_NE(n, nullptr) << name;
    const graph::CollectiveActions a = graph::ActionsOf(*n);
    return a.forward + "|" + a.backward;
  };
  EXPECT_EQ(actions("layers_0_self_attn_q_proj_copy_to_tp"), "|all_reduce");
  EXPECT_EQ(actions("layers_0_self_attn_o_proj_reduce_from_tp"), "all_reduce|");
  EXPECT_EQ(actions("allgather_layers_0_self_attn_q_proj_weight"), "all_gather|all_gather");
  EXPECT_EQ(actions("reduce_grad_layers_0_self_attn_q_proj_weight"), "|reduce_scatter");
  graph::Graph restore;
  graph::Node* x = restore.Append({.name = "x", .op = "placeholder", .shape = graph::Shape{4}});
  graph::Node* gathered = restore.Append({.name = "r", .op = "all_gather", .args = {x}, .shape = graph::Shape{8}, .group = "tp"});
  EXPECT_EQ(graph::ActionsOf(*gathered).backward, "all_reduce");
  EXPECT_EQ(graph::ActionsOf(*x).forward, "");

  const std::string both = Dot(g_, {});
  EXPECT_NE(both.find("copy_to_tp\\nfwd: identity\\nbwd: all_reduce [tp]"), std::string::npos);
  EXPECT_NE(both.find("reduce_from_tp\\nfwd: all_reduce [tp]\\nbwd: identity"), std::string::npos);
  EXPECT_NE(both.find("reduce_scatter\\nbwd: reduce_scatter [dp]"), std::string::npos);
}

TEST_F(GraphvizDirectionTest, ForwardLeavesOutWhatIsTheIdentityInForward) {
  const std::string dot = Dot(g_, {.direction = Direction::kForward});
  EXPECT_FALSE(Drawn(dot, "layers_0_self_attn_q_proj_copy_to_tp")) << dot;
  EXPECT_FALSE(Drawn(dot, "reduce_grad_layers_0_self_attn_q_proj_weight"));
  EXPECT_TRUE(Drawn(dot, "layers_0_self_attn_o_proj_reduce_from_tp"));
  EXPECT_TRUE(Drawn(dot, "allgather_layers_0_self_attn_q_proj_weight"));
  // The norm feeds q/k/v directly, through the left-out copy_to_tp.
  EXPECT_NE(dot.find("layers_0_input_layernorm -> layers_0_self_attn_q_proj"), std::string::npos);
  EXPECT_EQ(dot.find("dir=back"), std::string::npos);
  EXPECT_EQ(dot.find("bwd:"), std::string::npos);
}

TEST_F(GraphvizDirectionTest, BackwardLeavesOutWhatIsTheIdentityInBackwardAndReversesArrows) {
  const std::string dot = Dot(g_, {.direction = Direction::kBackward});
  EXPECT_TRUE(Drawn(dot, "layers_0_self_attn_q_proj_copy_to_tp"));
  EXPECT_TRUE(Drawn(dot, "reduce_grad_layers_0_self_attn_q_proj_weight"));
  EXPECT_TRUE(Drawn(dot, "allgather_layers_0_self_attn_q_proj_weight"));
  EXPECT_FALSE(Drawn(dot, "layers_0_self_attn_o_proj_reduce_from_tp"));
  EXPECT_NE(dot.find("layers_0_self_attn_o_proj -> layers_0_residual_attn"), std::string::npos);
  EXPECT_NE(dot.find("dir=back"), std::string::npos);
  EXPECT_EQ(dot.find("fwd:"), std::string::npos);
  // The collapsed layer counts only what runs in backward.
  EXPECT_NE(dot.find("all_reduce [tp] x2"), std::string::npos) << dot;
}

// A parameter node shows its weight as this rank holds it; the edge into a gradient reduction
// carries the gradient (the parameter's shape), not the activation; a ZeRO-3 gather shows the
// partition it reads.
TEST_F(GraphvizDirectionTest, WeightAndGradientShapes) {
  const std::string dot = Dot(g_, {});
  EXPECT_NE(dot.find("layers_0_self_attn_q_proj\\nlinear\\nW [N*D/T, H]"), std::string::npos);
  EXPECT_NE(dot.find("label=\"grad [N*D/T, H]\""), std::string::npos);
  EXPECT_NE(dot.find("label=\"grad [H]\""), std::string::npos);
  EXPECT_NE(dot.find("partition [N*D*H/T/DP]"), std::string::npos) << dot;
}

// --diff: nodes the passes inserted are red and marked +, changed shapes say what they were,
// and nodes that no longer exist are listed.
TEST_F(GraphvizDirectionTest, DiffMarksInsertedChangedAndRemovedNodes) {
  auto before = graph::BuildModelGraph(model_);
  ASSERT_TRUE(before.ok());
  before->Append({.name = "ghost", .op = "placeholder", .shape = graph::Shape{1}});
  const std::string dot = Dot(g_, {.before = &*before});
  EXPECT_NE(dot.find("+ layers_0_self_attn_q_proj_copy_to_tp"), std::string::npos);
  EXPECT_NE(dot.find("was [B, S, N*D]"), std::string::npos);
  EXPECT_NE(dot.find("W was [N*D, H]"), std::string::npos);
  EXPECT_NE(dot.find("#d62728"), std::string::npos);
  EXPECT_NE(dot.find("#ff7f0e"), std::string::npos);
  EXPECT_NE(dot.find("removed by the passes:\\n%ghost"), std::string::npos);
  // The norm is untouched: no mark.
  EXPECT_EQ(dot.find("+ layers_0_input_layernorm"), std::string::npos);
  // Without --diff nothing is marked.
  EXPECT_EQ(Dot(g_, {}).find("#d62728"), std::string::npos);
}

TEST(GraphvizDirectionParseTest, ParsesDirections) {
  EXPECT_EQ(*ParseDirection("forward"), Direction::kForward);
  EXPECT_EQ(*ParseDirection("backward"), Direction::kBackward);
  EXPECT_EQ(*ParseDirection("both"), Direction::kBoth);
  EXPECT_FALSE(ParseDirection("sideways").ok());
}

}  // namespace
}  // namespace dsp::sim::render
