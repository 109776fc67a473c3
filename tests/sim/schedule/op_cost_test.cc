// SPDX-License-Identifier: Apache-2.0
// Node costs from symbolic shapes: matmul FLOPs 2mkn, attention 4 x q x Sk, experts per routed
// row, memory-bound bytes, and collective kinds and sizes in both directions.
#include "sim/schedule/op_cost.h"

#include <gtest/gtest.h>

#include "sim/graph/text_format.h"

namespace dsp::sim::schedule {
namespace {

graph::Graph Parse(const std::string& text) {
  auto g = graph::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return std::move(g).value();
}

const graph::SymbolValues kValues = {{"B", 2}, {"S", 8}, {"H", 16}, {"N", 4}, {"D", 4}, {"T", 2},
                                     {"E", 4}, {"K", 2}, {"FE", 8}, {"EP", 2}, {"DP", 4}};

TEST(OpCostTest, LinearAndAttention) {
  graph::Graph g = Parse(
      "%x = placeholder() {shape=[B, S, H]}\n"
      "%q = linear(%x) {param=\"q.weight\", param_shape=[N*D/T, H], shape=[B, S, N*D/T]}\n"
      "%qh = rotary(%q) {shape=[B, N/T, S, D]}\n"
      "%a = sdpa(%qh, %qh, %qh) {shape=[B, N/T, S, D]}\n"
      "%output = output(%a)\n");
  auto lin = NodeComputeCost(*g.Find("q"), kValues, 2);
  ASSERT_TRUE(lin.ok());
  EXPECT_DOUBLE_EQ(lin->flops, 2.0 * (2 * 8 * 8) * 16);             // 2 x out elements x in features
  EXPECT_DOUBLE_EQ(lin->bytes, 2.0 * (2 * 8 * 16 + 8 * 16 + 2 * 8 * 8));  // x, weight, out
  auto att = NodeComputeCost(*g.Find("a"), kValues, 2);
  ASSERT_TRUE(att.ok());
  EXPECT_DOUBLE_EQ(att->flops, 4.0 * (2 * 2 * 8 * 4) * 8);  // 4 x q elements x Sk
  EXPECT_DOUBLE_EQ(att->bytes, 2.0 * 4 * (2 * 2 * 8 * 4));  // q, k, v, o
}

// NodeOperators: each node as the closed form's operator, priced by the same KernelTimeOf.
TEST(OpCostTest, NodesBecomeTheClosedFormsOperators) {
  graph::Graph g = Parse(
      "%x = placeholder() {shape=[B, S, H]}\n"
      "%n = rms_norm(%x) {param=\"n.weight\", param_shape=[H], shape=[B, S, H]}\n"
      "%q = linear(%n) {param=\"q.weight\", param_shape=[N*D/T, H], shape=[B, S, N*D/T]}\n"
      "%qh = rotary(%q) {shape=[B, N/T, S, D]}\n"
      "%a = sdpa(%qh, %qh, %qh) {shape=[B, N/T, S, D]}\n"
      "%output = output(%a)\n");
  ModelSpec model;
  model.layer_norm = false;
  ShardShape eager;
  eager.hf_eager = true;
  // transformers' LlamaRMSNorm: 36 bytes per element in 8 kernels (sim/cost/flops.cc EagerBytes).
  auto norm = NodeOperators(*g.Find("n"), kValues, model, eager);
  ASSERT_TRUE(norm.ok());
  ASSERT_EQ(norm->size(), 1u);
  EXPECT_EQ((*norm)[0].kind, KernelKind::kMemory);
  EXPECT_DOUBLE_EQ((*norm)[0].bytes, 36.0 * 2 * 8 * 16);
  EXPECT_DOUBLE_EQ((*norm)[0].kernels, 8);
  // Megatron's fused norm reads and writes once.
  ShardShape fused;
  EXPECT_DOUBLE_EQ((*NodeOperators(*g.Find("n"), kValues, model, fused))[0].bytes, 2.0 * 2 * 2 * 8 * 16);
  // A GEMM keeps its output tile for wave quantization: [B*S, N*D/T].
  auto q = NodeOperators(*g.Find("q"), kValues, model, eager);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ((*q)[0].kind, KernelKind::kMatmul);
  EXPECT_DOUBLE_EQ((*q)[0].rows, 2 * 8);
  EXPECT_DOUBLE_EQ((*q)[0].cols, 8);
  // A fused attention kernel executes the causal half of the full-square FLOPs.
  auto a = NodeOperators(*g.Find("a"), kValues, model, eager);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)[0].kind, KernelKind::kAttention);
  EXPECT_DOUBLE_EQ((*a)[0].executed, 0.5);
  EXPECT_DOUBLE_EQ((*a)[0].flops, 4.0 * (2 * 2 * 8 * 4) * 8);
  // Its shape (head dim, keys walked, blocks over the SMs) is the closed form's for the same rank:
  // B = 2 sequences of S = 8 tokens, N / T = 2 heads of D = 4.
  model.head_dim = 4;
  ShardShape closed = eager;
  closed.micro_batch = 2;
  closed.seq_len = 8;
  const auto same = [](const AttentionShape& x, const AttentionShape& y) {
    EXPECT_DOUBLE_EQ(x.head_dim, y.head_dim);
    EXPECT_DOUBLE_EQ(x.key_length, y.key_length);
    EXPECT_DOUBLE_EQ(x.blocks, y.blocks);
  };
  a = NodeOperators(*g.Find("a"), kValues, model, eager);
  same((*a)[0].attention_shape, AttentionCoreForward(model, AttentionKind::kFull, closed, 2, 2)[0].attention_shape);
  EXPECT_DOUBLE_EQ((*a)[0].attention_shape.blocks, 2 * 2 * 1);
  EXPECT_DOUBLE_EQ((*a)[0].attention_shape.key_length, 8);
  // Placeholders and the output cost nothing.
  EXPECT_TRUE(NodeOperators(*g.Find("x"), kValues, model, eager)->empty());
}

