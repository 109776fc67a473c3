// SPDX-License-Identifier: Apache-2.0
// ParseHfConfig (fields, defaults, errors) and ParameterTensors naming.
#include "core/model/model_spec.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>

#include "tests/core/model/model_test_util.h"

namespace dsp {
namespace {

using testing::LoadModelPreset;
using testing::ParsePresetOrDie;

// name -> tensor, for spot checks.
std::map<std::string, ParamTensor> ByName(const ModelSpec& spec) {
  std::map<std::string, ParamTensor> out;
  for (ParamTensor& t : ParameterTensors(spec)) out.emplace(t.name, std::move(t));
  return out;
}

std::string ErrorOf(const Json& config) {
  Result<ModelSpec> spec = ParseHfConfig(config);
  return spec.ok() ? std::string("<parsed>") : spec.error().message;
}

TEST(ModelSpecTest, ParsesLlama3_8B) {
  ModelSpec s = ParsePresetOrDie("llama-3-8b.json");
  EXPECT_EQ(s.model_type, "llama");
  EXPECT_EQ(s.hidden_size, 4096);
  EXPECT_EQ(s.num_hidden_layers, 32);
  EXPECT_EQ(s.num_attention_heads, 32);
  EXPECT_EQ(s.num_key_value_heads, 8);
  EXPECT_EQ(s.head_dim, 128);
  EXPECT_EQ(s.intermediate_size, 14336);
  EXPECT_EQ(s.vocab_size, 128256);
  EXPECT_EQ(s.max_position_embeddings, 8192);
  EXPECT_FALSE(s.tie_word_embeddings);
  EXPECT_FALSE(s.is_moe());
  EXPECT_FALSE(s.assumed_llama_like);
}

TEST(ModelSpecTest, ParsesMoePresets) {
  ModelSpec mixtral = ParsePresetOrDie("mixtral-8x7b.json");
  EXPECT_EQ(mixtral.num_experts, 8);  // from num_local_experts
  EXPECT_EQ(mixtral.num_experts_per_tok, 2);
  EXPECT_EQ(mixtral.moe_intermediate_size, 14336);
  EXPECT_EQ(mixtral.NumMoeLayers(), 32);

  ModelSpec qwen3 = ParsePresetOrDie("qwen3-30b-a3b.json");
  EXPECT_EQ(qwen3.num_experts, 128);
  EXPECT_EQ(qwen3.head_dim, 128);
  EXPECT_TRUE(qwen3.qk_norm);
  EXPECT_TRUE(qwen3.norm_topk_prob);
  EXPECT_EQ(qwen3.shared_expert_intermediate_size, 0);

  ModelSpec qwen2 = ParsePresetOrDie("qwen2-moe-a2.7b.json");
  EXPECT_EQ(qwen2.shared_expert_intermediate_size, 5632);
  EXPECT_TRUE(qwen2.attention_bias);
  EXPECT_FALSE(qwen2.o_proj_bias);
  EXPECT_FALSE(qwen2.norm_topk_prob);
}

TEST(ModelSpecTest, DerivedDefaults) {
  Json config = LoadModelPreset("tiny-llama.json");
  config.erase("num_key_value_heads");
  config["max_position_embeddings"] = nullptr;  // null reads as absent
  Result<ModelSpec> s = ParseHfConfig(config);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->num_key_value_heads, 4);
  EXPECT_EQ(s->head_dim, 16);
  EXPECT_EQ(s->max_position_embeddings, 2048);  // LlamaConfig default

  // An explicit head_dim wins over hidden / heads (Mistral-Nemo: 5120 / 32 = 160, head_dim 128).
  config["head_dim"] = 8;
  s = ParseHfConfig(config);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->head_dim, 8);
}

TEST(ModelSpecTest, ExpertCountAliases) {
  Json config = LoadModelPreset("mixtral-8x7b.json");
  config.erase("num_local_experts");
  config["num_experts"] = 8;
  Result<ModelSpec> s = ParseHfConfig(config);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->num_experts, 8);
  config["num_local_experts"] = 4;
  EXPECT_NE(ErrorOf(config).find("disagrees with 'num_local_experts'"), std::string::npos);
}

