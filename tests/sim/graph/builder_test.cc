// SPDX-License-Identifier: Apache-2.0
// The model graph builder: text-in/text-out against the tiny presets, parameter names against
// ParameterTensors, every preset verifies, round-trips and evaluates.
#include "sim/graph/builder.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/graph/text_format.h"
#include "sim/graph/verifier.h"
#include "tests/core/model/model_test_util.h"

namespace dsp::sim::graph {
namespace {

using dsp::testing::ParsePresetOrDie;

Graph BuildPreset(const std::string& file) {
  Result<Graph> g = BuildModelGraph(ParsePresetOrDie(file));
  EXPECT_TRUE(g.ok()) << g.error().message;
  return g.ok() ? std::move(g).value() : Graph();
}

// The printed lines of the nodes whose name starts with `prefix`.
std::string LinesStartingWith(const Graph& g, const std::string& prefix) {
  std::string out;
  for (const Node* n : g) {
    if (n->name.starts_with(prefix)) out += PrintNode(*n) + "\n";
  }
  return out;
}

TEST(GraphBuilderTest, TinyLlamaPrintsAsExpected) {
  const std::string expected = R"(%input_ids = placeholder() {module="", param="", shape=[B, S], group=""}
%labels = placeholder() {module="", param="", shape=[B, S], group=""}
%position_ids = placeholder() {module="", param="", shape=[B, S], group=""}
%attention_mask = placeholder() {module="", param="", shape=[B, 1, S, S], group=""}
%embed_tokens = embedding(%input_ids) {module="model.embed_tokens", param="model.embed_tokens.weight", param_shape=[V, H], shape=[B, S, H], group=""}
%layers_0_input_layernorm = rms_norm(%embed_tokens) {module="model.layers.0.input_layernorm", param="model.layers.0.input_layernorm.weight", param_shape=[H], shape=[B, S, H], group=""}
%layers_0_self_attn_q_proj = linear(%layers_0_input_layernorm) {module="model.layers.0.self_attn.q_proj", param="model.layers.0.self_attn.q_proj.weight", param_shape=[N*D, H], shape=[B, S, N*D], group=""}
%layers_0_self_attn_k_proj = linear(%layers_0_input_layernorm) {module="model.layers.0.self_attn.k_proj", param="model.layers.0.self_attn.k_proj.weight", param_shape=[G*D, H], shape=[B, S, G*D], group=""}
%layers_0_self_attn_v_proj = linear(%layers_0_input_layernorm) {module="model.layers.0.self_attn.v_proj", param="model.layers.0.self_attn.v_proj.weight", param_shape=[G*D, H], shape=[B, S, G*D], group=""}
%layers_0_self_attn_rotary_q = rotary(%layers_0_self_attn_q_proj, %position_ids) {module="model.layers.0.self_attn", param="", shape=[B, N, S, D], group=""}
%layers_0_self_attn_rotary_k = rotary(%layers_0_self_attn_k_proj, %position_ids) {module="model.layers.0.self_attn", param="", shape=[B, G, S, D], group=""}
%layers_0_self_attn_sdpa = sdpa(%layers_0_self_attn_rotary_q, %layers_0_self_attn_rotary_k, %layers_0_self_attn_v_proj, %attention_mask) {module="model.layers.0.self_attn", param="", shape=[B, N, S, D], group=""}
%layers_0_self_attn_o_proj = linear(%layers_0_self_attn_sdpa) {module="model.layers.0.self_attn.o_proj", param="model.layers.0.self_attn.o_proj.weight", param_shape=[H, N*D], shape=[B, S, H], group=""}
%layers_0_residual_attn = add(%embed_tokens, %layers_0_self_attn_o_proj) {module="model.layers.0", param="", shape=[B, S, H], group=""}
%layers_0_post_attention_layernorm = rms_norm(%layers_0_residual_attn) {module="model.layers.0.post_attention_layernorm", param="model.layers.0.post_attention_layernorm.weight", param_shape=[H], shape=[B, S, H], group=""}
%layers_0_mlp_gate_proj = linear(%layers_0_post_attention_layernorm) {module="model.layers.0.mlp.gate_proj", param="model.layers.0.mlp.gate_proj.weight", param_shape=[F, H], shape=[B, S, F], group=""}
%layers_0_mlp_up_proj = linear(%layers_0_post_attention_layernorm) {module="model.layers.0.mlp.up_proj", param="model.layers.0.mlp.up_proj.weight", param_shape=[F, H], shape=[B, S, F], group=""}
%layers_0_mlp_act_fn = silu(%layers_0_mlp_gate_proj) {module="model.layers.0.mlp", param="", shape=[B, S, F], group=""}
%layers_0_mlp_mul = mul(%layers_0_mlp_act_fn, %layers_0_mlp_up_proj) {module="model.layers.0.mlp", param="", shape=[B, S, F], group=""}
%layers_0_mlp_down_proj = linear(%layers_0_mlp_mul) {module="model.layers.0.mlp.down_proj", param="model.layers.0.mlp.down_proj.weight", param_shape=[H, F], shape=[B, S, H], group=""}
%layers_0_residual_mlp = add(%layers_0_residual_attn, %layers_0_mlp_down_proj) {module="model.layers.0", param="", shape=[B, S, H], group=""}
%layers_1_input_layernorm = rms_norm(%layers_0_residual_mlp) {module="model.layers.1.input_layernorm", param="model.layers.1.input_layernorm.weight", param_shape=[H], shape=[B, S, H], group=""}
%layers_1_self_attn_q_proj = linear(%layers_1_input_layernorm) {module="model.layers.1.self_attn.q_proj", param="model.layers.1.self_attn.q_proj.weight", param_shape=[N*D, H], shape=[B, S, N*D], group=""}
%layers_1_self_attn_k_proj = linear(%layers_1_input_layernorm) {module="model.layers.1.self_attn.k_proj", param="model.layers.1.self_attn.k_proj.weight", param_shape=[G*D, H], shape=[B, S, G*D], group=""}
%layers_1_self_attn_v_proj = linear(%layers_1_input_layernorm) {module="model.layers.1.self_attn.v_proj", param="model.layers.1.self_attn.v_proj.weight", param_shape=[G*D, H], shape=[B, S, G*D], group=""}
%layers_1_self_attn_rotary_q = rotary(%layers_1_self_attn_q_proj, %position_ids) {module="model.layers.1.self_attn", param="", shape=[B, N, S, D], group=""}
%layers_1_self_attn_rotary_k = rotary(%layers_1_self_attn_k_proj, %position_ids) {module="model.layers.1.self_attn", param="", shape=[B, G, S, D], group=""}
%layers_1_self_attn_sdpa = sdpa(%layers_1_self_attn_rotary_q, %layers_1_self_attn_rotary_k, %layers_1_self_attn_v_proj, %attention_mask) {module="model.layers.1.self_attn", param="", shape=[B, N, S, D], group=""}
%layers_1_self_attn_o_proj = linear(%layers_1_self_attn_sdpa) {module="model.layers.1.self_attn.o_proj", param="model.layers.1.self_attn.o_proj.weight", param_shape=[H, N*D], shape=[B, S, H], group=""}
%layers_1_residual_attn = add(%layers_0_residual_mlp, %layers_1_self_attn_o_proj) {module="model.layers.1", param="", shape=[B, S, H], group=""}
%layers_1_post_attention_layernorm = rms_norm(%layers_1_residual_attn) {module="model.layers.1.post_attention_layernorm", param="model.layers.1.post_attention_layernorm.weight", param_shape=[H], shape=[B, S, H], group=""}
%layers_1_mlp_gate_proj = linear(%layers_1_post_attention_layernorm) {module="model.layers.1.mlp.gate_proj", param="model.layers.1.mlp.gate_proj.weight", param_shape=[F, H], shape=[B, S, F], group=""}
%layers_1_mlp_up_proj = linear(%layers_1_post_attention_layernorm) {module="model.layers.1.mlp.up_proj", param="model.layers.1.mlp.up_proj.weight", param_shape=[F, H], shape=[B, S, F], group=""}
%layers_1_mlp_act_fn = silu(%layers_1_mlp_gate_proj) {module="model.layers.1.mlp", param="", shape=[B, S, F], group=""}
%layers_1_mlp_mul = mul(%layers_1_mlp_act_fn, %layers_1_mlp_up_proj) {module="model.layers.1.mlp", param="", shape=[B, S, F], group=""}
%layers_1_mlp_down_proj = linear(%layers_1_mlp_mul) {module="model.layers.1.mlp.down_proj", param="model.layers.1.mlp.down_proj.weight", param_shape=[H, F], shape=[B, S, H], group=""}
%layers_1_residual_mlp = add(%layers_1_residual_attn, %layers_1_mlp_down_proj) {module="model.layers.1", param="", shape=[B, S, H], group=""}
%norm = rms_norm(%layers_1_residual_mlp) {module="model.norm", param="model.norm.weight", param_shape=[H], shape=[B, S, H], group=""}
%lm_head = linear(%norm) {module="lm_head", param="lm_head.weight", param_shape=[V, H], shape=[B, S, V], group=""}
%loss = cross_entropy(%lm_head, %labels) {module="", param="", shape=[], group=""}
%output = output(%loss) {module="", param="", group=""}
)";
  EXPECT_EQ(PrintGraph(BuildPreset("tiny-llama.json")), expected);
}

TEST(GraphBuilderTest, TinyMoeLayerHasRouterTopKAndOneExpertsNode) {
  // qwen3_moe: q_norm/k_norm before rotary, every layer MoE, no shared expert.
  const Graph g = BuildPreset("tiny-moe.json");
  const std::string expected = R"(%layers_0_self_attn_q_norm = rms_norm(%layers_0_self_attn_q_proj) {module="model.layers.0.self_attn.q_norm", param="model.layers.0.self_attn.q_norm.weight", param_shape=[D], shape=[B, N, S, D], group=""}
%layers_0_self_attn_k_norm = rms_norm(%layers_0_self_attn_k_proj) {module="model.layers.0.self_attn.k_norm", param="model.layers.0.self_attn.k_norm.weight", param_shape=[D], shape=[B, G, S, D], group=""}
%layers_0_mlp_gate = router(%layers_0_post_attention_layernorm) {module="model.layers.0.mlp.gate", param="model.layers.0.mlp.gate.weight", param_shape=[E, H], shape=[B*S, E], group=""}
%layers_0_mlp_top_k = top_k(%layers_0_mlp_gate) {module="model.layers.0.mlp", param="", shape=[B*S, K], group=""}
%layers_0_mlp_experts = experts(%layers_0_post_attention_layernorm, %layers_0_mlp_top_k) {module="model.layers.0.mlp.experts", param="model.layers.0.mlp.experts.*", param_shape=[E, 3, FE, H], shape=[B, S, H], group=""}
%layers_0_residual_mlp = add(%layers_0_residual_attn, %layers_0_mlp_experts) {module="model.layers.0", param="", shape=[B, S, H], group=""}
)";
  EXPECT_EQ(LinesStartingWith(g, "layers_0_self_attn_q_norm") +
                LinesStartingWith(g, "layers_0_self_attn_k_norm") +
                LinesStartingWith(g, "layers_0_mlp") +
                LinesStartingWith(g, "layers_0_residual_mlp"),
            expected);
  EXPECT_EQ(g.size(), 41u);
}

