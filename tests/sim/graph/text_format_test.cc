// SPDX-License-Identifier: Apache-2.0
// The text form: exact round trips, the lenient parts of the grammar, and line:column errors.
#include "sim/graph/text_format.h"

#include <gtest/gtest.h>

#include "sim/graph/verifier.h"

namespace dsp::sim::graph {
namespace {

// A tensor-parallel MLP after a pass: collectives with groups, divided shapes, odd strings.
constexpr const char* kSharded =
    R"(%x = placeholder() {module="", param="", shape=[B, S/P, H], group=""}
%x_gather = all_gather(%x) {module="model.layers.0", param="", shape=[B, S, H], group="sp"}
%up = linear(%x_gather) {module="model.layers.0.mlp.up_proj", param="model.layers.0.mlp.up_proj.weight", shape=[B, S, F/P], group=""}
%act = silu(%up) {module="model.layers.0.mlp", param="", shape=[B, S, F/P], group=""}
%sq = mul(%act, %act) {module="quote \" backslash \\ newline \n", param="", shape=[B, S, F/P], group=""}
%down = linear(%sq) {module="model.layers.0.mlp.down_proj", param="model.layers.0.mlp.down_proj.weight", shape=[B, S, H], group=""}
%reduced = reduce_scatter(%down) {module="model.layers.0", param="", shape=[B, S/P, H], group="tp"}
%loss = cross_entropy(%reduced, %x) {module="", param="", shape=[], group=""}
%output = output(%loss) {module="", param="", group=""}
)";

std::string ParseError(std::string_view text) {
  Result<Graph> g = ParseGraph(text);
  return g.ok() ? "parsed" : g.error().message;
}

TEST(TextFormatTest, RoundTripsExactly) {
  Result<Graph> g = ParseGraph(kSharded);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(PrintGraph(*g), kSharded);
  EXPECT_TRUE(VerifyGraph(*g).ok());
  EXPECT_EQ(g->Find("sq")->module, "quote \" backslash \\ newline \n");
  EXPECT_EQ(ShapeToString(*g->Find("x")->shape), "[B, S/P, H]");
  EXPECT_EQ(g->Find("reduced")->group, "tp");
  EXPECT_FALSE(g->Output()->shape.has_value());
  EXPECT_EQ(g->Find("act")->users.size(), 1u);  // mul(%act, %act) is one user
}

TEST(TextFormatTest, AcceptsLooserInputAndPrintsItCanonically) {
  // Comments, blank lines, CRLF, free spacing, any attribute order, missing attributes, shapes
  // that simplify.
  const char* loose =
      "# a comment\r\n"
      "\n"
      "  %x=placeholder( ){shape=[ B , S*P/P ], module=\"m\"}\r\n"
      "%y = add(%x,%x) {group=\"tp\", shape=[2*B/2, S]}\n"
      "%output = output(%y)\n";
  Result<Graph> g = ParseGraph(loose);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(PrintGraph(*g),
            "%x = placeholder() {module=\"m\", param=\"\", shape=[B, S], group=\"\"}\n"
            "%y = add(%x, %x) {module=\"\", param=\"\", shape=[B, S], group=\"tp\"}\n"
            "%output = output(%y) {module=\"\", param=\"\", group=\"\"}\n");
}

TEST(TextFormatTest, EmptyTextIsAnEmptyGraph) {
  Result<Graph> g = ParseGraph("");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->size(), 0u);
  EXPECT_EQ(PrintGraph(*g), "");
}

TEST(TextFormatTest, ErrorsReportLineAndColumn) {
  const std::string ok = "%x = placeholder() {shape=[B]}\n";
  EXPECT_EQ(ParseError("x = add()"), "1:1: expected '%'");
  EXPECT_EQ(ParseError("% = add()"), "1:2: expected a node name after '%'");
  EXPECT_EQ(ParseError("%x add()"), "1:4: expected '='");
  EXPECT_EQ(ParseError("%x = (%y)"), "1:6: expected an op name");
  EXPECT_EQ(ParseError("%x = add"), "1:9: expected '('");
  EXPECT_EQ(ParseError(ok + "%y = add(%z)"), "2:11: %z is not defined on an earlier line");
  EXPECT_EQ(ParseError(ok + "%y = add(%x %x)"), "2:13: expected ')'");
  EXPECT_EQ(ParseError(ok + "%y = add(%)"), "2:11: expected an argument name after '%'");
  EXPECT_EQ(ParseError(ok + "%x = add(%x)"), "2:2: duplicate node name %x");
  EXPECT_EQ(ParseError(ok + "%y = add(%x) {size=1}"),
            "2:15: unknown attribute 'size' (expected module, param, param_shape, shape, group, window or "
            "chunk)");
  EXPECT_EQ(ParseError(ok + "%y = sdpa(%x) {window=0}"), "2:23: expected a positive integer");
  EXPECT_EQ(ParseError(ok + "%y = sdpa(%x) {chunk=x}"), "2:22: expected a positive integer");
  EXPECT_EQ(ParseError(ok + "%y = add(%x) {group=\"a\", group=\"b\"}"),
            "2:26: attribute group given twice");
  EXPECT_EQ(ParseError(ok + "%y = add(%x) {group=tp}"), "2:21: expected '\"'");
  EXPECT_EQ(ParseError(ok + "%y = add(%x) {group=\"tp}"), "2:25: unterminated string");
  EXPECT_EQ(ParseError(ok + "%y = add(%x) {group=\"\\t\"}"), "2:22: unknown escape \\t");
  EXPECT_EQ(ParseError(ok + "%y = add(%x) {shape=B}"), "2:21: expected '['");
  EXPECT_EQ(ParseError(ok + "%y = add(%x) {shape=[B, S+1]}"), "2:26: expected ']'");
  EXPECT_EQ(ParseError(ok + "%y = add(%x) {shape=[B, S/0]}"), "2:27: division by zero");
  EXPECT_EQ(ParseError(ok + "%y = add(%x) {shape=[B, ]}"), "2:25: unexpected ']' in a dimension");
  EXPECT_EQ(ParseError(ok + "%y = add(%x) {shape=[B]"), "2:24: expected '}'");
  EXPECT_EQ(ParseError(ok + "%y = add(%x) {} extra"), "2:17: unexpected text after the node");
}

}  // namespace
}  // namespace dsp::sim::graph