TEST(ModelSpecTest, UnknownTypeAssumedLlamaLike) {
  Json config = LoadModelPreset("tiny-llama.json");
  config["model_type"] = "my_llama_fork";
  Result<ModelSpec> s = ParseHfConfig(config);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(s->assumed_llama_like);
  EXPECT_EQ(s->model_type, "my_llama_fork");
  EXPECT_EQ(CountParameters(*s).total, 158'016);

  config["n_routed_experts"] = 64;  // deepseek-style MoE: would be miscounted as dense
  EXPECT_NE(ErrorOf(config).find("'n_routed_experts'"), std::string::npos) << ErrorOf(config);
  config.erase("n_routed_experts");
  config["vision_config"] = {{"depth", 2}};  // a VLM whose vision tower would go uncounted, unsaid
  EXPECT_NE(ErrorOf(config).find("'vision_config'"), std::string::npos) << ErrorOf(config);
  config.erase("vision_config");
  // Mamba hybrids and MoE under other names would be counted as a dense llama decoder.
  for (const char* key : {"hybrid_override_pattern", "ssm_state_size", "moe_num_experts", "attn_layer_period"}) {
    Json marked = config;
    marked[key] = 1;
    EXPECT_NE(ErrorOf(marked).find(std::string("'") + key + "'"), std::string::npos) << ErrorOf(marked);
  }
}

// Qwen2-VL and Qwen2.5-VL (transformers models/qwen2_vl, qwen2_5_vl): Qwen2's decoder (q/k/v biased,
// o_proj not) plus a vision tower, which is left out. Hub configs keep the language model's keys at
// the top level, with checkpoints naming its tensors model.layers.*; configs transformers 5 saves
// nest them in text_config and name them model.language_model.*.
TEST(ModelSpecTest, Qwen2VlReadsFlatAndNestedTextConfigs) {
  Json flat = LoadModelPreset("tiny-llama.json");
  flat["model_type"] = "qwen2_5_vl";
  flat["vision_config"] = {{"depth", 2}, {"hidden_size", 16}};
  Result<ModelSpec> a = ParseHfConfig(flat);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->model_type, "qwen2_5_vl_text");
  EXPECT_FALSE(a->assumed_llama_like);
  EXPECT_TRUE(a->attention_bias);
  EXPECT_FALSE(a->o_proj_bias);
  EXPECT_EQ(a->name_prefix, "model.");
  ASSERT_EQ(a->left_out.size(), 1u);
  EXPECT_NE(a->left_out[0].find("vision tower"), std::string::npos);
  // The llama count plus q/k/v biases: per layer hidden + 2 x kv heads x head_dim.
  Json llama = LoadModelPreset("tiny-llama.json");
  const ModelSpec base = *ParseHfConfig(llama);
  const int64_t biases = base.num_hidden_layers * (base.num_attention_heads + 2 * base.num_key_value_heads) *
                         base.head_dim;
  EXPECT_EQ(CountParameters(*a).total, CountParameters(base).total + biases);

  Json nested = {{"model_type", "qwen2_vl"}, {"vision_config", {{"depth", 2}}}, {"text_config", llama}};
  nested["text_config"]["model_type"] = "qwen2_vl_text";
  Result<ModelSpec> b = ParseHfConfig(nested);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->name_prefix, "model.language_model.");
  EXPECT_EQ(CountParameters(*b).total, CountParameters(*a).total);
  // A text_config without model_type is the outer class's text model; one with a bad model_type is
  // an error, not silently that.
  nested["text_config"].erase("model_type");
  Result<ModelSpec> c = ParseHfConfig(nested);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->model_type, "qwen2_vl_text");
  nested["text_config"]["model_type"] = 7;
  EXPECT_NE(ErrorOf(nested).find("'model_type' must be a string"), std::string::npos) << ErrorOf(nested);
}

// A model_type is a short identifier; anything else is refused before it reaches a message or a
// report (issue 16: a 1,000,000-character model_type gave a 2 MB report).
TEST(ModelSpecTest, ModelTypeMustBeAShortIdentifier) {
  Json config = LoadModelPreset("tiny-llama.json");
  for (const std::string& bad : {std::string(1000000, 'x'), std::string(""), std::string("llama\nsecond line")}) {
    config["model_type"] = bad;
    const std::string error = ErrorOf(config);
    EXPECT_NE(error.find("'model_type' must be a short identifier"), std::string::npos) << error.substr(0, 200);
    EXPECT_LT(error.size(), 300u);
  }
  config["model_type"] = "qwen3_5-moe.v2";
  EXPECT_TRUE(ParseHfConfig(config).ok());
}

