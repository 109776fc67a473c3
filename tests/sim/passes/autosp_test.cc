// SPDX-License-Identifier: Apache-2.0
// AutoSP: text-in/text-out on tiny-llama, the nothing-to-do case, every rejection, four
// all-to-alls per attention layer, and a verified graph on every preset.
#include "sim/passes/autosp.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/graph/text_format.h"
#include "sim/graph/verifier.h"
#include "tests/sim/passes/pass_test_util.h"

namespace dsp::sim::passes {
namespace {

using testing::BuildPreset;
using testing::CountOp;
using testing::ModuleLines;

AutoSpOptions TinyOptions(int64_t sp) {
  return AutoSpOptions::ForModel(dsp::testing::ParsePresetOrDie("tiny-llama.json"), sp);
}

TEST(AutoSpTest, TinyLlamaLayerPrintsAsExpected) {
  graph::Graph g = BuildPreset("tiny-llama.json");
  AutoSpPass pass(TinyOptions(2));
  Result<bool> r = pass.Run(g);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(*r);
  ASSERT_TRUE(graph::VerifyGraph(g).ok()) << graph::VerifyGraph(g).error().message;
  const std::string expected = R"(%layers_0_input_layernorm = rms_norm(%embed_tokens) {module="model.layers.0.input_layernorm", param="model.layers.0.input_layernorm.weight", param_shape=[H], shape=[B, S/P, H], group=""}
%layers_0_self_attn_q_proj = linear(%layers_0_input_layernorm) {module="model.layers.0.self_attn.q_proj", param="model.layers.0.self_attn.q_proj.weight", param_shape=[N*D, H], shape=[B, S/P, N*D], group=""}
%layers_0_self_attn_k_proj = linear(%layers_0_input_layernorm) {module="model.layers.0.self_attn.k_proj", param="model.layers.0.self_attn.k_proj.weight", param_shape=[G*D, H], shape=[B, S/P, G*D], group=""}
%layers_0_self_attn_v_proj = linear(%layers_0_input_layernorm) {module="model.layers.0.self_attn.v_proj", param="model.layers.0.self_attn.v_proj.weight", param_shape=[G*D, H], shape=[B, S/P, G*D], group=""}
%a2a_v_0 = all_to_all(%layers_0_self_attn_v_proj) {module="model.layers.0.self_attn", param="", shape=[B, G/P, S, D], group="sp"}
%layers_0_self_attn_rotary_q = rotary(%layers_0_self_attn_q_proj, %slice_position_ids) {module="model.layers.0.self_attn", param="", shape=[B, N, S/P, D], group=""}
%a2a_q_0 = all_to_all(%layers_0_self_attn_rotary_q) {module="model.layers.0.self_attn", param="", shape=[B, N/P, S, D], group="sp"}
%layers_0_self_attn_rotary_k = rotary(%layers_0_self_attn_k_proj, %slice_position_ids) {module="model.layers.0.self_attn", param="", shape=[B, G, S/P, D], group=""}
%a2a_k_0 = all_to_all(%layers_0_self_attn_rotary_k) {module="model.layers.0.self_attn", param="", shape=[B, G/P, S, D], group="sp"}
%layers_0_self_attn_sdpa = sdpa(%a2a_q_0, %a2a_k_0, %a2a_v_0, %attention_mask) {module="model.layers.0.self_attn", param="", shape=[B, N/P, S, D], group=""}
%a2a_o_0 = all_to_all(%layers_0_self_attn_sdpa) {module="model.layers.0.self_attn", param="", shape=[B, N, S/P, D], group="sp"}
%layers_0_self_attn_o_proj = linear(%a2a_o_0) {module="model.layers.0.self_attn.o_proj", param="model.layers.0.self_attn.o_proj.weight", param_shape=[H, N*D], shape=[B, S/P, H], group=""}
%layers_0_residual_attn = add(%embed_tokens, %layers_0_self_attn_o_proj) {module="model.layers.0", param="", shape=[B, S/P, H], group=""}
%layers_0_post_attention_layernorm = rms_norm(%layers_0_residual_attn) {module="model.layers.0.post_attention_layernorm", param="model.layers.0.post_attention_layernorm.weight", param_shape=[H], shape=[B, S/P, H], group=""}
%layers_0_mlp_gate_proj = linear(%layers_0_post_attention_layernorm) {module="model.layers.0.mlp.gate_proj", param="model.layers.0.mlp.gate_proj.weight", param_shape=[F, H], shape=[B, S/P, F], group=""}
%layers_0_mlp_up_proj = linear(%layers_0_post_attention_layernorm) {module="model.layers.0.mlp.up_proj", param="model.layers.0.mlp.up_proj.weight", param_shape=[F, H], shape=[B, S/P, F], group=""}
%layers_0_mlp_act_fn = silu(%layers_0_mlp_gate_proj) {module="model.layers.0.mlp", param="", shape=[B, S/P, F], group=""}
%layers_0_mlp_mul = mul(%layers_0_mlp_act_fn, %layers_0_mlp_up_proj) {module="model.layers.0.mlp", param="", shape=[B, S/P, F], group=""}
%layers_0_mlp_down_proj = linear(%layers_0_mlp_mul) {module="model.layers.0.mlp.down_proj", param="model.layers.0.mlp.down_proj.weight", param_shape=[H, F], shape=[B, S/P, H], group=""}
%layers_0_residual_mlp = add(%layers_0_residual_attn, %layers_0_mlp_down_proj) {module="model.layers.0", param="", shape=[B, S/P, H], group=""}
)";
  EXPECT_EQ(ModuleLines(g, "model.layers.0"), expected);
}

TEST(AutoSpTest, SlicesSequenceInputsButNotTheMask) {
  graph::Graph g = BuildPreset("tiny-llama.json");
  AutoSpPass pass(TinyOptions(2));
  ASSERT_TRUE(pass.Run(g).ok());
  std::string head;
  int lines = 0;
  for (const graph::Node* n : g) {
    if (++lines > 8) break;
    head += graph::PrintNode(*n) + "\n";
  }
  const std::string expected = R"(%input_ids = placeholder() {module="", param="", shape=[B, S], group=""}
%slice_input_ids = slice_seq(%input_ids) {module="", param="", shape=[B, S/P], group=""}
%labels = placeholder() {module="", param="", shape=[B, S], group=""}
%slice_labels = slice_seq(%labels) {module="", param="", shape=[B, S/P], group=""}
%position_ids = placeholder() {module="", param="", shape=[B, S], group=""}
%slice_position_ids = slice_seq(%position_ids) {module="", param="", shape=[B, S/P], group=""}
%attention_mask = placeholder() {module="", param="", shape=[B, 1, S, S], group=""}
%embed_tokens = embedding(%slice_input_ids) {module="model.embed_tokens", param="model.embed_tokens.weight", param_shape=[V, H], shape=[B, S/P, H], group=""}
)";
  EXPECT_EQ(head, expected);
  EXPECT_EQ(PrintNode(*g.Find("loss")),
            R"(%loss = cross_entropy(%lm_head, %slice_labels) {module="", param="", shape=[], group=""})");
}

