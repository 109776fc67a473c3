// SPDX-License-Identifier: Apache-2.0
// DeepCompile's ZeRO-3 passes after WARMUP on tiny-llama's ZeRO-3 graph (21 parameters, every
// one gathered): selective_gather (compile/passes/selective_gather.py) and schedule_prefetch
// (compile/passes/prefetch.py), with a hand-set budget and a latency + bandwidth predictor.
#include "sim/passes/deepcompile_z3.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/graph/builder.h"
#include "sim/graph/verifier.h"
#include "sim/passes/from_config.h"
#include "sim/passes/zero.h"
#include "tests/sim/passes/pass_test_util.h"

namespace dsp::sim::passes {
namespace {

using testing::BuildPreset;
using testing::CountOp;

// tiny-llama: hidden 64, 4 heads of 16, 2 kv heads, MLP 176, vocab 512, 2 layers.
graph::Graph Zero3() {
  graph::Graph g = BuildPreset("tiny-llama.json");
  ZeroOptions zero;
  zero.stage = 3;
  EXPECT_TRUE(ZeroPass(zero).Run(g).ok());
  return g;
}

DeepCompileBudget Budget(double hbm, double peak, double bytes_per_element = 2) {
  DeepCompileBudget b;
  b.hbm_bytes = hbm;
  b.peak_bytes = peak;
  b.bytes_per_element = bytes_per_element;
  b.gather_seconds = [](double bytes) { return bytes <= 0 ? 0.0 : 1e-5 + bytes / 1e9; };
  b.values = graph::ModelSymbolValues(dsp::testing::ParsePresetOrDie("tiny-llama.json"), 1, 8);
  return b;
}

// selective_gather sorts by gather time per byte, highest first: with a latency term that is
// the smallest tensors first (the 5 norms of 128 bytes, then k_proj/v_proj of 4096), and it
// stops at the first that does not fit (q_proj's 8192 bytes), even though later ones would not
// fit either. The headroom is 0.9 x HBM - peak (MEM_MARGIN).
TEST(DeepCompileZ3Test, SelectiveGatherKeepsTheCostliestPerByteWithinTheHeadroom) {
  graph::Graph g = Zero3();
  ASSERT_EQ(CountOp(g, graph::ops::kAllGather, ""), 21);
  // 0.9 x 20000 - 876 = 17124 = 5 x 128 + 4 x 4096 + 100.
  SelectiveGatherPass pass(Budget(20000, 876));
  Result<bool> r = pass.Run(g);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(*r);
  EXPECT_TRUE(graph::VerifyGraph(g).ok());
  EXPECT_EQ(CountOp(g, graph::ops::kAllGather, ""), 12);
  EXPECT_EQ(CountOp(g, graph::ops::kRelease, ""), 12);
  EXPECT_EQ(g.Find("allgather_layers_0_self_attn_k_proj_weight"), nullptr);
  EXPECT_EQ(g.Find("allgather_norm_weight"), nullptr);
  EXPECT_NE(g.Find("allgather_layers_0_self_attn_q_proj_weight"), nullptr);
  EXPECT_EQ(g.Find("layers_0_self_attn_k_proj")->args.size(), 1u);  // reads the whole weight
  ASSERT_EQ(pass.remarks().size(), 1u);
  EXPECT_NE(pass.remarks().front().find("9 of 21 parameters"), std::string::npos) << pass.remarks().front();
  // The gradient reductions are untouched.
  EXPECT_EQ(CountOp(g, graph::ops::kReduceScatter, ""), 21);
}

TEST(DeepCompileZ3Test, SelectiveGatherWithoutHeadroomChangesNothing) {
  graph::Graph g = Zero3();
  SelectiveGatherPass pass(Budget(1000, 900));
  Result<bool> r = pass.Run(g);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  EXPECT_EQ(CountOp(g, graph::ops::kAllGather, ""), 21);
  ASSERT_EQ(pass.remarks().size(), 1u);
  EXPECT_NE(pass.remarks().front().find("no headroom"), std::string::npos);
}

// Params named by the prefetch nodes, in order, and where the first prefetch sits.
struct Prefetches {
  int nodes = 0;
  int params = 0;
  int fused = 0;             // prefetch nodes with more than one parameter
  int before_embedding = 0;  // launched right after the inputs
};

Prefetches Count(const graph::Graph& g) {
  Prefetches p;
  bool seen_embedding = false;
  for (const graph::Node* n : g) {
    if (n->op == graph::ops::kEmbedding) seen_embedding = true;
    if (n->op != graph::ops::kPrefetch) continue;
    ++p.nodes;
    const int params = 1 + static_cast<int>(std::count(n->param.begin(), n->param.end(), ','));
    p.params += params;
    p.fused += params > 1 ? 1 : 0;
    p.before_embedding += seen_embedding ? 0 : 1;
    EXPECT_TRUE(n->args.empty());
    EXPECT_EQ(n->group, "dp");
  }
  return p;
}

// Memory to spare and far below MAX_BUFFERED_SIZE: every gather is prefetched right after the
// inputs, and small gathers fuse with their neighbours where max(t_a, t_b) x 1.2 > t(a + b)
// (latency-bound sizes), large ones do not.
TEST(DeepCompileZ3Test, PrefetchLaunchesEverythingUpFrontWhenMemoryAllows) {
  graph::Graph g = Zero3();
  PrefetchPass pass(Budget(1e12, 1e9));
  Result<bool> r = pass.Run(g);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(*r);
  EXPECT_TRUE(graph::VerifyGraph(g).ok());
  const Prefetches p = Count(g);
  EXPECT_EQ(p.params, 21);  // every gathered parameter, once
  EXPECT_EQ(p.before_embedding, p.nodes);
  EXPECT_GT(p.fused, 0);
  EXPECT_LT(p.nodes, 21);
  // The gathers stay (they wait for the prefetched data at run time).
  EXPECT_EQ(CountOp(g, graph::ops::kAllGather, ""), 21);
  // A second pipeline run is not needed for dead-code elimination to keep them.
  EXPECT_EQ(g.EliminateDeadCode(), 0u);
}

// 1e5 bytes per element makes the model 15.8 GB: at most MAX_BUFFERED_SIZE (4e9) is outstanding,
// so later groups launch inside the layers, not all at the front.
TEST(DeepCompileZ3Test, PrefetchKeepsAtMostMaxBufferedSizeOutstanding) {
  graph::Graph g = Zero3();
  PrefetchPass pass(Budget(1e13, 1e9, 1e5));
  ASSERT_TRUE(pass.Run(g).ok());
  const Prefetches p = Count(g);
  EXPECT_EQ(p.params, 21);
  EXPECT_GT(p.before_embedding, 0);
  EXPECT_LT(p.before_embedding, p.nodes);
}

// Over the memory budget (peak above 0.9 x HBM) each group is launched as soon as it forms:
// right after the node before its gather, one parameter each: no prefetch to speak of.
TEST(DeepCompileZ3Test, PrefetchOverTheMemoryBudgetLaunchesEachGatherInPlace) {
  graph::Graph g = Zero3();
  PrefetchPass pass(Budget(1000, 2000));
  ASSERT_TRUE(pass.Run(g).ok());
  const Prefetches p = Count(g);
  EXPECT_EQ(p.nodes, 21);
  EXPECT_EQ(p.fused, 0);
  for (const graph::Node* n : g) {
    if (n->op != graph::ops::kPrefetch) continue;
    // The next gather in forward order is the one it prefetches.
    const graph::Node* next = n->next();
    while (next != nullptr && next->op != graph::ops::kAllGather) next = next->next();
    ASSERT_NE(next, nullptr);
    EXPECT_EQ(next->param, n->param);
  }
}

// The default schedule (compile/init_z3.py) runs them only under DeepCompile ZeRO-3 without an
// offload option, and only with a budget; forced without one is an error.
TEST(DeepCompileZ3Test, PipelineForConfigRunsThemUnderDeepCompileZero3WithABudget) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  const DeepCompileBudget budget = Budget(1e12, 1e9);
  auto names = [&](const std::string& text, const DeepCompileBudget* b) {
    const Json config = Json::parse(text);
    auto pipeline = PipelineForConfig({.model = &model, .config = &config, .deepcompile_budget = b});
    EXPECT_TRUE(pipeline.ok());
    std::string out;
    for (const auto& pass : pipeline->passes()) out += std::string(pass->name()) + " ";
    return out;
  };
  const std::string dc = R"({"zero_optimization": {"stage": 3}, "compile": {"deepcompile": true}})";
  EXPECT_EQ(names(dc, &budget), "zero selective_gather prefetch ");
  EXPECT_EQ(names(dc, nullptr), "zero ");
  EXPECT_EQ(names(R"({"zero_optimization": {"stage": 3}})", &budget), "zero ");
  EXPECT_EQ(names(R"({"zero_optimization": {"stage": 3}, "compile": {"deepcompile": true, "offload_parameters": true}})",
                  &budget),
            "zero ");
  const Json config = Json::parse(dc);
  auto forced = PipelineForConfig({.model = &model, .config = &config, .forced = std::vector<std::string>{"prefetch"}});
  ASSERT_FALSE(forced.ok());
  EXPECT_NE(forced.error().message.find("give --cluster"), std::string::npos);
}

}  // namespace
}  // namespace dsp::sim::passes
