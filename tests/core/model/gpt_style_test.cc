// SPDX-License-Identifier: Apache-2.0
// GPT-2 and BLOOM config.json files load as themselves: their parameter counts match the
// published checkpoints exactly, and the tensor list agrees with the arithmetic.
#include <gtest/gtest.h>

#include "core/model/model_spec.h"

namespace dsp {
namespace {

int64_t SumTensors(const ModelSpec& m) {
  int64_t n = 0;
  for (const ParamTensor& t : ParameterTensors(m)) n += t.numel();
  return n;
}

TEST(GptStyleModelTest, Gpt2SmallHas124439808Parameters) {
  // openai-community/gpt2 config.json (transformers GPT2Config keys).
  auto m = ParseHfConfig(Json::parse(R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12,
      "n_head": 12, "n_positions": 1024, "vocab_size": 50257, "n_inner": null})"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_FALSE(m->gated_mlp);
  EXPECT_TRUE(m->layer_norm);
  EXPECT_TRUE(m->tie_word_embeddings);
  EXPECT_EQ(m->intermediate_size, 4 * 768);
  EXPECT_EQ(m->learned_positions, 1024);
  EXPECT_DOUBLE_EQ(m->hidden_dropout, 0.1);  // GPT2Config's resid_pdrop default
  const ParamCounts c = CountParameters(*m);
  EXPECT_EQ(c.total, 124'439'808);  // the checkpoint's count
  EXPECT_EQ(SumTensors(*m), c.total);
  EXPECT_EQ(c.by_family.at(ParamFamily::kLmHead), 0);  // tied
  EXPECT_EQ(ParameterTensors(*m).front().name, "transformer.wte.weight");
}

TEST(GptStyleModelTest, Bloom560mHas559214592Parameters) {
  // bigscience/bloom-560m config.json: n_embed and n_layer, ALiBi, embedding LayerNorm.
  auto m = ParseHfConfig(Json::parse(R"({"model_type": "bloom", "n_embed": 1024, "n_layer": 24,
      "num_attention_heads": 16, "vocab_size": 250880, "hidden_dropout": 0.0,
      "attention_dropout": 0.0})"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(m->embedding_norm);
  EXPECT_EQ(m->learned_positions, 0);
  EXPECT_EQ(m->hidden_dropout, 0.0);
  const ParamCounts c = CountParameters(*m);
  EXPECT_EQ(c.total, 559'214'592);
  EXPECT_EQ(SumTensors(*m), c.total);
}

TEST(GptStyleModelTest, AliasesMustAgreeAndHeadsMustDivide) {
  auto both = ParseHfConfig(Json::parse(R"({"model_type": "gpt2", "n_embd": 768,
      "hidden_size": 1024, "n_layer": 2, "n_head": 12, "vocab_size": 100})"));
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().message.find("disagrees"), std::string::npos) << both.error().message;
  auto heads = ParseHfConfig(Json::parse(R"({"model_type": "gpt2", "n_embd": 770, "n_layer": 2,
      "n_head": 12, "vocab_size": 100})"));
  EXPECT_FALSE(heads.ok());
  auto dropout = ParseHfConfig(Json::parse(R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 2,
      "n_head": 12, "vocab_size": 100, "resid_pdrop": 1.5})"));
  ASSERT_FALSE(dropout.ok());
  EXPECT_NE(dropout.error().message.find("resid_pdrop"), std::string::npos);
  auto missing = ParseHfConfig(Json::parse(R"({"model_type": "bloom", "n_layer": 2,
      "n_head": 4, "vocab_size": 100})"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("n_embed"), std::string::npos) << missing.error().message;
}

}  // namespace
}  // namespace dsp
