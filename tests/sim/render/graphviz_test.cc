// SPDX-License-Identifier: Apache-2.0
// Graphviz rendering: well-formed SVG naming every collective, byte-identical repeats, clusters,
// layer collapsing and the layer-range parser.
#include "sim/render/graphviz.h"

#include <gtest/gtest.h>

#include "sim/graph/builder.h"
#include "sim/graph/text_format.h"
#include "tests/sim/render/render_test_util.h"
#include "tests/sim/render/xml_check.h"

namespace dsp::sim::render {
namespace {

graph::Graph CollectiveGraph() {
  auto g = graph::ParseGraph(testing::kCollectiveGraph);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return std::move(g).value();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(GraphvizTest, SvgIsWellFormedAndNamesEveryCollective) {
  graph::Graph g = CollectiveGraph();
  auto svg = RenderGraph(g, {}, Format::kSvg);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  EXPECT_EQ(testing::XmlWellFormedError(*svg), "");
  EXPECT_NE(svg->find("<svg"), std::string::npos);
  for (const char* name : {"g0", "c0", "a0", "r0", "d1", "m1", "s1", "w1"}) {
    EXPECT_NE(svg->find(std::string("<title>") + name + "</title>"), std::string::npos) << name;
  }
  for (const char* op : {"all_gather", "copy_to_tp", "all_to_all", "reduce_from_tp", "dispatch", "combine",
                         "reduce_scatter", "all_reduce"}) {
    EXPECT_NE(svg->find(op), std::string::npos) << op;
  }
  // Clusters: two layers, self_attn in layer 0, mlp in layer 1, and the legend.
  for (const char* cluster : {"cluster_layers_0", "cluster_layers_0_self_attn", "cluster_layers_1",
                              "cluster_layers_1_mlp", "cluster_legend"}) {
    EXPECT_NE(svg->find(std::string("<title>") + cluster + "</title>"), std::string::npos) << cluster;
  }
  // Edges carry the source's symbolic shape.
  EXPECT_NE(svg->find("[B, S/P, H]"), std::string::npos);
}

TEST(GraphvizTest, CollectivesAreHexagonsColoredByGroup) {
  graph::Graph g = CollectiveGraph();
  auto dot = RenderGraph(g, {}, Format::kDot);
  ASSERT_TRUE(dot.ok()) << dot.error().message;
  // Eight collectives plus six legend entries (tp, sp, ep, dp, sp_dp, edp).
  EXPECT_EQ(Count(*dot, "shape=hexagon"), 14u) << *dot;
  EXPECT_NE(dot->find("#fbb4ae"), std::string::npos);  // tp
  EXPECT_NE(dot->find("#ccebc5"), std::string::npos);  // ep
  EXPECT_NE(dot->find("subgraph cluster_layers_0"), std::string::npos);
}

TEST(GraphvizTest, RendersAreByteIdentical) {
  graph::Graph g = CollectiveGraph();
  for (Format f : {Format::kSvg, Format::kDot}) {
    auto a = RenderGraph(g, {}, f);
    auto b = RenderGraph(g, {}, f);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, *b);
  }
  // A second, separately built graph of the same model renders the same bytes too.
  ModelSpec model = testing::LoadSampleModel("samples/models/tiny-moe.json");
  auto g1 = graph::BuildModelGraph(model);
  auto g2 = graph::BuildModelGraph(model);
  ASSERT_TRUE(g1.ok() && g2.ok());
  auto a = RenderGraph(*g1, {}, Format::kSvg);
  auto b = RenderGraph(*g2, {}, Format::kSvg);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(GraphvizTest, LayersOutsideTheRangeCollapse) {
  ModelSpec model = testing::LoadSampleModel("samples/models/llama-3-70b.json");
  auto g = graph::BuildModelGraph(model);
  ASSERT_TRUE(g.ok()) << g.error().message;
  RenderOptions options;
  options.layers = LayerRange{0, 1};
  auto svg = RenderGraph(*g, options, Format::kSvg);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  EXPECT_EQ(testing::XmlWellFormedError(*svg), "");
  EXPECT_NE(svg->find("79 (78 x)"), std::string::npos);
  EXPECT_NE(svg->find("cluster_layers_1"), std::string::npos);
  EXPECT_EQ(svg->find("cluster_layers_2"), std::string::npos);
  EXPECT_EQ(svg->find("layers_5_"), std::string::npos);

  // A range in the middle leaves a summary on each side.
  options.layers = LayerRange{3, 3};
  auto dot = RenderGraph(*g, options, Format::kDot);
  ASSERT_TRUE(dot.ok());
  EXPECT_NE(dot->find("layers 0-2 (3 x)"), std::string::npos);
  EXPECT_NE(dot->find("layers 4-79 (76 x)"), std::string::npos);
  EXPECT_EQ(Count(*dot, "subgraph cluster_layers_"), 3u);  // layers.3, its self_attn and mlp
}

// The collapsed box says what each hidden layer issues: AutoTP's copy and reduce per block, and
// a DP gradient reduction per parameter.
TEST(GraphvizTest, CollapsedLayersListTheirCollectivesPerLayer) {
  auto g = graph::ParseGraph(R"(%x = placeholder() {module="", param="", shape=[B, S, H], group=""}
%layers_0_c = copy_to_tp(%x) {module="model.layers.0.mlp", param="", shape=[B, S, H], group="tp"}
%layers_0_r = reduce_from_tp(%layers_0_c) {module="model.layers.0.mlp", param="", shape=[B, S, H], group="tp"}
%layers_1_c = copy_to_tp(%layers_0_r) {module="model.layers.1.mlp", param="", shape=[B, S, H], group="tp"}
%layers_1_r = reduce_from_tp(%layers_1_c) {module="model.layers.1.mlp", param="", shape=[B, S, H], group="tp"}
%layers_2_c = copy_to_tp(%layers_1_r) {module="model.layers.2.mlp", param="", shape=[B, S, H], group="tp"}
%layers_2_r = reduce_from_tp(%layers_2_c) {module="model.layers.2.mlp", param="", shape=[B, S, H], group="tp"}
%output = output(%layers_2_r) {module="", param="", group=""}
)");
  ASSERT_TRUE(g.ok()) << g.error().message;
  RenderOptions options;
  options.layers = LayerRange{0, 0};
  auto dot = RenderGraph(*g, options, Format::kDot);
  ASSERT_TRUE(dot.ok()) << dot.error().message;
  EXPECT_NE(dot->find(R"(layers 1-2 (2 x)\nper layer:\ncopy_to_tp [tp] (backward) x1\nreduce_from_tp [tp] x1)"), std::string::npos)
      << *dot;
}

TEST(GraphvizTest, ParsesLayerRanges) {
  auto r = ParseLayerRange("0-1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, 0);
  EXPECT_EQ(r->last, 1);
  auto one = ParseLayerRange("7");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->first, 7);
  EXPECT_EQ(one->last, 7);
  for (const char* bad : {"", "-", "1-", "a-b", "3-1", "1-2-3", " 1"}) {
    EXPECT_FALSE(ParseLayerRange(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace dsp::sim::render