// MLA's sdpa: QK^T over Dq = 192 and AV over Dv = 128 (2 x Sq x Sk x (Dq + Dv) per head); a
// sliding window w is charged 2w - w^2/S keys, a chunk c is charged c, as sim/cost/flops.cc does.
TEST(OpCostTest, AttentionWithUnequalHeadWidthsWindowsAndChunks) {
  graph::Graph g = Parse(
      "%q = placeholder() {shape=[B, N, S, DQ]}\n"
      "%v = placeholder() {shape=[B, N, S, DV]}\n"
      "%mla = sdpa(%q, %q, %v) {shape=[B, N, S, DV]}\n"
      "%slide = sdpa(%q, %q, %q) {shape=[B, N, S, DQ], window=2}\n"
      "%wide = sdpa(%q, %q, %q) {shape=[B, N, S, DQ], window=64}\n"
      "%chunk = sdpa(%q, %q, %q) {shape=[B, N, S, DQ], chunk=4}\n"
      "%output = output(%mla)\n");
  graph::SymbolValues v = kValues;
  v["DQ"] = 192;
  v["DV"] = 128;
  const double heads_rows = 2.0 * 4 * 8;  // B x N x S
  EXPECT_DOUBLE_EQ(NodeComputeCost(*g.Find("mla"), v, 2)->flops, 2 * heads_rows * 8 * (192 + 128));
  EXPECT_DOUBLE_EQ(NodeComputeCost(*g.Find("slide"), v, 2)->flops,
                   2 * heads_rows * (2 * 2 - 2.0 * 2 / 8) * (2 * 192));
  // A window at least the sequence long is full attention.
  EXPECT_DOUBLE_EQ(NodeComputeCost(*g.Find("wide"), v, 2)->flops, 2 * heads_rows * 8 * (2 * 192));
  EXPECT_DOUBLE_EQ(NodeComputeCost(*g.Find("chunk"), v, 2)->flops, 2 * heads_rows * 4 * (2 * 192));
}

// Gated DeltaNet's recurrence: per token and value head 2C(2 dk + dv) + 6 dk dv with C = 64,
// the same formula simulate's FLOPs use; the depthwise conv one multiply-add per tap.
TEST(OpCostTest, GatedDeltaRuleAndConv) {
  graph::Graph g = Parse(
      "%x = placeholder() {shape=[B, S, LC]}\n"
      "%c = conv1d(%x) {param=\"c.weight\", param_shape=[LC, 1, KC], shape=[B, S, LC]}\n"
      "%r = gated_delta_rule(%c) {shape=[B, S, LV*LVD]}\n"
      "%output = output(%r)\n");
  graph::SymbolValues v = kValues;
  v["LC"] = 12;
  v["KC"] = 4;
  v["LV"] = 2;
  v["LKD"] = 3;
  v["LVD"] = 5;
  EXPECT_DOUBLE_EQ(NodeComputeCost(*g.Find("c"), v, 2)->flops, 2.0 * (2 * 8 * 12) * 4);
  EXPECT_DOUBLE_EQ(NodeComputeCost(*g.Find("r"), v, 2)->flops,
                   (2.0 * 8 * 2) * (2 * 64 * (2 * 3 + 5) + 6 * 3 * 5));
  v.erase("LKD");
  EXPECT_FALSE(NodeComputeCost(*g.Find("r"), v, 2).ok());
}