TEST(AutoSpTest, SpOneChangesNothing) {
  graph::Graph g = BuildPreset("tiny-llama.json");
  const std::string before = graph::PrintGraph(g);
  AutoSpPass pass(TinyOptions(1));
  Result<bool> r = pass.Run(g);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  EXPECT_EQ(graph::PrintGraph(g), before);
}

TEST(AutoSpTest, FourAllToAllsPerAttentionLayer) {
  for (const char* file : dsp::testing::kModelPresets) {
    SCOPED_TRACE(file);
    const ModelSpec spec = dsp::testing::ParsePresetOrDie(file);
    graph::Graph g = BuildPreset(file);
    AutoSpPass pass(AutoSpOptions::ForModel(spec, 2));
    Result<bool> r = pass.Run(g);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(graph::VerifyGraph(g).ok()) << graph::VerifyGraph(g).error().message;
    for (int64_t l = 0; l < spec.num_hidden_layers; ++l) {
      const std::string layer = "model.layers." + std::to_string(l) + ".";
      EXPECT_EQ(CountOp(g, graph::ops::kAllToAll, layer), 4) << layer;
    }
    EXPECT_EQ(CountOp(g, graph::ops::kAllToAll, ""), 4 * spec.num_hidden_layers);
    EXPECT_EQ(CountOp(g, "slice_seq", ""), 3);
  }
}