TEST(GraphBuilderTest, QwenSharedExpertIsGatedBySigmoid) {
  const Graph g = BuildPreset("qwen2-moe-a2.7b.json");
  EXPECT_EQ(LinesStartingWith(g, "layers_0_mlp_shared_expert_"),
            R"(%layers_0_mlp_shared_expert_gate_proj = linear(%layers_0_post_attention_layernorm) {module="model.layers.0.mlp.shared_expert.gate_proj", param="model.layers.0.mlp.shared_expert.gate_proj.weight", param_shape=[FS, H], shape=[B, S, FS], group=""}
%layers_0_mlp_shared_expert_up_proj = linear(%layers_0_post_attention_layernorm) {module="model.layers.0.mlp.shared_expert.up_proj", param="model.layers.0.mlp.shared_expert.up_proj.weight", param_shape=[FS, H], shape=[B, S, FS], group=""}
%layers_0_mlp_shared_expert_act_fn = silu(%layers_0_mlp_shared_expert_gate_proj) {module="model.layers.0.mlp.shared_expert", param="", shape=[B, S, FS], group=""}
%layers_0_mlp_shared_expert_mul = mul(%layers_0_mlp_shared_expert_act_fn, %layers_0_mlp_shared_expert_up_proj) {module="model.layers.0.mlp.shared_expert", param="", shape=[B, S, FS], group=""}
%layers_0_mlp_shared_expert_down_proj = linear(%layers_0_mlp_shared_expert_mul) {module="model.layers.0.mlp.shared_expert.down_proj", param="model.layers.0.mlp.shared_expert.down_proj.weight", param_shape=[H, FS], shape=[B, S, H], group=""}
%layers_0_mlp_shared_expert_gate = linear(%layers_0_post_attention_layernorm) {module="model.layers.0.mlp.shared_expert_gate", param="model.layers.0.mlp.shared_expert_gate.weight", param_shape=[1, H], shape=[B, S, 1], group=""}
%layers_0_mlp_shared_expert_sigmoid = sigmoid(%layers_0_mlp_shared_expert_gate) {module="model.layers.0.mlp", param="", shape=[B, S, 1], group=""}
%layers_0_mlp_shared_expert_scale = mul(%layers_0_mlp_shared_expert_sigmoid, %layers_0_mlp_shared_expert_down_proj) {module="model.layers.0.mlp", param="", shape=[B, S, H], group=""}
)");
  EXPECT_EQ(PrintNode(*g.Find("layers_0_mlp_add")),
            R"(%layers_0_mlp_add = add(%layers_0_mlp_experts, %layers_0_mlp_shared_expert_scale) {module="model.layers.0.mlp", param="", shape=[B, S, H], group=""})");
}