TEST(ModelSpecTest, ErrorsNameTheKey) {
  Json base = LoadModelPreset("tiny-llama.json");
  struct Case {
    const char* key;
    Json value;  // null -> erase
    const char* expect;
  };
  const Case cases[] = {
      {"hidden_size", nullptr, "'hidden_size' is missing"},
      {"num_hidden_layers", nullptr, "'num_hidden_layers' is missing"},
      {"vocab_size", nullptr, "'vocab_size' is missing"},
      {"intermediate_size", nullptr, "'intermediate_size' is missing"},
      {"model_type", nullptr, "'model_type' is missing"},
      {"model_type", 7, "'model_type' must be a string"},
      {"num_attention_heads", 4.5, "'num_attention_heads' must be an integer"},
      {"num_attention_heads", "4", "'num_attention_heads' must be an integer"},
      {"num_hidden_layers", 0, "'num_hidden_layers' must be at least 1"},
      {"hidden_size", -64, "'hidden_size' must be at least 1"},
      {"hidden_size", Json(uint64_t{1} << 63), "'hidden_size' is too large"},
      {"num_attention_heads", 3, "'num_attention_heads' (3) must divide 'hidden_size' (64)"},
      {"num_key_value_heads", 3, "'num_key_value_heads' (3) must divide 'num_attention_heads' (4)"},
      {"tie_word_embeddings", "false", "'tie_word_embeddings' must be true or false"},
  };
  for (const Case& c : cases) {
    Json config = base;
    if (c.value.is_null()) {
      config.erase(c.key);
    } else {
      config[c.key] = c.value;
    }
    std::string error = ErrorOf(config);
    EXPECT_NE(error.find(c.expect), std::string::npos)
        << "want: " << c.expect << "\ngot: " << error;
  }
  // heads not dividing hidden is fine when head_dim is given explicitly.
  Json with_head_dim = base;
  with_head_dim["num_attention_heads"] = 6;
  with_head_dim["num_key_value_heads"] = 2;
  with_head_dim["head_dim"] = 16;
  EXPECT_EQ(ErrorOf(with_head_dim), "<parsed>");
}

TEST(ModelSpecTest, MoeErrors) {
  Json config = LoadModelPreset("tiny-moe.json");
  config["num_experts_per_tok"] = 5;
  EXPECT_NE(ErrorOf(config).find("'num_experts_per_tok' (5) exceeds"), std::string::npos);
  config = LoadModelPreset("tiny-moe.json");
  config.erase("num_experts");
  EXPECT_NE(ErrorOf(config).find("'num_experts' is missing"), std::string::npos);
  config = LoadModelPreset("tiny-moe.json");
  config.erase("moe_intermediate_size");
  EXPECT_NE(ErrorOf(config).find("'moe_intermediate_size' is missing"), std::string::npos);
  config = LoadModelPreset("tiny-moe.json");
  config["mlp_only_layers"] = {0, "1"};
  EXPECT_NE(ErrorOf(config).find("'mlp_only_layers' must hold integers"), std::string::npos);
  // A dense layer needs intermediate_size; an all-MoE model does not.
  config = LoadModelPreset("tiny-moe.json");
  config.erase("intermediate_size");
  EXPECT_EQ(ErrorOf(config), "<parsed>");
  config["mlp_only_layers"] = {0};
  EXPECT_NE(ErrorOf(config).find("'intermediate_size' is missing"), std::string::npos);
}

TEST(ModelSpecTest, RejectsNonObjectsAndAbsurdSizes) {
  EXPECT_NE(ErrorOf(Json::array()).find("expected a JSON object"), std::string::npos);
  EXPECT_NE(ErrorOf(Json()).find("expected a JSON object"), std::string::npos);
  Json config = LoadModelPreset("tiny-moe.json");
  config["num_experts"] = 60000;
  config["moe_intermediate_size"] = 1 << 24;
  config["hidden_size"] = 1 << 24;
  config["num_hidden_layers"] = 60000;
  config["head_dim"] = 1;
  EXPECT_NE(ErrorOf(config).find("implausibly large"), std::string::npos) << ErrorOf(config);
}