void ExpectRejected(AutoSpOptions options, const std::string& fragment,
                    const std::string& file = "tiny-llama.json") {
  graph::Graph g = BuildPreset(file);
  const std::string before = graph::PrintGraph(g);
  AutoSpPass pass(std::move(options));
  Result<bool> r = pass.Run(g);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(fragment), std::string::npos) << r.error().message;
  EXPECT_EQ(graph::PrintGraph(g), before) << "a rejected pass must not rewrite partially";
}

// Eager Ulysses (runtime/sequence_parallel/ulysses_sp.py UlyssesSPAttentionHF, 0.19.6):
// kv_replication_factor = sp // kv heads, K and V repeat_interleave'd before the all-to-all so
// every rank gets one KV head. DeepCompile's AutoSP (sp_compile.py) moves what SDPA receives: all N
// heads when transformers repeats K/V under an attention mask (validate: sp-autosp-kv-heads).
TEST(AutoSpTest, FewerKvHeadsThanSpAreRepeated) {
  for (const bool compiled : {false, true}) {
    graph::Graph g = BuildPreset("tiny-llama.json");  // 4 heads, 2 KV heads
    AutoSpOptions o = TinyOptions(4);
    o.compiled = compiled;
    Result<bool> r = AutoSpPass(o).Run(g);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_TRUE(graph::VerifyGraph(g).ok());
    const graph::Node* repeat = g.Find("repeat_k_0");
    ASSERT_NE(repeat, nullptr) << compiled;
    EXPECT_EQ(graph::ShapeToString(*repeat->shape), compiled ? "[B, N, S/P, D]" : "[B, P, S/P, D]");
    EXPECT_EQ(graph::ShapeToString(*g.Find("a2a_k_0")->shape), compiled ? "[B, N/P, S, D]" : "[B, 1, S, D]");
    EXPECT_NE(g.Find("repeat_v_0"), nullptr);
  }
  // KV heads that divide sp need no repeat.
  graph::Graph g = BuildPreset("tiny-llama.json");
  ASSERT_TRUE(AutoSpPass(TinyOptions(2)).Run(g).ok());
  EXPECT_EQ(g.Find("repeat_k_0"), nullptr);
}

TEST(AutoSpTest, Rejections) {
  ExpectRejected(TinyOptions(8), "attention heads (4) not divisible by sequence_parallel_size 8");
  // Eager Ulysses needs the KV heads to divide sp or sp to divide them (ulysses_sp.py).
  AutoSpOptions odd_kv = TinyOptions(2);
  odd_kv.num_kv_heads = 3;
  ExpectRejected(odd_kv, "key/value heads (3) not divisible by sequence_parallel_size 2: DeepSpeed's Ulysses");
  AutoSpOptions odd_seq = TinyOptions(2);
  odd_seq.seq_len = 1001;
  ExpectRejected(odd_seq, "sequence length 1001 not divisible by sequence_parallel_size 2");
  ExpectRejected(TinyOptions(0), "must be >= 1");
}

TEST(AutoSpTest, RejectsGraphWithoutSdpa) {
  Result<graph::Graph> g = graph::ParseGraph(
      "%input_ids = placeholder() {shape=[B, S]}\n"
      "%x = embedding(%input_ids) {shape=[B, S, H]}\n"
      "%output = output(%x)\n");
  ASSERT_TRUE(g.ok()) << g.error().message;
  const std::string before = graph::PrintGraph(*g);
  AutoSpPass pass(TinyOptions(2));
  Result<bool> r = pass.Run(*g);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no sdpa node"), std::string::npos) << r.error().message;
  EXPECT_EQ(graph::PrintGraph(*g), before);
}

}  // namespace
}  // namespace dsp::sim::passes