TEST(GraphBuilderTest, MixtralUsesBlockSparseMoeNames) {
  const Graph g = BuildPreset("mixtral-8x7b.json");
  ASSERT_NE(g.Find("layers_31_block_sparse_moe_gate"), nullptr);
  EXPECT_EQ(g.Find("layers_31_block_sparse_moe_gate")->param,
            "model.layers.31.block_sparse_moe.gate.weight");
  EXPECT_EQ(g.Find("layers_31_block_sparse_moe_experts")->param,
            "model.layers.31.block_sparse_moe.experts.*");
}

// Every sample model: the llama-family presets and one published config per 2026 family.
std::vector<const char*> AllPresets() {
  std::vector<const char*> files(std::begin(dsp::testing::kModelPresets),
                                 std::end(dsp::testing::kModelPresets));
  files.insert(files.end(), std::begin(dsp::testing::kFamilyPresets),
               std::end(dsp::testing::kFamilyPresets));
  return files;
}

TEST(GraphBuilderTest, EveryParamIsACheckpointTensor) {
  for (const char* file : AllPresets()) {
    const ModelSpec spec = ParsePresetOrDie(file);
    std::set<std::string> names;
    for (const ParamTensor& t : ParameterTensors(spec)) names.insert(t.name);
    std::set<std::string> read;
    for (const Node* n : BuildPreset(file)) {
      if (n->param.empty()) continue;
      if (n->param.ends_with(".*")) {
        // The experts glob covers every tensor under the prefix.
        const std::string prefix = n->param.substr(0, n->param.size() - 1);
        for (auto it = names.lower_bound(prefix); it != names.end() && it->starts_with(prefix);
             ++it) {
          read.insert(*it);
        }
        continue;
      }
      EXPECT_TRUE(names.count(n->param)) << file << ": " << n->name << " reads " << n->param;
      read.insert(n->param);
    }
    // Every weight is read by some node; biases ride on their linear's weight (and gpt_oss's
    // expert biases on the experts glob, Gated DeltaNet's dt_bias on the decay that reads A_log).
    for (const std::string& name : names) {
      if (name.ends_with("bias")) continue;
      EXPECT_TRUE(read.count(name)) << file << ": no node reads " << name;
    }
  }
}