TEST(ParamTensorTest, LlamaNames) {
  ModelSpec s = ParsePresetOrDie("llama-3-8b.json");
  std::vector<ParamTensor> tensors = ParameterTensors(s);
  ASSERT_EQ(tensors.size(), 1u + 32u * 9u + 2u);
  EXPECT_EQ(tensors.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(tensors.back().name, "lm_head.weight");
  EXPECT_EQ(tensors.back().family, ParamFamily::kLmHead);
  auto by_name = ByName(s);
  const ParamTensor& k = by_name.at("model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(k.shape, (std::vector<int64_t>{1024, 4096}));
  EXPECT_EQ(k.layer, 0);
  EXPECT_EQ(by_name.at("model.layers.31.mlp.down_proj.weight").shape,
            (std::vector<int64_t>{4096, 14336}));
  EXPECT_EQ(by_name.at("model.layers.31.mlp.down_proj.weight").family, ParamFamily::kDenseMlp);
  EXPECT_EQ(by_name.at("model.layers.5.post_attention_layernorm.weight").family,
            ParamFamily::kNorm);
  EXPECT_EQ(by_name.at("model.norm.weight").layer, -1);
  EXPECT_EQ(by_name.count("model.layers.0.self_attn.q_proj.bias"), 0u);
  std::set<std::string> unique;
  for (const ParamTensor& t : tensors) unique.insert(t.name);
  EXPECT_EQ(unique.size(), tensors.size());
}

TEST(ParamTensorTest, BiasNamesFollowTransformers) {
  // qwen2: q/k/v biased, o_proj not (hard-coded in Qwen2Attention).
  Json qwen2 = LoadModelPreset("tiny-llama.json");
  qwen2["model_type"] = "qwen2";
  auto q2 = ByName(*ParseHfConfig(qwen2));
  EXPECT_EQ(q2.at("model.layers.1.self_attn.v_proj.bias").shape, (std::vector<int64_t>{32}));
  EXPECT_EQ(q2.count("model.layers.1.self_attn.o_proj.bias"), 0u);
  // llama attention_bias: all four projections.
  Json llama = LoadModelPreset("tiny-llama.json");
  llama["attention_bias"] = true;
  EXPECT_EQ(ByName(*ParseHfConfig(llama)).count("model.layers.0.self_attn.o_proj.bias"), 1u);
  // mistral has no bias option at all.
  llama["model_type"] = "mistral";
  EXPECT_EQ(ByName(*ParseHfConfig(llama)).count("model.layers.0.self_attn.q_proj.bias"), 0u);
}

TEST(ParamTensorTest, MixtralNames) {
  auto by_name = ByName(ParsePresetOrDie("mixtral-8x7b.json"));
  const ParamTensor& gate = by_name.at("model.layers.0.block_sparse_moe.gate.weight");
  EXPECT_EQ(gate.shape, (std::vector<int64_t>{8, 4096}));
  EXPECT_EQ(gate.family, ParamFamily::kRouter);
  const ParamTensor& w2 = by_name.at("model.layers.31.block_sparse_moe.experts.7.w2.weight");
  EXPECT_EQ(w2.shape, (std::vector<int64_t>{4096, 14336}));
  EXPECT_EQ(w2.family, ParamFamily::kRoutedExperts);
  EXPECT_EQ(w2.expert, 7);
  EXPECT_EQ(by_name.at("model.layers.3.block_sparse_moe.experts.0.w1.weight").shape,
            (std::vector<int64_t>{14336, 4096}));
  EXPECT_EQ(by_name.count("model.layers.3.block_sparse_moe.experts.0.w3.weight"), 1u);
  EXPECT_EQ(by_name.count("model.layers.0.mlp.gate_proj.weight"), 0u);
}

TEST(ParamTensorTest, QwenMoeNames) {
  auto q3 = ByName(ParsePresetOrDie("qwen3-30b-a3b.json"));
  EXPECT_EQ(q3.at("model.layers.0.self_attn.q_proj.weight").shape,
            (std::vector<int64_t>{4096, 2048}));
  EXPECT_EQ(q3.at("model.layers.0.self_attn.q_norm.weight").shape, (std::vector<int64_t>{128}));
  EXPECT_EQ(q3.at("model.layers.47.self_attn.k_norm.weight").family, ParamFamily::kNorm);
  EXPECT_EQ(q3.at("model.layers.47.mlp.gate.weight").shape, (std::vector<int64_t>{128, 2048}));
  EXPECT_EQ(q3.at("model.layers.47.mlp.experts.127.down_proj.weight").shape,
            (std::vector<int64_t>{2048, 768}));
  EXPECT_EQ(q3.count("model.layers.0.mlp.shared_expert.up_proj.weight"), 0u);

  auto q2 = ByName(ParsePresetOrDie("qwen2-moe-a2.7b.json"));
  const ParamTensor& shared = q2.at("model.layers.23.mlp.shared_expert.gate_proj.weight");
  EXPECT_EQ(shared.shape, (std::vector<int64_t>{5632, 2048}));
  EXPECT_EQ(shared.family, ParamFamily::kSharedExperts);
  EXPECT_EQ(shared.expert, -1);
  EXPECT_EQ(q2.at("model.layers.0.mlp.shared_expert_gate.weight").shape,
            (std::vector<int64_t>{1, 2048}));
  EXPECT_EQ(q2.at("model.layers.0.mlp.experts.59.up_proj.weight").shape,
            (std::vector<int64_t>{1408, 2048}));
  EXPECT_EQ(q2.at("model.layers.0.self_attn.q_proj.bias").shape, (std::vector<int64_t>{2048}));
}

TEST(ParamTensorTest, TiedEmbeddingsDropLmHead) {
  auto by_name = ByName(ParsePresetOrDie("gpt3-175b.json"));
  EXPECT_EQ(by_name.count("lm_head.weight"), 0u);
  EXPECT_EQ(by_name.at("model.embed_tokens.weight").shape, (std::vector<int64_t>{50257, 12288}));
}

TEST(ParamTensorTest, AutoTpStylePatternsMatch) {
  // DeepSpeed AutoTP tests each name with re.match (anchored at the start) against layer_specs
  // patterns; these are the shapes a llama column/row spec takes.
  std::vector<ParamTensor> tensors = ParameterTensors(ParsePresetOrDie("llama-3-8b.json"));
  const std::regex column(R"(.*\.self_attn\.(q|k|v)_proj\.weight$)");
  const std::regex row(R"(.*\.(self_attn\.o_proj|mlp\.down_proj)\.weight$)");
  int columns = 0, rows = 0;
  for (const ParamTensor& t : tensors) {
    columns += std::regex_search(t.name, column, std::regex_constants::match_continuous) ? 1 : 0;
    rows += std::regex_search(t.name, row, std::regex_constants::match_continuous) ? 1 : 0;
  }
  EXPECT_EQ(columns, 32 * 3);
  EXPECT_EQ(rows, 32 * 2);
}

TEST(ParamFamilyTest, Names) {
  EXPECT_EQ(ParamFamilyName(ParamFamily::kEmbedding), "embedding");
  EXPECT_EQ(ParamFamilyName(ParamFamily::kDenseMlp), "dense_mlp");
  EXPECT_EQ(ParamFamilyName(ParamFamily::kRoutedExperts), "routed_experts");
  EXPECT_EQ(ParamFamilyName(ParamFamily::kSharedExperts), "shared_experts");
  EXPECT_EQ(ParamFamilyName(ParamFamily::kLmHead), "lm_head");
}

}  // namespace
}  // namespace dsp

namespace dsp {
namespace {

// transformers writes the implementation a model was loaded with as "_attn_implementation"
// (PretrainedConfig); validate's sp-autosp-attention-impl reads it when --attn-impl is not given.
TEST(ModelSpecTest, ReadsTheAttentionImplementation) {
  const std::string base = R"("model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
      "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100)";
  auto plain = ParseHfConfig(Json::parse("{" + base + "}"));
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->attn_implementation, "");
  auto fa = ParseHfConfig(Json::parse("{" + base + R"(, "_attn_implementation": "flash_attention_2"})"));
  ASSERT_TRUE(fa.ok());
  EXPECT_EQ(fa->attn_implementation, "flash_attention_2");
  auto public_key = ParseHfConfig(Json::parse("{" + base + R"(, "attn_implementation": "eager"})"));
  ASSERT_TRUE(public_key.ok());
  EXPECT_EQ(public_key->attn_implementation, "eager");
}

}  // namespace
}  // namespace dsp
