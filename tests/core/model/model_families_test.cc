// SPDX-License-Identifier: Apache-2.0
// Every model family ParseHfConfig reads, loaded from the published config.json (samples/models,
// sources in samples/models/SOURCES.tsv) and counted against the published parameter totals. The
// arithmetic behind each expected figure is in the comment next to it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "core/model/model_spec.h"
#include "tests/core/model/model_test_util.h"

namespace dsp {
namespace {

using testing::ParsePresetOrDie;

std::map<std::string, ParamTensor> ByName(const ModelSpec& spec) {
  std::map<std::string, ParamTensor> out;
  for (ParamTensor& t : ParameterTensors(spec)) out.emplace(t.name, std::move(t));
  return out;
}

int64_t NonEmbedding(const ParamCounts& c) {
  return c.total - c.by_family.at(ParamFamily::kEmbedding) - c.by_family.at(ParamFamily::kLmHead);
}

// |value - published| within half the published figure's last digit (`unit`).
void ExpectRoundsTo(int64_t value, double published, double unit) {
  EXPECT_LE(std::abs(static_cast<double>(value) - published), unit / 2)
      << value << " does not round to " << published;
}

TEST(ModelFamiliesTest, DeepSeekV3Has671BAnd37BActivated) {
  ModelSpec m = ParsePresetOrDie("deepseek-v3.json");
  EXPECT_EQ(m.family, ModelFamily::kDeepSeek);
  EXPECT_TRUE(m.mla());
  EXPECT_EQ(m.qk_head_dim(), 192);
  EXPECT_EQ(m.NumMoeLayers(), 58);  // first_k_dense_replace 3
  const ParamCounts c = CountParameters(m);
  // 61 x MLA 187,107,328 + 3 dense MLPs x 396,361,728 + 58 MoE layers x (256 experts x
  // 44,040,192 + shared 44,040,192 + gate 1,835,008 + correction bias 256) + norms + 2 x
  // 129280 x 7168: "671B total parameters, of which 37B are activated" (DeepSeek-V3 Technical
  // Report, arXiv 2412.19437, abstract; "activated" leaves out the input embedding).
  EXPECT_EQ(c.total, 671'026'419'200);
  ExpectRoundsTo(c.total, 671e9, 1e9);
  ExpectRoundsTo(c.active_per_token - c.by_family.at(ParamFamily::kEmbedding), 37e9, 1e9);
  // The checkpoint adds one MTP module (a MoE layer, enorm, hnorm, eh_proj, shared_head and its
  // own embed_tokens): 13,463,426,304, and "685B ... includes 671B of the Main Model weights and
  // 14B of the Multi-Token Prediction (MTP) Module weights" (DeepSeek-V3 README).
  EXPECT_EQ(c.mtp, 13'463'426'304);
  ExpectRoundsTo(c.total + c.mtp, 685e9, 2e9);
  // Exactly, against the safetensors dtype totals of deepseek-ai/DeepSeek-V3: every weight is BF16
  // (3,918,786,560) or F8_E4M3 (680,571,043,840); the F32 tensors are the (58 + 1 MTP) x 256
  // e_score_correction_bias values and the FP8 block scales.
  const int64_t correction_biases = (58 + 1) * 256;
  EXPECT_EQ(c.total + c.mtp - correction_biases, 3'918'786'560 + 680'571'043'840);
  // Group-limited routing: a token's 8 experts come from 4 of 8 groups of 32 (n_group, topk_group).
  EXPECT_EQ(m.n_group, 8);
  EXPECT_EQ(m.topk_group, 4);
  ASSERT_FALSE(m.left_out.empty());
  auto t = ByName(m);
  EXPECT_EQ(t.at("model.layers.0.self_attn.q_a_proj.weight").shape,
            (std::vector<int64_t>{1536, 7168}));
  EXPECT_EQ(t.at("model.layers.0.self_attn.q_a_proj.weight").family, ParamFamily::kLatentProj);
  EXPECT_EQ(t.at("model.layers.0.self_attn.q_b_proj.weight").shape,
            (std::vector<int64_t>{128 * 192, 1536}));
  EXPECT_EQ(t.at("model.layers.0.self_attn.kv_a_proj_with_mqa.weight").shape,
            (std::vector<int64_t>{576, 7168}));
  EXPECT_EQ(t.at("model.layers.0.self_attn.kv_b_proj.weight").shape,
            (std::vector<int64_t>{128 * 256, 512}));
  EXPECT_EQ(t.at("model.layers.0.self_attn.o_proj.weight").shape,
            (std::vector<int64_t>{7168, 128 * 128}));
  EXPECT_EQ(t.count("model.layers.2.mlp.gate.weight"), 0u);  // dense
  EXPECT_EQ(t.at("model.layers.3.mlp.gate.e_score_correction_bias").shape,
            (std::vector<int64_t>{256}));
  EXPECT_EQ(t.at("model.layers.60.mlp.experts.255.down_proj.weight").shape,
            (std::vector<int64_t>{7168, 2048}));
  EXPECT_EQ(t.at("model.layers.3.mlp.shared_experts.up_proj.weight").family,
            ParamFamily::kSharedExperts);
  EXPECT_EQ(t.count("model.layers.61.self_attn.q_a_proj.weight"), 0u);  // MTP is not trained
}

// Kimi K2 (model_type kimi_k2, DeepseekV3ForCausalLM by remote code that only renames
// model_type): DeepSeek-V3's modules with 384 routed experts, 64 heads, one dense layer and a
// 163,840 vocabulary. "1T total parameters, 32B activated" (Kimi K2 model card).
TEST(ModelFamiliesTest, KimiK2IsDeepSeekV3With384Experts) {
  ModelSpec m = ParsePresetOrDie("kimi-k2.json");
  EXPECT_EQ(m.family, ModelFamily::kDeepSeek);
  EXPECT_FALSE(m.assumed_llama_like);
  EXPECT_TRUE(m.router_score_bias);  // V3's noaux_tc e_score_correction_bias, kept for kimi_k2
  EXPECT_EQ(m.num_experts, 384);
  EXPECT_EQ(m.NumMoeLayers(), 60);  // first_k_dense_replace 1
  const ParamCounts c = CountParameters(m);
  // 61 x MLA 101,124,096 + 1 dense MLP 396,361,728 + 60 x (384 x 44,040,192 + shared 44,040,192
  // + gate 2,752,512 + correction bias 384) + norms + 2 x 163,840 x 7,168.
  EXPECT_EQ(c.total, 1'026'408'232'448);
  EXPECT_EQ(c.active_per_token, 32'861'500'928);
  ExpectRoundsTo(c.total, 1.0e12, 0.1e12);  // "1T"
  ExpectRoundsTo(c.active_per_token - c.by_family.at(ParamFamily::kEmbedding), 32e9, 1e9);
}

// GLM-4.5-Air (transformers models/glm4_moe, Glm4MoeForCausalLM = DeepseekV3ForCausalLM with
// grouped-query attention): "106 billion total parameters and 12 billion active parameters"
// (GLM-4.5 technical report, arXiv 2508.06471; zai-org/GLM-4.5-Air model card).
TEST(ModelFamiliesTest, Glm45AirIsDeepSeekMoeUnderGqa) {
  ModelSpec m = ParsePresetOrDie("glm-4.5-air.json");
  EXPECT_EQ(m.family, ModelFamily::kDeepSeek);
  EXPECT_FALSE(m.mla());
  EXPECT_FALSE(m.assumed_llama_like);
  EXPECT_EQ(m.head_dim, 128);  // 96 heads of 128 over a 4096 hidden size
  EXPECT_TRUE(m.attention_bias);
  EXPECT_FALSE(m.o_proj_bias);  // Glm4MoeAttention's o_proj has bias=False
  EXPECT_FALSE(m.qk_norm);
  EXPECT_TRUE(m.router_score_bias);
  EXPECT_EQ(m.rotary_fraction, 0.5);
  EXPECT_EQ(m.NumMoeLayers(), 45);  // first_k_dense_replace 1
  EXPECT_EQ(m.mtp_layers, 1);
  const ParamCounts c = CountParameters(m);
  // 2 x 151,552 x 4,096 + 46 x (attention 109,066,240 with q/k/v biases + norms 8,192) + one dense
  // MLP 134,479,872 + 45 x (128 experts x 17,301,504 + shared 17,301,504 + gate 524,288 +
  // correction bias 128) + final norm 4,096.
  EXPECT_EQ(c.total, 106'852'251'264);
  EXPECT_GE(c.total, 106e9);  // the published "106B" drops the fraction
  EXPECT_LT(c.total, 107e9);
  ExpectRoundsTo(NonEmbedding(c) - (c.total - c.active_per_token), 12e9, 1e9);
  // The checkpoint's MTP layer (model.layers.46) is left out of training and counted apart.
  EXPECT_GT(c.mtp, 0);
  const auto t = ByName(m);
  EXPECT_EQ(t.at("model.layers.1.mlp.experts.127.down_proj.weight").family, ParamFamily::kRoutedExperts);
  EXPECT_EQ(t.at("model.layers.1.mlp.shared_experts.gate_proj.weight").shape,
            (std::vector<int64_t>{1408, 4096}));
  EXPECT_EQ(t.count("model.layers.1.self_attn.q_proj.bias"), 1u);
  EXPECT_EQ(t.count("model.layers.1.self_attn.o_proj.bias"), 0u);
  EXPECT_EQ(t.count("model.layers.0.mlp.gate_proj.weight"), 1u);  // the dense first layer
  EXPECT_EQ(t.count("model.layers.46.self_attn.q_proj.weight"), 0u);
}

// GLM-4.x configs' own keys: use_qk_norm adds head-dim norms on q and k, and num_local_experts is
// an alias of n_routed_experts (Glm4MoeConfig.attribute_map).
TEST(ModelFamiliesTest, Glm4MoeReadsQkNormAndTheExpertAlias) {
  Json config = testing::LoadModelPreset("glm-4.5-air.json");
  config["use_qk_norm"] = true;
  config["num_local_experts"] = config["n_routed_experts"];
  config.erase("n_routed_experts");
  config.erase("partial_rotary_factor");
  auto m = ParseHfConfig(config);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(m->qk_norm);
  EXPECT_EQ(m->num_experts, 128);
  EXPECT_EQ(m->rotary_fraction, 0.5);  // Glm4MoeConfig.__post_init__'s default
  const ModelSpec plain = ParsePresetOrDie("glm-4.5-air.json");
  EXPECT_EQ(CountParameters(*m).total - CountParameters(plain).total, 46 * 2 * 128);
  // Keys a trimmed config leaves out take Glm4MoeConfig's defaults (128 routed experts, 1 shared,
  // 1 dense first layer), not DeepseekV3's "no experts".
  Json trimmed = testing::LoadModelPreset("glm-4.5-air.json");
  for (const char* key : {"n_routed_experts", "n_shared_experts", "first_k_dense_replace"}) trimmed.erase(key);
  auto defaults = ParseHfConfig(trimmed);
  ASSERT_TRUE(defaults.ok()) << defaults.error().message;
  EXPECT_EQ(CountParameters(*defaults).total, CountParameters(plain).total);
  config["n_group"] = 3;  // 128 experts do not split into 3 groups
  auto bad = ParseHfConfig(config);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("n_group"), std::string::npos) << bad.error().message;
}

// Qwen3-VL (transformers models/qwen3_vl, qwen3_vl_moe): the language model under text_config is
// Qwen3's decoder (q/k norms; the MoE one with transformers 5's fused Qwen3MoeExperts), named under
// model.language_model.; the vision tower, its merger and the DeepStack mergers are left out. The
// 8B and 30B-A3B text models have Qwen3-8B's and Qwen3-30B-A3B's shapes, so their counts match
// those checkpoints' exactly.
TEST(ModelFamiliesTest, Qwen3VlTextModelsAreQwen3) {
  ModelSpec dense = ParsePresetOrDie("qwen3-vl-8b.json");
  EXPECT_EQ(dense.model_type, "qwen3_vl_text");
  EXPECT_EQ(dense.family, ModelFamily::kLlama);
  EXPECT_FALSE(dense.assumed_llama_like);
  EXPECT_TRUE(dense.qk_norm);
  EXPECT_EQ(dense.name_prefix, "model.language_model.");
  ASSERT_EQ(dense.left_out.size(), 1u);
  EXPECT_NE(dense.left_out[0].find("vision tower"), std::string::npos);
  EXPECT_EQ(CountParameters(dense).total, CountParameters(ParsePresetOrDie("qwen3-8b.json")).total);
  const auto d = ByName(dense);
  EXPECT_EQ(d.count("model.language_model.layers.35.self_attn.k_norm.weight"), 1u);
  EXPECT_EQ(d.count("lm_head.weight"), 1u);

  ModelSpec moe = ParsePresetOrDie("qwen3-vl-30b-a3b.json");
  EXPECT_EQ(moe.model_type, "qwen3_vl_moe_text");
  EXPECT_TRUE(moe.fused_experts);
  EXPECT_TRUE(moe.norm_topk_prob);
  const ModelSpec text = ParsePresetOrDie("qwen3-30b-a3b.json");
  EXPECT_EQ(CountParameters(moe).total, CountParameters(text).total);
  EXPECT_EQ(CountParameters(moe).active_per_token, CountParameters(text).active_per_token);
  const auto m = ByName(moe);
  EXPECT_EQ(m.at("model.language_model.layers.0.mlp.experts.gate_up_proj").shape,
            (std::vector<int64_t>{128, 2 * 768, 2048}));
  EXPECT_EQ(m.at("model.language_model.layers.0.mlp.experts.down_proj").shape,
            (std::vector<int64_t>{128, 2048, 768}));
  EXPECT_EQ(m.at("model.language_model.layers.0.mlp.experts.gate_up_proj").family,
            ParamFamily::kRoutedExperts);

  // Qwen3VLMoeTextConfig has no norm_topk_prob: its router renormalises the top k whatever a
  // config says.
  Json config = testing::LoadModelPreset("qwen3-vl-30b-a3b.json");
  config["text_config"]["norm_topk_prob"] = false;
  auto renormalised = ParseHfConfig(config);
  ASSERT_TRUE(renormalised.ok()) << renormalised.error().message;
  EXPECT_TRUE(renormalised->norm_topk_prob);
}

// Nemotron-4 (transformers modeling_nemotron.py): llama's attention with GQA, a non-gated
// squared-ReLU MLP (up_proj, down_proj), LayerNorm1P with weight and bias, untied head. NVIDIA
// dgxc-benchmarking's nemotron READMEs give 15.63B and 341.0B for these configs.
TEST(ModelFamiliesTest, NemotronFourMatchesThePublishedTotals) {
  ModelSpec small = ParsePresetOrDie("nemotron-4-15b.json");
  EXPECT_EQ(small.family, ModelFamily::kNemotron);
  EXPECT_FALSE(small.gated_mlp);
  EXPECT_FALSE(small.gpt_style());  // llama's module names
  EXPECT_TRUE(small.layer_norm);
  EXPECT_TRUE(small.squared_relu);
  EXPECT_EQ(small.rotary_fraction, 0.5);
  // 2 x 256,000 x 6,144 + 32 x (attention 2 x 6144 x 6144 + 2 x 6144 x 1024, MLP 2 x 6144 x
  // 24576, two LayerNorms 4 x 6144) + final LayerNorm 2 x 6144.
  EXPECT_EQ(CountParameters(small).total, 15'628'775'424);
  ExpectRoundsTo(CountParameters(small).total, 15.63e9, 0.01e9);
  ModelSpec big = ParsePresetOrDie("nemotron-4-340b.json");
  EXPECT_EQ(CountParameters(big).total, 341'029'195'776);
  ExpectRoundsTo(CountParameters(big).total, 341.0e9, 0.1e9);
}

// A Nemotron config's own checks: the rotary share is a fraction of the head.
TEST(ModelFamiliesTest, NemotronRotaryShareMustBeAFraction) {
  Json config = testing::LoadModelPreset("nemotron-4-15b.json");
  config["partial_rotary_factor"] = 1.5;
  auto bad = ParseHfConfig(config);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("partial_rotary_factor"), std::string::npos) << bad.error().message;
  config.erase("partial_rotary_factor");
  auto fallback = ParseHfConfig(config);
  ASSERT_TRUE(fallback.ok()) << fallback.error().message;
  EXPECT_EQ(fallback->rotary_fraction, 0.5);  // NemotronConfig's default
}

TEST(ModelFamiliesTest, DeepSeekV2LiteHas15_7BAnd2_4BActivated) {
  ModelSpec m = ParsePresetOrDie("deepseek-v2-lite.json");
  const ParamCounts c = CountParameters(m);
  // q_lora_rank null: a plain q_proj [16 x 192, 2048]; 1 dense layer, 26 MoE layers of 64
  // experts (6 routed per token) and 2 shared: "15.7B total parameters, 2.4B activated"
  // (DeepSeek-V2 paper, arXiv 2405.04434, Appendix B).
  EXPECT_EQ(c.total, 15'706'484'224);
  ExpectRoundsTo(c.total, 15.7e9, 0.1e9);
  ExpectRoundsTo(c.active_per_token - c.by_family.at(ParamFamily::kEmbedding), 2.4e9, 0.2e9);
  auto t = ByName(m);
  EXPECT_EQ(t.at("model.layers.0.self_attn.q_proj.weight").shape,
            (std::vector<int64_t>{16 * 192, 2048}));
  EXPECT_EQ(t.count("model.layers.0.self_attn.q_a_proj.weight"), 0u);
  EXPECT_EQ(t.count("model.layers.1.mlp.gate.e_score_correction_bias"), 0u);  // V2 routing
  EXPECT_EQ(t.at("model.layers.1.mlp.shared_experts.gate_proj.weight").shape,
            (std::vector<int64_t>{2 * 1408, 2048}));
}

TEST(ModelFamiliesTest, GptOssMatchesTheModelCard) {
  // gpt-oss model card (arXiv 2508.10925) Table 1, per component: 120b: MLP 114.71B, attention
  // 0.96B, embed + unembed 1.16B, active 5.13B, total 116.83B; 20b: 19.12B, 0.64B, 1.16B, 3.61B,
  // 20.91B. "Active" there leaves out the input embedding.
  struct Row {
    const char* file;
    double mlp, attention, embed, active, total;
  } rows[] = {{"gpt-oss-120b.json", 114.71e9, 0.96e9, 1.16e9, 5.13e9, 116.83e9},
              {"gpt-oss-20b.json", 19.12e9, 0.64e9, 1.16e9, 3.61e9, 20.91e9}};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.file);
    ModelSpec m = ParsePresetOrDie(row.file);
    EXPECT_EQ(m.family, ModelFamily::kGptOss);
    const ParamCounts c = CountParameters(m);
    const auto& f = c.by_family;
    ExpectRoundsTo(f.at(ParamFamily::kRouter) + f.at(ParamFamily::kRoutedExperts), row.mlp, 0.01e9);
    ExpectRoundsTo(f.at(ParamFamily::kAttention), row.attention, 0.01e9);
    ExpectRoundsTo(f.at(ParamFamily::kEmbedding) + f.at(ParamFamily::kLmHead), row.embed, 0.01e9);
    ExpectRoundsTo(c.active_per_token - f.at(ParamFamily::kEmbedding), row.active, 0.01e9);
    ExpectRoundsTo(c.total, row.total, 0.01e9);
  }
  // Hugging Face safetensors totals (BF16 + the MXFP4 experts' U8 element count, one per weight).
  EXPECT_EQ(CountParameters(ParsePresetOrDie("gpt-oss-20b.json")).total, 20'914'757'184);
  EXPECT_EQ(CountParameters(ParsePresetOrDie("gpt-oss-120b.json")).total, 116'829'156'672);
  auto t = ByName(ParsePresetOrDie("gpt-oss-20b.json"));
  EXPECT_EQ(t.at("model.layers.0.self_attn.sinks").shape, (std::vector<int64_t>{64}));
  EXPECT_EQ(t.at("model.layers.0.mlp.router.bias").shape, (std::vector<int64_t>{32}));
  const ParamTensor& gate_up = t.at("model.layers.23.mlp.experts.gate_up_proj");
  EXPECT_EQ(gate_up.shape, (std::vector<int64_t>{32, 2880, 5760}));
  EXPECT_EQ(gate_up.expert, -1);
  EXPECT_EQ(t.at("model.layers.23.mlp.experts.down_proj_bias").shape,
            (std::vector<int64_t>{32, 2880}));
  ModelSpec m = ParsePresetOrDie("gpt-oss-20b.json");
  EXPECT_EQ(m.LayerAttention(0), AttentionKind::kSliding);
  EXPECT_EQ(m.LayerAttention(1), AttentionKind::kFull);
  EXPECT_EQ(m.sliding_window, 128);
}

TEST(ModelFamiliesTest, Llama4TextModels) {
  // Llama 4 model card: Scout 17B active / 109B total, Maverick 17B active / 400B total; both
  // totals include the vision encoder, which the plan leaves out (and says so).
  ModelSpec scout = ParsePresetOrDie("llama-4-scout-17b-16e.json");
  EXPECT_EQ(scout.family, ModelFamily::kLlama4);
  EXPECT_EQ(scout.name_prefix, "language_model.model.");
  EXPECT_FALSE(scout.left_out.empty());
  const ParamCounts s = CountParameters(scout);
  // 48 MoE layers x (attention 62,914,560 + router 81,920 + 16 experts x 125,829,120 + shared
  // 125,829,120 + norms 10,240) + 2 x 202048 x 5120 + 5120.
  EXPECT_EQ(s.total, 107'769'861'120);
  EXPECT_LT(s.total, 109e9);
  ExpectRoundsTo(s.active_per_token, 17e9, 1e9);
  ModelSpec maverick = ParsePresetOrDie("llama-4-maverick-17b-128e-instruct.json");
  EXPECT_EQ(maverick.NumMoeLayers(), 24);  // interleave_moe_layer_step 2: layers 1, 3, ..., 47
  const ParamCounts v = CountParameters(maverick);
  ExpectRoundsTo(v.total, 400e9, 2e9);
  // The safetensors totals of Scout-Instruct (108,641,793,536) and Maverick-Instruct
  // (401,583,781,376) exceed the text models by the same 871,932,416: the vision tower both share.
  EXPECT_EQ(108'641'793'536 - s.total, 401'583'781'376 - v.total);
  ExpectRoundsTo(v.active_per_token, 17e9, 1e9);
  auto t = ByName(maverick);
  EXPECT_EQ(t.at("language_model.model.layers.1.feed_forward.experts.gate_up_proj").shape,
            (std::vector<int64_t>{128, 5120, 2 * 8192}));
  EXPECT_EQ(t.at("language_model.model.layers.0.feed_forward.down_proj.weight").shape,
            (std::vector<int64_t>{5120, 16384}));
  EXPECT_EQ(t.at("language_model.model.layers.1.feed_forward.router.weight").family,
            ParamFamily::kRouter);
  EXPECT_EQ(t.count("language_model.lm_head.weight"), 1u);
  EXPECT_EQ(scout.LayerAttention(0), AttentionKind::kChunked);
  EXPECT_EQ(scout.LayerAttention(3), AttentionKind::kFull);  // every 4th layer is NoPE
}

TEST(ModelFamiliesTest, Qwen3NextHybrid) {
  ModelSpec m = ParsePresetOrDie("qwen3-next-80b-a3b-thinking.json");
  EXPECT_EQ(m.family, ModelFamily::kQwenNext);
  EXPECT_EQ(m.LayerAttention(0), AttentionKind::kLinear);
  EXPECT_EQ(m.LayerAttention(3), AttentionKind::kFull);  // full_attention_interval 4
  const ParamCounts c = CountParameters(m);
  // 12 gated-attention layers x 27,263,488 + 36 Gated DeltaNet layers x 33,718,464 + 48 MoE blocks
  // x (512 experts x 3,145,728 + shared 3,145,728 + its gate 2,048 + router 1,048,576) + norms +
  // 2 x 151936 x 2048. Model card: "80B in total and 3B activated; Non-Embedding 79B".
  EXPECT_EQ(c.total, 79'674'391'296);
  ExpectRoundsTo(c.total, 80e9, 1e9);
  ExpectRoundsTo(NonEmbedding(c), 79e9, 1e9);
  ExpectRoundsTo(c.active_per_token - c.by_family.at(ParamFamily::kEmbedding) -
                     c.by_family.at(ParamFamily::kLmHead), 3e9, 1e9);
  // The checkpoint's mtp.* module (one gated-attention MoE layer, fc [2048, 4096] and three norms)
  // brings it to the Hugging Face safetensors total of 81,324,862,720 exactly.
  EXPECT_EQ(c.total + c.mtp, 81'324'862'720);
  auto t = ByName(m);
  EXPECT_EQ(t.at("model.layers.3.self_attn.q_proj.weight").shape,
            (std::vector<int64_t>{2 * 16 * 256, 2048}));  // query and output gate
  EXPECT_EQ(t.at("model.layers.0.linear_attn.in_proj_qkvz.weight").shape,
            (std::vector<int64_t>{2 * 2048 + 2 * 4096, 2048}));
  EXPECT_EQ(t.at("model.layers.0.linear_attn.conv1d.weight").shape,
            (std::vector<int64_t>{8192, 1, 4}));
  EXPECT_EQ(t.at("model.layers.0.linear_attn.A_log").family, ParamFamily::kLinearAttention);
  EXPECT_EQ(t.at("model.layers.0.mlp.experts.511.down_proj.weight").shape,
            (std::vector<int64_t>{2048, 512}));
  EXPECT_EQ(t.count("model.layers.0.self_attn.q_proj.weight"), 0u);
}

// Qwen3_5VisionModel's tensors (patch_embed Conv3d, pos_embed, LayerNorm blocks, merger), which
// the plan leaves out, counted here so the text model plus MTP plus vision meets the checkpoint.
int64_t Qwen35Vision(int64_t out_hidden) {
  const int64_t h = 1152, f = 4304, depth = 27, patch = 3 * 2 * 16 * 16, merged = 4 * h;
  const int64_t block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (f * h + f) + (h * f + h);
  return (h * patch + h) + 2304 * h + depth * block + 2 * h + (merged * merged + merged) +
         (out_hidden * merged + out_hidden);
}

TEST(ModelFamiliesTest, Qwen35DenseAndMoe) {
  ModelSpec dense = ParsePresetOrDie("qwen3.5-27b.json");
  EXPECT_EQ(dense.model_type, "qwen3_5_text");
  EXPECT_EQ(dense.name_prefix, "model.language_model.");
  EXPECT_FALSE(dense.is_moe());
  const ParamCounts d = CountParameters(dense);
  // Hugging Face safetensors total of Qwen/Qwen3.5-27B: 27,781,427,952.
  EXPECT_EQ(d.total + d.mtp + Qwen35Vision(5120), 27'781'427'952);
  ExpectRoundsTo(d.total, 27e9, 1e9);
  auto t = ByName(dense);
  EXPECT_EQ(t.at("model.language_model.layers.0.linear_attn.in_proj_qkv.weight").shape,
            (std::vector<int64_t>{2 * 2048 + 48 * 128, 5120}));
  EXPECT_EQ(t.at("model.language_model.layers.0.linear_attn.in_proj_z.weight").shape,
            (std::vector<int64_t>{48 * 128, 5120}));
  EXPECT_EQ(t.count("model.language_model.layers.0.linear_attn.in_proj_qkvz.weight"), 0u);

  ModelSpec moe = ParsePresetOrDie("qwen3.5-397b-a17b.json");
  EXPECT_EQ(moe.model_type, "qwen3_5_moe_text");
  EXPECT_TRUE(moe.fused_experts);
  const ParamCounts c = CountParameters(moe);
  // "Qwen3.5-397B-A17B": 397B total, 17B activated (model card); the name's figure is the model
  // with its vision tower, without the checkpoint's 6.4B MTP layer (with it: 403.4B).
  ExpectRoundsTo(c.total + Qwen35Vision(4096), 397e9, 1e9);
  EXPECT_GT(c.mtp, 6e9);
  ExpectRoundsTo(c.active_per_token, 17e9, 1e9);
  auto e = ByName(moe);
  EXPECT_EQ(e.at("model.language_model.layers.59.mlp.experts.gate_up_proj").shape,
            (std::vector<int64_t>{512, 2 * 1024, 4096}));
  EXPECT_EQ(e.at("model.language_model.layers.59.mlp.experts.down_proj").shape,
            (std::vector<int64_t>{512, 4096, 1024}));
}

TEST(ModelFamiliesTest, ClassicDecodersMatchTheirPapers) {
  struct Row {
    const char* file;
    int64_t total;
    const char* source;
  } rows[] = {
      {"phi-3-mini-4k.json", 3'821'079'552, "Phi-3-mini-4k-instruct safetensors total"},
      {"gpt-neox-20b.json", 20'554'567'680, "GPT-NeoX-20B paper (arXiv 2204.06745) Table 1"},
      {"pythia-160m.json", 162'322'944, "Pythia paper (arXiv 2304.01373) Table 1"},
      // The checkpoint also stores the tied head (7,217,189,760 elements = this + 65024 x 4544).
      {"falcon-7b.json", 6'921'720'704, "tiiuae/falcon-7b checkpoint less its stored head copy"},
      {"bloom-176b.json", 176'247'271'424, "BLOOM paper (arXiv 2211.05100): 176,247M"},
      {"gemma-2-9b-it.json", 9'241'705'984, "google/gemma-2-9b-it safetensors total"},
      {"gemma-3-1b.json", 999'885'952, "Gemma 3 report (arXiv 2503.19786) Table 1: 302M + 698M"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.file) + " (" + row.source + ")");
    EXPECT_EQ(CountParameters(ParsePresetOrDie(row.file)).total, row.total);
  }
}

TEST(ModelFamiliesTest, FusedWeightNamesAsTheCheckpointsHaveThem) {
  auto phi3 = ByName(ParsePresetOrDie("phi-3-mini-4k.json"));
  EXPECT_EQ(phi3.at("model.layers.0.self_attn.qkv_proj.weight").shape,
            (std::vector<int64_t>{3 * 3072, 3072}));
  EXPECT_EQ(phi3.at("model.layers.0.mlp.gate_up_proj.weight").shape,
            (std::vector<int64_t>{2 * 8192, 3072}));
  EXPECT_EQ(phi3.count("model.layers.0.self_attn.q_proj.weight"), 0u);
  auto neox = ByName(ParsePresetOrDie("gpt-neox-20b.json"));
  EXPECT_EQ(neox.at("gpt_neox.layers.43.attention.query_key_value.bias").shape,
            (std::vector<int64_t>{3 * 6144}));
  EXPECT_EQ(neox.at("embed_out.weight").family, ParamFamily::kLmHead);
  auto falcon = ByName(ParsePresetOrDie("falcon-7b.json"));
  // multi_query: 71 query heads and one shared key/value head of 64.
  EXPECT_EQ(falcon.at("transformer.h.0.self_attention.query_key_value.weight").shape,
            (std::vector<int64_t>{4544 + 2 * 64, 4544}));
  EXPECT_EQ(falcon.count("transformer.h.0.post_attention_layernorm.weight"), 0u);  // parallel
  EXPECT_EQ(falcon.count("lm_head.weight"), 0u);                                  // tied
}

TEST(ModelFamiliesTest, GemmaLayersAndNorms) {
  ModelSpec g3 = ParsePresetOrDie("gemma-3-1b.json");
  const ParamCounts c = CountParameters(g3);
  // Gemma 3 report Table 1 (1B): embedding 302M, non-embedding 698M.
  ExpectRoundsTo(c.by_family.at(ParamFamily::kEmbedding), 302e6, 1e6);
  ExpectRoundsTo(NonEmbedding(c), 698e6, 1e6);
  auto t = ByName(g3);
  EXPECT_EQ(t.at("model.layers.0.self_attn.q_norm.weight").shape, (std::vector<int64_t>{256}));
  EXPECT_EQ(t.count("model.layers.0.pre_feedforward_layernorm.weight"), 1u);
  EXPECT_EQ(t.count("model.layers.0.post_feedforward_layernorm.weight"), 1u);
  // sliding_window_pattern 6: five sliding layers, then a full one.
  EXPECT_EQ(g3.LayerAttention(4), AttentionKind::kSliding);
  EXPECT_EQ(g3.LayerAttention(5), AttentionKind::kFull);
  ModelSpec g2 = ParsePresetOrDie("gemma-2-9b-it.json");
  EXPECT_EQ(g2.LayerAttention(0), AttentionKind::kSliding);
  EXPECT_EQ(g2.LayerAttention(1), AttentionKind::kFull);
}

TEST(ModelFamiliesTest, LayerKindsGroupIdenticalLayers) {
  ModelSpec m = ParsePresetOrDie("deepseek-v3.json");
  auto runs = m.LayerKinds(0, m.num_hidden_layers);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].representative, 0);
  EXPECT_EQ(runs[0].count, 3);
  EXPECT_EQ(runs[1].representative, 3);
  EXPECT_EQ(runs[1].count, 58);
  auto stage = m.LayerKinds(2, 10);
  ASSERT_EQ(stage.size(), 2u);
  EXPECT_EQ(stage[0].count, 1);
  EXPECT_EQ(stage[1].count, 7);
}

TEST(ModelFamiliesTest, CountsEqualTheTensorListForEveryFamily) {
  for (const char* file : testing::kFamilyPresets) {
    SCOPED_TRACE(file);
    ModelSpec spec = ParsePresetOrDie(file);
    ParamCounts counted = CountParameters(spec);
    std::map<ParamFamily, int64_t> summed;
    for (ParamFamily f : kAllParamFamilies) summed[f] = 0;
    int64_t largest = 0;
    for (const ParamTensor& t : ParameterTensors(spec)) {
      summed[t.family] += t.numel();
      largest = std::max(largest, t.numel());
    }
    EXPECT_EQ(counted.by_family, summed);
    EXPECT_EQ(counted.largest_tensor, largest);
  }
}

TEST(ModelFamiliesTest, MissingFieldsAreNamed) {
  Json config = testing::LoadModelPreset("deepseek-v3.json");
  config.erase("kv_lora_rank");
  auto r = ParseHfConfig(config);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'kv_lora_rank' is missing"), std::string::npos)
      << r.error().message;
  Json scout = testing::LoadModelPreset("llama-4-scout-17b-16e.json");
  scout.erase("text_config");
  r = ParseHfConfig(scout);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'text_config' is missing"), std::string::npos);
  Json gemma = testing::LoadModelPreset("gemma-2-9b-it.json");
  gemma["layer_types"] = Json::array({"full_attention"});
  r = ParseHfConfig(gemma);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'layer_types' has 1 entries"), std::string::npos);
  Json unknown = {{"model_type", "mamba2"}, {"layer_types", Json::array()}};
  r = ParseHfConfig(unknown);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not supported"), std::string::npos);
}

// DeepseekV3TopkRouter views its scores as [n_group, E / n_group] and keeps topk_group groups:
// settings it cannot run are refused with the key.
TEST(ModelFamiliesTest, DeepSeekGroupLimitedRoutingMustDivideTheExperts) {
  Json config = testing::LoadModelPreset("deepseek-v3.json");
  config["n_group"] = 7;
  auto r = ParseHfConfig(config);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'n_group' must divide n_routed_experts (256)"), std::string::npos)
      << r.error().message;
  config["n_group"] = 8;
  config["topk_group"] = 9;
  r = ParseHfConfig(config);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'topk_group' must be at most n_group (8"), std::string::npos)
      << r.error().message;
  config["topk_group"] = 4;
  EXPECT_TRUE(ParseHfConfig(config).ok());
}

}  // namespace
}  // namespace dsp