// The graph's param_shape is what the ZeRO pass gathers and reduces: its element count must be
// the checkpoint tensor's (for the experts glob, the layer's expert weights without biases).
TEST(GraphBuilderTest, ParamShapesHoldTheCheckpointElementCounts) {
  for (const char* file : AllPresets()) {
    SCOPED_TRACE(file);
    const ModelSpec spec = ParsePresetOrDie(file);
    std::map<std::string, int64_t> numel;
    for (const ParamTensor& t : ParameterTensors(spec)) numel[t.name] = t.numel();
    const SymbolValues values = ModelSymbolValues(spec, 1, 16);
    for (const Node* n : BuildPreset(file)) {
      if (n->param.empty()) continue;
      ASSERT_TRUE(n->param_shape) << n->name;
      int64_t expected = 0;
      if (n->param.ends_with(".*")) {
        const std::string prefix = n->param.substr(0, n->param.size() - 1);
        for (auto it = numel.lower_bound(prefix); it != numel.end() && it->first.starts_with(prefix);
             ++it) {
          if (!it->first.ends_with("bias")) expected += it->second;
        }
      } else {
        expected = numel[n->param];
      }
      int64_t got = 1;
      for (const SymExpr& d : *n->param_shape) got *= d.Evaluate(values).value();
      EXPECT_EQ(got, expected) << n->name << " " << ShapeToString(*n->param_shape);
    }
  }
}

