// SPDX-License-Identifier: Apache-2.0
// One test per verifier rule: each breaks a valid graph in one way (through the public fields, as
// a buggy pass would) and checks the exact message.
#include "sim/graph/verifier.h"

#include <gtest/gtest.h>

#include "sim/graph/text_format.h"

namespace dsp::sim::graph {
namespace {

constexpr const char* kValid =
    R"(%x = placeholder() {module="", param="", shape=[B, S, H], group=""}
%proj = linear(%x) {module="m.proj", param="m.proj.weight", shape=[B, S, H], group=""}
%sum = add(%proj, %x) {module="m", param="", shape=[B, S, H], group=""}
%output = output(%sum) {module="", param="", group=""}
)";

Graph Valid() { return std::move(ParseGraph(kValid)).value(); }

std::string Errors(const Graph& g) {
  std::string out;
  for (const Error& e : VerifyGraphErrors(g)) out += e.message + "\n";
  return out;
}

TEST(VerifierTest, ValidGraphHasNoErrors) {
  Graph g = Valid();
  EXPECT_EQ(Errors(g), "");
  EXPECT_TRUE(VerifyGraph(g).ok());
}

TEST(VerifierTest, DuplicateNames) {
  Graph g = Valid();
  g.Find("sum")->name = "proj";  // bypasses Graph::Rename
  EXPECT_EQ(Errors(g), "%proj: duplicate node name\n");
}

TEST(VerifierTest, ArgumentDefinedLater) {
  Graph g = Valid();
  Node* proj = g.Find("proj");
  Node* sum = g.Find("sum");
  g.SetArg(proj, 0, sum);  // a cycle: proj reads sum, which comes after it
  EXPECT_EQ(Errors(g), "%proj: argument %sum is defined later (use before definition)\n");
}

TEST(VerifierTest, ArgumentNotInTheGraph) {
  Graph g = Valid();
  Graph other = Valid();
  g.Find("sum")->args.push_back(other.Find("x"));
  EXPECT_EQ(Errors(g), "%sum: argument %x is not in the graph\n");
}

TEST(VerifierTest, UseMissingFromUsers) {
  Graph g = Valid();
  g.Find("sum")->args[0] = g.Find("x");  // direct edit: proj and x users now stale
  EXPECT_EQ(Errors(g),
            "%proj: lists %sum as a user but it does not use this node\n");
  g.Find("x")->users.clear();
  EXPECT_EQ(Errors(g),
            "%proj: uses %x but is missing from its users\n"
            "%proj: lists %sum as a user but it does not use this node\n"
            "%sum: uses %x but is missing from its users\n");
}

TEST(VerifierTest, UserListedTwice) {
  Graph g = Valid();
  Node* x = g.Find("x");
  x->users.push_back(x->users.front());
  EXPECT_EQ(Errors(g), "%x: user %proj is listed twice\n");
}

TEST(VerifierTest, DanglingUser) {
  Graph g = Valid();
  Graph other = Valid();
  g.Find("sum")->users.push_back(other.Find("sum"));
  EXPECT_EQ(Errors(g), "%sum: dangling user %sum is not in the graph\n");
}

TEST(VerifierTest, ExactlyOneOutput) {
  Graph none = Valid();
  ASSERT_TRUE(none.Erase(none.Output()).ok());
  EXPECT_EQ(Errors(none), "graph has 0 output nodes; it needs exactly one\n");
  Graph two = Valid();
  two.Append({.name = "output2", .op = "output", .args = {two.Find("proj")}});
  EXPECT_EQ(Errors(two), "graph has 2 output nodes; it needs exactly one\n");
}

TEST(VerifierTest, OutputMustNotBeUsed) {
  Graph g = Valid();
  g.Append({.name = "after", .op = "add", .args = {g.Output()}, .shape = Shape{}});
  EXPECT_EQ(Errors(g), "%output: the output is used by %after\n");
}

TEST(VerifierTest, ShapesOnEveryNonOutputNode) {
  Graph g = Valid();
  g.Find("proj")->shape.reset();
  EXPECT_EQ(Errors(g), "%proj: node has no shape\n");
  EXPECT_EQ(VerifyGraph(g).error().message, "%proj: node has no shape");
}

TEST(VerifierTest, OpAndPlaceholderRules) {
  Graph g = Valid();
  g.Find("proj")->op.clear();
  g.SetArgs(g.Find("x"), {g.Find("x")});
  EXPECT_EQ(Errors(g),
            "%x: placeholder has arguments\n"
            "%x: argument %x is defined later (use before definition)\n"
            "%proj: node has no op\n");
}

TEST(VerifierTest, AllErrorsAreJoinedInVerifyGraph) {
  Graph g = Valid();
  g.Find("proj")->shape.reset();
  g.Find("sum")->shape.reset();
  EXPECT_EQ(VerifyGraph(g).error().message, "%proj: node has no shape\n%sum: node has no shape");
}

}  // namespace
}  // namespace dsp::sim::graph
