// SPDX-License-Identifier: Apache-2.0
// The graph builder on the 2026 families, each against the published config in samples/models
// and the module code of transformers' modeling_<type>.py: which nodes a layer has, how they
// connect and which checkpoint tensor each reads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/graph/builder.h"
#include "sim/graph/text_format.h"
#include "tests/core/model/model_test_util.h"

namespace dsp::sim::graph {
namespace {

using dsp::testing::ParsePresetOrDie;

struct Built {
  ModelSpec spec;
  Graph graph;
  SymbolValues values;
};

Built Build(const std::string& file) {
  Built b{ParsePresetOrDie(file), Graph(), {}};
  Result<Graph> g = BuildModelGraph(b.spec);
  EXPECT_TRUE(g.ok()) << file << ": " << (g.ok() ? "" : g.error().message);
  if (g.ok()) b.graph = std::move(g).value();
  b.values = ModelSymbolValues(b.spec, 1, 4096);
  return b;
}

const Node& At(const Graph& g, const std::string& name) {
  static const Node kMissing{};
  const Node* n = g.Find(name);
  EXPECT_NE(n, nullptr) << "no node %" << name;
  return n != nullptr ? *n : kMissing;
}

std::string Args(const Node& n) {
  std::string out;
  for (const Node* a : n.args) out += (out.empty() ? "" : ",") + a->name;
  return out;
}

std::string ParamShape(const Node& n) { return n.param_shape ? ShapeToString(*n.param_shape) : ""; }
std::string OutShape(const Node& n) { return n.shape ? ShapeToString(*n.shape) : ""; }

int64_t Value(const Built& b, const char* symbol) {
  return SymExpr::Symbol(symbol).Evaluate(b.values).value();
}

bool AnyNodeIn(const Graph& g, const std::string& prefix, std::string_view op) {
  for (const Node* n : g) {
    if (n->name.starts_with(prefix) && n->op == op) return true;
  }
  return false;
}

// modeling_deepseek_v3.py DeepseekV3Attention.forward: q_b_proj(q_a_layernorm(q_a_proj(x))),
// split into q_pass / q_rot; kv_a_proj_with_mqa -> (k_pass latent, k_rot); kv_b_proj of the
// normed latent -> (k_pass, value); rotary on q_rot / k_rot; k_rot expanded over the heads.
TEST(GraphBuilderFamiliesTest, DeepSeekV3MultiHeadLatentAttention) {
  const Built b = Build("deepseek-v3.json");
  const Graph& g = b.graph;
  EXPECT_EQ(ParamShape(At(g, "layers_3_self_attn_q_a_proj")), "[QL, H]");
  EXPECT_EQ(Args(At(g, "layers_3_self_attn_q_a_layernorm")), "layers_3_self_attn_q_a_proj");
  EXPECT_EQ(ParamShape(At(g, "layers_3_self_attn_q_b_proj")), "[N*DQ, QL]");
  EXPECT_EQ(ParamShape(At(g, "layers_3_self_attn_kv_a_proj_with_mqa")), "[KLR, H]");
  EXPECT_EQ(ParamShape(At(g, "layers_3_self_attn_kv_a_layernorm")), "[KL]");
  EXPECT_EQ(Args(At(g, "layers_3_self_attn_kv_a_layernorm")), "layers_3_self_attn_kv_latent");
  EXPECT_EQ(ParamShape(At(g, "layers_3_self_attn_kv_b_proj")), "[N*DKV, KL]");
  EXPECT_EQ(OutShape(At(g, "layers_3_self_attn_k_pe")), "[B, 1, S, DR]");
  EXPECT_EQ(Args(At(g, "layers_3_self_attn_k_cat")), "layers_3_self_attn_k_nope,layers_3_self_attn_rotary_k");
  const Node& sdpa = At(g, "layers_3_self_attn_sdpa");
  EXPECT_EQ(Args(sdpa), "layers_3_self_attn_q_cat,layers_3_self_attn_k_cat,layers_3_self_attn_v,attention_mask");
  EXPECT_EQ(OutShape(sdpa), "[B, N, S, DV]");
  EXPECT_EQ(ParamShape(At(g, "layers_3_self_attn_o_proj")), "[H, N*DV]");
  // DeepSeek-V3 config: q_lora_rank 1536, kv_lora_rank 512, qk 128 + 64, v 128.
  EXPECT_EQ(Value(b, "QL"), 1536);
  EXPECT_EQ(Value(b, "KLR"), 576);
  EXPECT_EQ(Value(b, "DQ"), 192);
  EXPECT_EQ(Value(b, "DKV"), 256);
  EXPECT_EQ(Value(b, "DV"), 128);
}

// DeepseekV3MoE: gate (scores + e_score_correction_bias pick the experts), experts,
// shared_experts without a gate; first_k_dense_replace = 3 dense layers first.
TEST(GraphBuilderFamiliesTest, DeepSeekV3MoeWithSharedExpertsAndDenseFirstLayers) {
  const Built b = Build("deepseek-v3.json");
  const Graph& g = b.graph;
  EXPECT_EQ(g.Find("layers_2_mlp_experts"), nullptr);
  EXPECT_EQ(ParamShape(At(g, "layers_2_mlp_gate_proj")), "[F, H]");
  const Node& topk = At(g, "layers_3_mlp_top_k");
  EXPECT_EQ(topk.param, "model.layers.3.mlp.gate.e_score_correction_bias");
  EXPECT_EQ(Args(topk), "layers_3_mlp_gate");
  EXPECT_EQ(At(g, "layers_3_mlp_experts").param, "model.layers.3.mlp.experts.*");
  EXPECT_EQ(ParamShape(At(g, "layers_3_mlp_shared_experts_down_proj")), "[H, FS]");
  EXPECT_EQ(g.Find("layers_3_mlp_shared_expert_gate"), nullptr);
  EXPECT_EQ(Args(At(g, "layers_3_mlp_add")), "layers_3_mlp_experts,layers_3_mlp_shared_experts_down_proj");
  EXPECT_EQ(Value(b, "FS"), 2048);  // one shared expert of moe_intermediate_size 2048
}

TEST(GraphBuilderFamiliesTest, DeepSeekV2LiteHasAPlainQProj) {
  const Built b = Build("deepseek-v2-lite.json");  // q_lora_rank null
  EXPECT_EQ(b.graph.Find("layers_1_self_attn_q_a_proj"), nullptr);
  EXPECT_EQ(ParamShape(At(b.graph, "layers_1_self_attn_q_proj")), "[N*DQ, H]");
  EXPECT_EQ(Args(At(b.graph, "layers_1_self_attn_q_nope")), "layers_1_self_attn_q_proj");
  EXPECT_EQ(At(b.graph, "layers_1_mlp_top_k").param, "");  // V2 routes without a score bias
}

// GptOssAttention: sinks join the softmax; even layers slide over 128 tokens (layer_types);
// GptOssMLP: router (with bias) and the fused experts.
TEST(GraphBuilderFamiliesTest, GptOssSinksSlidingLayersAndRouter) {
  const Built b = Build("gpt-oss-20b.json");
  const Graph& g = b.graph;
  const Node& sliding = At(g, "layers_0_self_attn_sdpa");
  EXPECT_EQ(sliding.param, "model.layers.0.self_attn.sinks");
  EXPECT_EQ(ParamShape(sliding), "[N]");
  EXPECT_EQ(sliding.window, 128);
  EXPECT_EQ(At(g, "layers_1_self_attn_sdpa").window, 0);
  EXPECT_NE(PrintNode(sliding).find(", window=128}"), std::string::npos);
  EXPECT_EQ(At(g, "layers_0_mlp_router").param, "model.layers.0.mlp.router.weight");
  EXPECT_EQ(At(g, "layers_0_mlp_experts").param, "model.layers.0.mlp.experts.*");
  EXPECT_EQ(Args(At(g, "layers_0_residual_mlp")), "layers_0_residual_attn,layers_0_mlp_experts");
}

// Qwen3NextDecoderLayer: linear_attention layers run Qwen3NextGatedDeltaNet (no sdpa, no
// rotary), full_attention layers the gated attention (q_proj doubled, sigmoid gate after sdpa).
TEST(GraphBuilderFamiliesTest, Qwen3NextGatedDeltaNetAndGatedAttention) {
  const Built b = Build("qwen3-next-80b-a3b-thinking.json");
  const Graph& g = b.graph;
  EXPECT_FALSE(AnyNodeIn(g, "layers_0_", ops::kSdpa));
  EXPECT_FALSE(AnyNodeIn(g, "layers_0_", ops::kRotary));
  EXPECT_EQ(ParamShape(At(g, "layers_0_linear_attn_in_proj_qkvz")), "[LQKVZ, H]");
  EXPECT_EQ(ParamShape(At(g, "layers_0_linear_attn_in_proj_ba")), "[2*LV, H]");
  EXPECT_EQ(ParamShape(At(g, "layers_0_linear_attn_conv1d")), "[LC, 1, KC]");
  EXPECT_EQ(Args(At(g, "layers_0_linear_attn_conv1d")), "layers_0_linear_attn_qkv");
  EXPECT_EQ(At(g, "layers_0_linear_attn_decay").param, "model.layers.0.linear_attn.A_log");
  const Node& rule = At(g, "layers_0_linear_attn_delta_rule");
  EXPECT_EQ(rule.op, ops::kGatedDeltaRule);
  EXPECT_EQ(Args(rule), "layers_0_linear_attn_conv_act,layers_0_linear_attn_decay,layers_0_linear_attn_beta");
  EXPECT_EQ(Args(At(g, "layers_0_linear_attn_norm")), "layers_0_linear_attn_delta_rule,layers_0_linear_attn_z");
  EXPECT_EQ(ParamShape(At(g, "layers_0_linear_attn_out_proj")), "[H, LV*LVD]");
  // Qwen3-Next-80B: 16 key heads and 32 value heads of 128, conv kernel 4.
  EXPECT_EQ(Value(b, "LC"), 2 * 16 * 128 + 32 * 128);
  EXPECT_EQ(Value(b, "LQKVZ"), 2 * 16 * 128 + 2 * 32 * 128);
  // layer 3 is full attention
  EXPECT_EQ(ParamShape(At(g, "layers_3_self_attn_q_proj")), "[2*N*D, H]");
  EXPECT_EQ(Args(At(g, "layers_3_self_attn_gate_mul")), "layers_3_self_attn_sdpa,layers_3_self_attn_gate_sigmoid");
  EXPECT_EQ(Args(At(g, "layers_3_self_attn_o_proj")), "layers_3_self_attn_gate_mul");
  EXPECT_EQ(At(g, "layers_3_mlp_shared_expert_gate").op, ops::kLinear);
}

// Qwen3_5GatedDeltaNet replaces in_proj_qkvz / in_proj_ba by four projections; the multimodal
// checkpoint nests the language model under model.language_model.
TEST(GraphBuilderFamiliesTest, Qwen35SplitProjectionsUnderTheLanguageModel) {
  const Built b = Build("qwen3.5-27b.json");
  const Node& qkv = At(b.graph, "layers_0_linear_attn_in_proj_qkv");
  EXPECT_EQ(qkv.param, "model.language_model.layers.0.linear_attn.in_proj_qkv.weight");
  EXPECT_EQ(ParamShape(qkv), "[LC, H]");
  EXPECT_EQ(ParamShape(At(b.graph, "layers_0_linear_attn_in_proj_z")), "[LV*LVD, H]");
  EXPECT_EQ(ParamShape(At(b.graph, "layers_0_linear_attn_in_proj_b")), "[LV, H]");
  EXPECT_EQ(Args(At(b.graph, "layers_0_linear_attn_beta")), "layers_0_linear_attn_in_proj_b");
  EXPECT_EQ(b.graph.Find("layers_0_linear_attn_in_proj_qkvz"), nullptr);
}

// Phi3Attention / Phi3MLP: one qkv_proj and one gate_up_proj, sliced before use.
TEST(GraphBuilderFamiliesTest, Phi3FusedProjectionsAreSplit) {
  const Built b = Build("phi-3-mini-4k.json");
  const Graph& g = b.graph;
  EXPECT_EQ(ParamShape(At(g, "layers_0_self_attn_qkv_proj")), "[3*N*D, H]");
  EXPECT_EQ(OutShape(At(g, "layers_0_self_attn_q")), "[B, S, N*D]");
  EXPECT_EQ(Args(At(g, "layers_0_self_attn_rotary_k")), "layers_0_self_attn_k,position_ids");
  EXPECT_EQ(ParamShape(At(g, "layers_0_mlp_gate_up_proj")), "[2*F, H]");
  EXPECT_EQ(Args(At(g, "layers_0_mlp_act_fn")), "layers_0_mlp_gate");
  EXPECT_EQ(Args(At(g, "layers_0_mlp_mul")), "layers_0_mlp_act_fn,layers_0_mlp_up");
}

// GPT2Model: wte + wpe, LayerNorm, Conv1D c_attn (3h) and c_proj, GeLU MLP, no rotary; the head
// is tied to wte.
TEST(GraphBuilderFamiliesTest, Gpt2LearnedPositionsLayerNormAndTiedHead) {
  const Built b = Build("gpt2.json");
  const Graph& g = b.graph;
  EXPECT_EQ(Args(At(g, "embed_add")), "wte,wpe");
  EXPECT_EQ(ParamShape(At(g, "wpe")), "[L, H]");
  EXPECT_EQ(Value(b, "L"), 1024);
  EXPECT_EQ(At(g, "h_0_ln_1").op, ops::kLayerNorm);
  EXPECT_EQ(At(g, "h_0_attn_c_attn").param, "transformer.h.0.attn.c_attn.weight");
  EXPECT_EQ(OutShape(At(g, "h_0_attn_q")), "[B, N, S, D]");
  EXPECT_FALSE(AnyNodeIn(g, "h_", ops::kRotary));
  EXPECT_EQ(At(g, "h_0_mlp_act_fn").op, ops::kGelu);
  EXPECT_EQ(Args(At(g, "h_0_mlp_c_proj")), "h_0_mlp_act_fn");
  EXPECT_EQ(At(g, "ln_f").module, "transformer.ln_f");
  EXPECT_EQ(At(g, "lm_head").param, "transformer.wte.weight");
  EXPECT_EQ(LayerOfModule(At(g, "h_11_attn_c_attn").module), 11);
}

// GPTNeoXLayer (use_parallel_residual): x + attn(ln1(x)) + mlp(ln2(x)); embed_out head.
TEST(GraphBuilderFamiliesTest, GptNeoxParallelResidual) {
  const Built b = Build("pythia-160m.json");
  const Graph& g = b.graph;
  EXPECT_EQ(Args(At(g, "layers_0_post_attention_layernorm")), "embed_in");
  EXPECT_EQ(Args(At(g, "layers_0_residual_attn")), "embed_in,layers_0_attention_dense");
  EXPECT_EQ(Args(At(g, "layers_0_residual_mlp")), "layers_0_residual_attn,layers_0_mlp_dense_4h_to_h");
  EXPECT_EQ(At(g, "lm_head").param, "embed_out.weight");
  EXPECT_EQ(At(g, "final_layer_norm").op, ops::kLayerNorm);
  EXPECT_TRUE(AnyNodeIn(g, "layers_0_", ops::kRotary));
}

// FalconDecoderLayer, Falcon-7B (multi_query, parallel_attn, one input_layernorm): the MLP
// reads the same normed input as attention; query_key_value holds (N + 2) heads of 64.
TEST(GraphBuilderFamiliesTest, FalconSharedNormAndMultiQueryQkv) {
  const Built b = Build("falcon-7b.json");
  const Graph& g = b.graph;
  EXPECT_EQ(Args(At(g, "h_0_mlp_dense_h_to_4h")), "h_0_input_layernorm");
  EXPECT_EQ(ParamShape(At(g, "h_0_self_attention_query_key_value")), "[QKV, H]");
  EXPECT_EQ(Value(b, "QKV"), (71 + 2) * 64);
  EXPECT_EQ(g.Find("h_0_post_attention_layernorm"), nullptr);
}

// BloomModel: word_embeddings_layernorm, ALiBi (no rotary), fused query_key_value.
TEST(GraphBuilderFamiliesTest, BloomEmbeddingNormAndAlibi) {
  const Built b = Build("bloom-176b.json");
  EXPECT_EQ(Args(At(b.graph, "word_embeddings_layernorm")), "word_embeddings");
  EXPECT_FALSE(AnyNodeIn(b.graph, "h_", ops::kRotary));
  EXPECT_EQ(ParamShape(At(b.graph, "h_0_self_attention_query_key_value")), "[3*N*D, H]");
}

// Gemma2DecoderLayer: post_attention_layernorm normalises the attention output,
// pre/post_feedforward_layernorm wrap the GeGLU MLP; even layers slide over 4096 tokens.
TEST(GraphBuilderFamiliesTest, GemmaFourNormsGeluAndSlidingLayers) {
  const Built b = Build("gemma-2-9b-it.json");
  const Graph& g = b.graph;
  EXPECT_EQ(Args(At(g, "layers_0_post_attention_layernorm")), "layers_0_self_attn_o_proj");
  EXPECT_EQ(Args(At(g, "layers_0_residual_attn")), "embed_tokens,layers_0_post_attention_layernorm");
  EXPECT_EQ(Args(At(g, "layers_0_pre_feedforward_layernorm")), "layers_0_residual_attn");
  EXPECT_EQ(Args(At(g, "layers_0_post_feedforward_layernorm")), "layers_0_mlp_down_proj");
  EXPECT_EQ(At(g, "layers_0_mlp_act_fn").op, ops::kGelu);
  EXPECT_EQ(At(g, "layers_0_self_attn_sdpa").window, 4096);
  EXPECT_EQ(At(g, "layers_1_self_attn_sdpa").window, 0);
}

// Llama4TextDecoderLayer: chunked attention with rope, every 4th layer NoPE full attention with
// attn_temperature_tuning; Llama4TextMoe: router, fused experts, shared_expert.
TEST(GraphBuilderFamiliesTest, Llama4ChunkedAndNopeLayers) {
  const Built b = Build("llama-4-scout-17b-16e.json");
  const Graph& g = b.graph;
  EXPECT_EQ(At(g, "layers_0_self_attn_sdpa").chunk, 8192);
  EXPECT_TRUE(AnyNodeIn(g, "layers_0_self_attn", ops::kRotary));
  EXPECT_EQ(At(g, "layers_3_self_attn_sdpa").chunk, 0);
  EXPECT_FALSE(AnyNodeIn(g, "layers_3_self_attn", ops::kRotary));
  EXPECT_EQ(Args(At(g, "layers_3_self_attn_attn_temperature")), "layers_3_self_attn_q_proj,position_ids");
  const Node& router = At(g, "layers_0_feed_forward_router");
  EXPECT_EQ(router.param, "language_model.model.layers.0.feed_forward.router.weight");
  EXPECT_EQ(Args(At(g, "layers_0_feed_forward_add")),
            "layers_0_feed_forward_experts,layers_0_feed_forward_shared_expert_down_proj");
  EXPECT_EQ(LayerOfModule(router.module), 0);
}

}  // namespace
}  // namespace dsp::sim::graph