TEST(OpCostTest, ExpertsCountRoutedRows) {
  graph::Graph g = Parse(
      "%x = placeholder() {shape=[B, S, H]}\n"
      "%k = placeholder() {shape=[B*S, K]}\n"
      "%local = experts(%x, %k) {param=\"e.*\", param_shape=[E, 3, FE, H], shape=[B, S, H]}\n"
      "%d = dispatch(%x, %k) {shape=[E/EP, B*S*K*EP/E, H], group=\"ep\"}\n"
      "%ep = experts(%d) {param=\"f.*\", param_shape=[E/EP, 3, FE, H], shape=[E/EP, B*S*K*EP/E, H]}\n"
      "%output = output(%ep)\n");
  // Without AutoEP each of the B*S tokens visits K experts of 3 FE x H matrices.
  EXPECT_DOUBLE_EQ(NodeComputeCost(*g.Find("local"), kValues, 2)->flops, 2.0 * (2 * 8) * 2 * 3 * 8 * 16);
  // After dispatch every row is one token-expert assignment: the same work, spread over EP ranks.
  EXPECT_DOUBLE_EQ(NodeComputeCost(*g.Find("ep"), kValues, 2)->flops, 2.0 * (2 * 8) * 2 * 3 * 8 * 16);
}

TEST(OpCostTest, CollectivesInBothDirections) {
  graph::Graph g = Parse(
      "%x = placeholder() {shape=[B, S, H]}\n"
      "%c = copy_to_tp(%x) {shape=[B, S, H], group=\"tp\"}\n"
      "%r = reduce_from_tp(%c) {shape=[B, S, H], group=\"tp\"}\n"
      "%a = all_to_all(%r) {shape=[B, S, H], group=\"sp\"}\n"
      "%go = gather_from_tp(%a) {shape=[B, S, H], group=\"tp\"}\n"
      "%w = all_gather() {param=\"w\", param_shape=[H*H/DP], shape=[H, H], group=\"dp\"}\n"
      "%y = linear(%a, %w) {param=\"w\", param_shape=[H, H], shape=[B, S, H]}\n"
      "%g = reduce_scatter(%y) {param=\"w\", param_shape=[H, H], shape=[H*H/DP], group=\"dp\"}\n"
      "%output = output(%y)\n");
  const double act = 2.0 * 2 * 8 * 16;  // bytes of [B, S, H]
  auto cost = [&](const char* name, bool backward) {
    auto c = NodeCollectiveCost(*g.Find(name), backward, kValues, 2, 4);
    EXPECT_TRUE(c.ok());
    return *c;
  };
  EXPECT_FALSE(cost("c", false).has_value());  // copy_to_tp: identity forward
  EXPECT_EQ(cost("c", true)->kind, CollectiveKind::kAllReduce);
  EXPECT_DOUBLE_EQ(cost("c", true)->bytes, act);
  EXPECT_EQ(cost("r", false)->kind, CollectiveKind::kAllReduce);
  EXPECT_FALSE(cost("r", true).has_value());  // reduce_from_tp: identity backward
  EXPECT_EQ(cost("a", true)->kind, CollectiveKind::kAllToAll);
  // gather_from_tp (gather_output): the gathered features forward, a local slice backward.
  EXPECT_EQ(cost("go", false)->kind, CollectiveKind::kAllGather);
  EXPECT_DOUBLE_EQ(cost("go", false)->bytes, act);
  EXPECT_FALSE(cost("go", true).has_value());
  EXPECT_EQ(cost("w", false)->kind, CollectiveKind::kAllGather);
  EXPECT_DOUBLE_EQ(cost("w", false)->bytes, 2.0 * 16 * 16);  // S = the gathered weight
  EXPECT_EQ(cost("w", true)->kind, CollectiveKind::kAllGather);  // gathered again for backward
  EXPECT_FALSE(cost("g", false).has_value());  // gradient reductions run in backward only
  EXPECT_EQ(cost("g", true)->kind, CollectiveKind::kReduceScatter);
  EXPECT_DOUBLE_EQ(cost("g", true)->bytes, 2.0 * 16 * 16);  // S = the whole gradient
  EXPECT_EQ(cost("g", true)->group, GroupKind::kDp);
  // An unbound symbol is an error naming the node.
  auto bad = NodeComputeCost(*g.Find("y"), {{"B", 2}}, 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("%y: ", 0), 0u) << bad.error().message;
}

}  // namespace
}  // namespace dsp::sim::schedule