TEST(GraphBuilderTest, EveryPresetVerifiesRoundTripsAndEvaluates) {
  for (const char* file : AllPresets()) {
    const ModelSpec spec = ParsePresetOrDie(file);
    const Graph g = BuildPreset(file);
    Status verified = VerifyGraph(g);
    EXPECT_TRUE(verified.ok()) << file << ": " << verified.error().message;
    const std::string text = PrintGraph(g);
    Result<Graph> parsed = ParseGraph(text);
    ASSERT_TRUE(parsed.ok()) << file << ": " << parsed.error().message;
    EXPECT_EQ(PrintGraph(*parsed), text) << file;
    const SymbolValues values = ModelSymbolValues(spec, 2, 128);
    for (const Node* n : g) {
      if (!n->shape) continue;
      for (const SymExpr& dim : *n->shape) {
        Result<int64_t> v = dim.Evaluate(values);
        EXPECT_TRUE(v.ok() && *v > 0) << file << ": " << n->name << " " << dim.ToString();
      }
    }
  }
}

TEST(GraphBuilderTest, Llama70bHasSixteenNodesPerLayer) {
  const Graph g = BuildPreset("llama-3-70b.json");
  EXPECT_EQ(g.size(), 4u + 1u + 80u * 16u + 4u);
  const SymbolValues values = ModelSymbolValues(ParsePresetOrDie("llama-3-70b.json"), 1, 8192);
  EXPECT_EQ(g.Find("layers_79_self_attn_k_proj")->shape->back().Evaluate(values).value(), 1024);
  EXPECT_EQ(g.Find("lm_head")->shape->back().Evaluate(values).value(), 128256);
}

TEST(GraphBuilderTest, TiedEmbeddingsReadTheEmbeddingWeight) {
  ModelSpec spec = ParsePresetOrDie("tiny-llama.json");
  spec.tie_word_embeddings = true;
  Result<Graph> g = BuildModelGraph(spec);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->Find("lm_head")->param, "model.embed_tokens.weight");
}

TEST(GraphBuilderTest, EmptyModelIsAnError) {
  Result<Graph> g = BuildModelGraph(ModelSpec{});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "model has no layers, hidden size or attention heads to build a graph from");
}

}  // namespace
}  // namespace dsp::sim::graph
