// SPDX-License-Identifier: Apache-2.0
// Parameter counts against published figures, and CountParameters against ParameterTensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/model/model_spec.h"
#include "tests/core/model/model_test_util.h"

namespace dsp {
namespace {

using testing::ParsePresetOrDie;

ParamCounts SumTensors(const ModelSpec& spec) {
  ParamCounts sum;
  for (ParamFamily f : kAllParamFamilies) sum.by_family[f] = 0;
  for (const ParamTensor& t : ParameterTensors(spec)) {
    sum.by_family[t.family] += t.numel();
    sum.total += t.numel();
    sum.largest_tensor = std::max(sum.largest_tensor, t.numel());
    // Routed experts a token skips: all but top-k of each MoE layer's experts (a fused [E, ...]
    // tensor contributes k / E of itself).
    if (t.family != ParamFamily::kRoutedExperts || (t.expert >= 0 && t.expert < spec.num_experts_per_tok)) {
      sum.active_per_token += t.numel();
    } else if (t.expert < 0) {
      sum.active_per_token += t.numel() / spec.num_experts * spec.num_experts_per_tok;
    }
  }
  return sum;
}

TEST(ParamCountTest, Llama3_8B) {
  ParamCounts c = CountParameters(ParsePresetOrDie("llama-3-8b.json"));
  EXPECT_EQ(c.total, 8'030'261'248);  // "8.03B" on the model card
  EXPECT_EQ(c.active_per_token, c.total);
  EXPECT_EQ(c.by_family[ParamFamily::kEmbedding], 128'256LL * 4096);
  EXPECT_EQ(c.by_family[ParamFamily::kLmHead], 128'256LL * 4096);
  EXPECT_EQ(c.by_family[ParamFamily::kRouter], 0);
  EXPECT_EQ(c.largest_tensor, 128'256LL * 4096);
}

TEST(ParamCountTest, Llama3_70B) {
  ParamCounts c = CountParameters(ParsePresetOrDie("llama-3-70b.json"));
  EXPECT_EQ(c.total, 70'553'706'496);
}

TEST(ParamCountTest, Mixtral8x7B) {
  ParamCounts c = CountParameters(ParsePresetOrDie("mixtral-8x7b.json"));
  EXPECT_EQ(c.total, 46'702'792'704);
  // "12.9B active": 32 layers x (attention 41,943,040 + norms 8,192 + router 32,768 + 2 experts x
  // 176,160,768) + embedding and lm_head 262,144,000 + final norm 4,096.
  EXPECT_EQ(c.active_per_token, 12'879'925'248);
  EXPECT_EQ(c.by_family[ParamFamily::kRoutedExperts], 32LL * 8 * 3 * 4096 * 14336);
  EXPECT_EQ(c.by_family[ParamFamily::kRouter], 32LL * 8 * 4096);
  EXPECT_EQ(c.by_family[ParamFamily::kDenseMlp], 0);
}

TEST(ParamCountTest, Qwen3_30B_A3B) {
  ParamCounts c = CountParameters(ParsePresetOrDie("qwen3-30b-a3b.json"));
  // Matches the published 30,532,122,624 exactly: head_dim is 128 (config key), not
  // hidden/heads = 64, so q_proj is [4096, 2048]; 48 layers x 623,120,640 + 2 x 151936 x 2048
  // (untied) + 2048.
  EXPECT_EQ(c.total, 30'532'122'624);
  // "3.3B activated": 8 of 128 experts per layer.
  EXPECT_EQ(c.active_per_token, 3'353'032'704);
  EXPECT_EQ(c.by_family[ParamFamily::kNorm], 48LL * (2 * 2048 + 2 * 128) + 2048);
}

TEST(ParamCountTest, Qwen3_8B) {
  ParamCounts c = CountParameters(ParsePresetOrDie("qwen3-8b.json"));
  // The checkpoint's 8,190,735,360: 36 layers x (attention 41,943,040 + MLP 150,994,944 + norms
  // 2 x 4096 + q/k norms 2 x 128) + untied embedding and lm_head 2 x 151936 x 4096 + final norm;
  // 6.95B without the embeddings (Qwen3 technical report).
  EXPECT_EQ(c.total, 8'190'735'360);
  EXPECT_EQ(c.total - c.by_family[ParamFamily::kEmbedding] - c.by_family[ParamFamily::kLmHead],
            6'946'075'648);
}

TEST(ParamCountTest, Qwen15MoeA27B) {
  ParamCounts c = CountParameters(ParsePresetOrDie("qwen2-moe-a2.7b.json"));
  EXPECT_EQ(c.total, 14'315'784'192);            // "14.3B parameters in total"
  EXPECT_EQ(c.active_per_token, 2'689'173'504);  // "2.7B activated": 4 of 60 + shared expert
  // Shared expert (3 x 2048 x 5632) plus its [1, 2048] gate, in each of 24 layers.
  EXPECT_EQ(c.by_family[ParamFamily::kSharedExperts], 24LL * (3 * 2048 * 5632 + 2048));
  // q/k/v biases, no o_proj bias.
  EXPECT_EQ(c.by_family[ParamFamily::kAttention], 24LL * (4 * 2048 * 2048 + 3 * 2048));
}

TEST(ParamCountTest, Gpt3_175BLlamaStyle) {
  ParamCounts c = CountParameters(ParsePresetOrDie("gpt3-175b.json"));
  // 12h^2 per layer with the 8h/3 gated MLP; GPT-3's biases and learned positions (~38M) are not
  // modelled, hence 174.566B rather than 174.6B.
  EXPECT_EQ(c.total, 174'566'105'088);
  EXPECT_EQ(c.by_family[ParamFamily::kLmHead], 0);  // tied
  EXPECT_EQ(c.by_family[ParamFamily::kAttention] + c.by_family[ParamFamily::kDenseMlp],
            96LL * 12 * 12288 * 12288);
}

TEST(ParamCountTest, TinyPresets) {
  EXPECT_EQ(CountParameters(ParsePresetOrDie("tiny-llama.json")).total, 158'016);
  ParamCounts moe = CountParameters(ParsePresetOrDie("tiny-moe.json"));
  EXPECT_EQ(moe.total, 140'160);
  EXPECT_EQ(moe.active_per_token, 140'160 - 2 * 2 * 3 * 64 * 32);
}

TEST(ParamCountTest, SumOverTensorsMatchesEveryPreset) {
  for (const char* file : testing::kModelPresets) {
    SCOPED_TRACE(file);
    ModelSpec spec = ParsePresetOrDie(file);
    ParamCounts counted = CountParameters(spec);
    ParamCounts summed = SumTensors(spec);
    EXPECT_EQ(counted.total, summed.total);
    EXPECT_EQ(counted.active_per_token, summed.active_per_token);
    EXPECT_EQ(counted.by_family, summed.by_family);
    EXPECT_EQ(counted.largest_tensor, summed.largest_tensor);
  }
}

TEST(ParamCountTest, MixedDenseAndSparseLayersMatchTensors) {
  // 4 layers, every 2nd sparse (layers 1 and 3), layer 3 forced dense: only layer 1 is MoE.
  Json config = testing::LoadModelPreset("qwen2-moe-a2.7b.json");
  config["num_hidden_layers"] = 4;
  config["decoder_sparse_step"] = 2;
  config["mlp_only_layers"] = {3};
  Result<ModelSpec> spec = ParseHfConfig(config);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->NumMoeLayers(), 1);
  EXPECT_TRUE(spec->IsMoeLayer(1));
  EXPECT_FALSE(spec->IsMoeLayer(3));
  ParamCounts c = CountParameters(*spec);
  EXPECT_EQ(c.by_family[ParamFamily::kDenseMlp], 3LL * 3 * 2048 * 5632);
  EXPECT_EQ(c.by_family[ParamFamily::kRouter], 60LL * 2048);
  ParamCounts summed = SumTensors(*spec);
  EXPECT_EQ(c.by_family, summed.by_family);
  EXPECT_EQ(c.active_per_token, summed.active_per_token);
}

TEST(ParamCountTest, BiasOptionsMatchTensors) {
  Json config = testing::LoadModelPreset("tiny-llama.json");
  config["attention_bias"] = true;
  config["mlp_bias"] = true;
  config["tie_word_embeddings"] = true;
  Result<ModelSpec> spec = ParseHfConfig(config);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ParamCounts c = CountParameters(*spec);
  // q 64 + k 32 + v 32 + o 64 attention biases; gate 176 + up 176 + down 64 MLP biases; per layer.
  EXPECT_EQ(c.total, 158'016 - 512 * 64 + 2 * (64 + 32 + 32 + 64) + 2 * (176 + 176 + 64));
  EXPECT_EQ(c.total, SumTensors(*spec).total);
  EXPECT_EQ(c.by_family, SumTensors(*spec).by_family);
}

TEST(ParamCountTest, Qwen3DenseHeadDimDefaultsTo128) {
  // Qwen3-0.6B without its head_dim key: Qwen3Config's default 128 applies, not 1024 / 16 = 64.
  Json config = {{"model_type", "qwen3"},    {"hidden_size", 1024},
                 {"num_hidden_layers", 28},  {"num_attention_heads", 16},
                 {"num_key_value_heads", 8}, {"intermediate_size", 3072},
                 {"vocab_size", 151936},     {"tie_word_embeddings", true}};
  Result<ModelSpec> spec = ParseHfConfig(config);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->head_dim, 128);
  ParamCounts c = CountParameters(*spec);
  EXPECT_EQ(c.total, 596'049'920);  // "0.6B, 0.44B non-embedding"
  EXPECT_EQ(c.total - c.by_family[ParamFamily::kEmbedding], 440'467'456);
}

}  // namespace
}  // namespace dsp
