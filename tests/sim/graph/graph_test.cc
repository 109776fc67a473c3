// SPDX-License-Identifier: Apache-2.0
// The mutation API the passes use: insert, replace uses, erase, dead-code elimination; users lists
// stay consistent (checked with the verifier after every edit).
#include "sim/graph/graph.h"

#include <gtest/gtest.h>

#include "sim/graph/text_format.h"
#include "sim/graph/verifier.h"

namespace dsp::sim::graph {
namespace {

const Shape kBsh = {SymExpr::Symbol("B"), SymExpr::Symbol("S"), SymExpr::Symbol("H")};

// x -> linear -> relu-free chain: %x, %proj = linear(%x), %out = add(%proj, %x), output.
Graph Chain() {
  Graph g;
  Node* x = g.Append({.name = "x", .op = "placeholder", .shape = kBsh});
  Node* proj = g.Append({.name = "proj", .op = "linear", .args = {x}, .module = "m.proj",
                         .param = "m.proj.weight", .shape = kBsh});
  Node* sum = g.Append({.name = "sum", .op = "add", .args = {proj, x}, .shape = kBsh});
  g.Append({.name = "output", .op = "output", .args = {sum}});
  return g;
}

std::string Names(const Graph& g) {
  std::string out;
  for (const Node* n : g) out += (out.empty() ? "" : " ") + n->name;
  return out;
}

TEST(GraphTest, AppendKeepsOrderAndUsers) {
  Graph g = Chain();
  EXPECT_EQ(Names(g), "x proj sum output");
  EXPECT_EQ(g.size(), 4u);
  Node* x = g.Find("x");
  ASSERT_EQ(x->users.size(), 2u);
  EXPECT_EQ(x->users[0]->name, "proj");
  EXPECT_EQ(x->users[1]->name, "sum");
  EXPECT_EQ(g.Output()->name, "output");
  EXPECT_EQ(g.front()->name, "x");
  EXPECT_EQ(g.back()->name, "output");
  EXPECT_TRUE(VerifyGraph(g).ok());
}

TEST(GraphTest, NamesAreMadeUnique) {
  Graph g;
  EXPECT_EQ(g.Append({.op = "add", .shape = Shape{}})->name, "add");
  EXPECT_EQ(g.Append({.op = "add", .shape = Shape{}})->name, "add_1");
  EXPECT_EQ(g.Append({.name = "add", .op = "add", .shape = Shape{}})->name, "add_2");
  EXPECT_EQ(g.Append({.name = "add_1", .op = "add", .shape = Shape{}})->name, "add_1_1");
  EXPECT_EQ(g.UniqueName("mul"), "mul");
  EXPECT_TRUE(g.Rename(g.Find("add_2"), "sum").ok());
  EXPECT_EQ(g.Find("add_2"), nullptr);
  EXPECT_EQ(g.Find("sum")->op, "add");
  Status taken = g.Rename(g.Find("sum"), "add");
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().message, "name %add is taken");
}

TEST(GraphTest, InsertAfterAndReplaceAllUses) {
  // The tensor-parallel pattern: y = all_reduce(proj) right after proj, then every user of proj
  // reads y instead; y itself must keep reading proj.
  Graph g = Chain();
  Node* proj = g.Find("proj");
  Node* reduced = g.InsertAfter(proj, {.name = "proj_all_reduce", .op = "all_reduce",
                                       .args = {proj}, .shape = kBsh, .group = "tp"});
  EXPECT_EQ(g.ReplaceAllUsesWith(proj, reduced), 1u);
  EXPECT_EQ(Names(g), "x proj proj_all_reduce sum output");
  EXPECT_EQ(reduced->args[0], proj);
  EXPECT_EQ(g.Find("sum")->args[0], reduced);
  ASSERT_EQ(proj->users.size(), 1u);
  EXPECT_EQ(proj->users[0], reduced);
  EXPECT_TRUE(VerifyGraph(g).ok()) << VerifyGraph(g).error().message;
  EXPECT_EQ(PrintNode(*reduced),
            "%proj_all_reduce = all_reduce(%proj) {module=\"\", param=\"\", shape=[B, S, H], "
            "group=\"tp\"}");
}

TEST(GraphTest, InsertBeforeAndSetArg) {
  Graph g = Chain();
  Node* x = g.Find("x");
  Node* proj = g.Find("proj");
  Node* copy = g.InsertBefore(proj, {.name = "x_copy", .op = "copy_to_tp", .args = {x},
                                     .shape = kBsh, .group = "tp"});
  g.SetArg(proj, 0, copy);
  EXPECT_EQ(Names(g), "x x_copy proj sum output");
  EXPECT_EQ(x->users.size(), 2u);  // x_copy and sum
  EXPECT_TRUE(VerifyGraph(g).ok()) << VerifyGraph(g).error().message;
  // A node using the same operand twice is listed once among its users, and stays listed until
  // the last use goes.
  Node* sum = g.Find("sum");
  g.SetArgs(sum, {x, x});
  EXPECT_EQ(proj->users.size(), 0u);
  g.SetArg(sum, 0, proj);
  EXPECT_EQ(std::count(x->users.begin(), x->users.end(), sum), 1);
  EXPECT_TRUE(VerifyGraph(g).ok()) << VerifyGraph(g).error().message;
}

TEST(GraphTest, EraseRefusesUsedNodes) {
  Graph g = Chain();
  Status used = g.Erase(g.Find("proj"));
  ASSERT_FALSE(used.ok());
  EXPECT_EQ(used.error().message, "cannot erase %proj: still used by %sum");
  g.SetArg(g.Find("sum"), 0, g.Find("x"));
  EXPECT_TRUE(g.Erase(g.Find("proj")).ok());
  EXPECT_EQ(g.Find("proj"), nullptr);
  EXPECT_EQ(Names(g), "x sum output");
  EXPECT_EQ(g.Find("x")->users.size(), 1u);
  EXPECT_TRUE(VerifyGraph(g).ok());
}

TEST(GraphTest, DeadCodeEliminationRemovesWholeChains) {
  Graph g = Chain();
  Node* proj = g.Find("proj");
  Node* a = g.InsertAfter(proj, {.name = "dead_a", .op = "silu", .args = {proj}, .shape = kBsh});
  g.InsertAfter(a, {.name = "dead_b", .op = "mul", .args = {a, a}, .shape = kBsh});
  g.Append({.name = "unused_input", .op = "placeholder", .shape = kBsh});
  EXPECT_EQ(g.EliminateDeadCode(), 2u);
  // Placeholders stay: they are the graph's inputs even when unused.
  EXPECT_EQ(Names(g), "x proj sum output unused_input");
  EXPECT_EQ(proj->users.size(), 1u);
  EXPECT_EQ(g.EliminateDeadCode(), 0u);
}

TEST(GraphTest, EditsAtBothEndsKeepTheListLinked) {
  Graph g = Chain();
  Node* first = g.InsertBefore(g.front(), {.name = "first", .op = "placeholder", .shape = kBsh});
  Node* last = g.InsertAfter(g.back(), {.name = "last", .op = "placeholder", .shape = kBsh});
  EXPECT_EQ(g.front(), first);
  EXPECT_EQ(g.back(), last);
  EXPECT_EQ(Names(g), "first x proj sum output last");
  ASSERT_TRUE(g.Erase(first).ok());
  ASSERT_TRUE(g.Erase(last).ok());
  std::string backwards;
  for (Node* n = g.back(); n != nullptr; n = n->prev()) backwards += n->name + " ";
  EXPECT_EQ(backwards, "output sum proj x ");
  EXPECT_EQ(g.front()->prev(), nullptr);
  EXPECT_EQ(g.size(), 4u);
  EXPECT_EQ(g.Find("first"), nullptr);
  Graph moved = std::move(g);
  EXPECT_EQ(Names(moved), "x proj sum output");
  EXPECT_TRUE(VerifyGraph(moved).ok());
}

TEST(GraphTest, LayerOfModule) {
  EXPECT_EQ(LayerOfModule("model.layers.12.mlp.up_proj"), 12);
  EXPECT_EQ(LayerOfModule("model.layers.3"), 3);
  EXPECT_EQ(LayerOfModule("model.layers.x"), -1);
  EXPECT_EQ(LayerOfModule("model.layers.3x.mlp"), -1);
  EXPECT_EQ(LayerOfModule("model.norm"), -1);
  EXPECT_EQ(LayerOfModule(""), -1);
}

}  // namespace
}  // namespace dsp::sim::graph
