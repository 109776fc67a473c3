// SPDX-License-Identifier: Apache-2.0
// AutoTP without a preset or partition_config (autotp_hf_plan.cc): transformers' tp_plan as
// DeepSpeedEngine._apply_autotp_partitioning converts it (runtime/engine.py, DeepSpeed 0.19.6;
// TPPlanConverter in module_inject/tp_plan_converter.py), the ValueError on unsupported styles
// (PR #8204) and the fallback before it, and the per-head sinks AutoTP never shards.
#include "core/rules/tensor_parallel_internal.h"
#include "tests/core/rules/tensor_parallel_test_util.h"

namespace dsp {
namespace {

using testing::Validate;
using tptest::At;
using tptest::MessageOf;
using tptest::Specs;
using tptest::Tp;

const std::string kAutotpSize = "/tensor_parallel/autotp_size";
const std::string kNoPreset = Tp(R"({"autotp_size": 2})");

ValidateOptions With(const ModelSpec* model, const char* ds = nullptr,
                     const char* transformers = nullptr) {
  ValidateOptions o = At(8, model);
  if (ds != nullptr) o.version = *DeepSpeedVersion::Parse(ds);
  if (transformers != nullptr) o.transformers_version = PackageVersion::Parse(transformers);
  return o;
}

TEST(HfTpPlanTest, PatternsConvertAsTpPlanConverterDoes) {
  // _wildcard_to_regex: '.' -> '\.', '*' -> '.*', a leading '.*'; convert() appends '\.weight$'.
  EXPECT_EQ(autotp::HfPatternRegex("layers.*.self_attn.q_proj"),
            R"(.*layers\..*\.self_attn\.q_proj\.weight$)");
  EXPECT_EQ(autotp::HfPatternRegex("lm_head"), R"(.*lm_head\.weight$)");
  EXPECT_EQ(autotp::HfPatternRegex("embed_out.weight"), R"(.*embed_out\.weight$)");
}

TEST(HfTpPlanTest, StylesDeepSpeedRejects) {
  const ModelSpec mixtral = testing::ParsePresetOrDie("mixtral-8x7b.json");
  const ModelSpec qwen3 = testing::ParsePresetOrDie("qwen3-8b.json");
  const ModelSpec llama = testing::ParsePresetOrDie("llama-3-8b.json");
  const auto* plan = autotp::HfTpPlan(mixtral);
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(autotp::UnsupportedHfStyles(*plan, DeepSpeedVersion::Newest()),
            (std::vector<std::string>{"moe_tp_experts", "packed_colwise"}));
  // replicated_with_grad_allreduce (Qwen3's q_norm/k_norm) joined SUPPORTED_STYLES in 0.19.6.
  EXPECT_TRUE(autotp::UnsupportedHfStyles(*autotp::HfTpPlan(qwen3), DeepSpeedVersion::Newest()).empty());
  EXPECT_EQ(autotp::UnsupportedHfStyles(*autotp::HfTpPlan(qwen3), {0, 19, 5}),
            std::vector<std::string>{"replicated_with_grad_allreduce"});
  EXPECT_TRUE(autotp::UnsupportedHfStyles(*autotp::HfTpPlan(llama), DeepSpeedVersion::Newest()).empty());
}

TEST(HfTpPlanTest, TypesWithoutAModelledPlan) {
  // gpt2, bloom and falcon have no base_model_tp_plan (the heuristic parser decides); gpt_oss's
  // moved across 5.x; a multimodal checkpoint's plan is its wrapper's.
  for (const char* file : {"gpt2.json", "bloom-176b.json", "falcon-7b.json", "gpt-oss-20b.json",
                           "llama-4-scout-17b-16e.json", "qwen3.5-27b.json", "gemma-3-27b.json"}) {
    EXPECT_EQ(autotp::HfTpPlan(testing::ParsePresetOrDie(file)), nullptr) << file;
  }
}

TEST(HfTpPlanTest, UnsupportedPlansAreTheValueError) {
  for (const char* file : {"mixtral-8x7b.json", "qwen3-30b-a3b.json", "deepseek-v3.json",
                           "deepseek-v2-lite.json", "phi-3-mini-4k.json",
                           "qwen3-next-80b-a3b-thinking.json"}) {
    const ModelSpec m = testing::ParsePresetOrDie(file);
    auto r = Validate(kNoPreset, With(&m));
    EXPECT_DIAG(r, "tp-hf-plan-unsupported", kAutotpSize);
    EXPECT_EQ(testing::Find(r, "tp-hf-plan-unsupported")->severity, Severity::kError) << file;
    EXPECT_NE(MessageOf(r, "tp-hf-plan-unsupported").find("raises ValueError"), std::string::npos);
  }
  const ModelSpec phi3 = testing::ParsePresetOrDie("phi-3-mini-4k.json");
  const std::string msg = MessageOf(Validate(kNoPreset, With(&phi3)), "tp-hf-plan-unsupported");
  EXPECT_NE(msg.find("layers.*.self_attn.o_proj: rowwise_split_input"), std::string::npos) << msg;
  EXPECT_NE(msg.find("['rowwise_split_input']"), std::string::npos) << msg;
  EXPECT_NE(msg.find("preset_model to \"phi3\""), std::string::npos) << msg;
  const ModelSpec v3 = testing::ParsePresetOrDie("deepseek-v3.json");
  EXPECT_NE(MessageOf(Validate(kNoPreset, With(&v3)), "tp-hf-plan-unsupported")
                .find("['moe_tp_experts', 'packed_colwise']"),
            std::string::npos);
}

TEST(HfTpPlanTest, APresetOrPartitionConfigReplacesThePlan) {
  const ModelSpec mixtral = testing::ParsePresetOrDie("mixtral-8x7b.json");
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 2, "preset_model": "mixtral"})"), With(&mixtral)),
                 "tp-hf-plan-unsupported");
  EXPECT_NO_DIAG(Validate(Specs(tptest::kLlamaSpecs), With(&mixtral)), "tp-hf-plan-unsupported");
  // An empty partition_config is no config (get_partition_config_object: `if self.partition_config`).
  EXPECT_DIAG(Validate(Tp(R"({"autotp_size": 2, "partition_config": {}})"), With(&mixtral)),
              "tp-hf-plan-unsupported", kAutotpSize);
  // AutoTP off: nothing is converted.
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 1})"), With(&mixtral)), "tp-hf-plan-unsupported");
}

TEST(HfTpPlanTest, OlderReleasesFallBackAndOlderTransformersAreNotModelled) {
  const ModelSpec moe = testing::ParsePresetOrDie("qwen3-30b-a3b.json");
  // 0.18.9 - 0.19.5: convert() returned None and the engine logged a fallback to tp_parser.
  auto fallback = Validate(kNoPreset, With(&moe, "0.19.5"));
  EXPECT_DIAG(fallback, "tp-hf-plan-unsupported", kAutotpSize);
  EXPECT_EQ(testing::Find(fallback, "tp-hf-plan-unsupported")->severity, Severity::kWarning);
  EXPECT_NE(MessageOf(fallback, "tp-hf-plan-unsupported").find("heuristic AutoTP.tp_parser"),
            std::string::npos);
  // Before PR #7901 (0.18.9) there is no tp_plan path at all.
  EXPECT_NO_DIAG(Validate(kNoPreset, With(&moe, "0.18.8")), "tp-hf-plan-unsupported");
  // transformers 4.x planned experts per expert (colwise/rowwise): not modelled, so not reported.
  EXPECT_NO_DIAG(Validate(kNoPreset, With(&moe, nullptr, "4.57.1")), "tp-hf-plan-unsupported");
  EXPECT_DIAG(Validate(kNoPreset, With(&moe, nullptr, "5.2.0")), "tp-hf-plan-unsupported",
              kAutotpSize);
}

// The plans that convert pair their columns and rows as the pairing rules require (and
// Qwen3/Gemma 3 mark their q/k norms replicated_with_grad_allreduce): no tp- error, no false alarm.
TEST(HfTpPlanTest, PlansThatConvertAreClean) {
  for (const char* file : {"llama-3-8b.json", "qwen3-8b.json", "gemma-2-9b-it.json",
                           "gemma-3-1b.json", "gpt-neox-20b.json", "pythia-160m.json",
                           "qwen2-moe-a2.7b.json", "tiny-llama.json"}) {
    const ModelSpec m = testing::ParsePresetOrDie(file);
    auto r = Validate(kNoPreset, With(&m));
    for (const auto& d : r.diagnostics) {
      EXPECT_FALSE(d.rule_id.starts_with("tp-") && d.severity == Severity::kError)
          << file << "\n" << testing::Dump(r);
    }
  }
  // At 0.19.5 Qwen3's plan falls back (its q/k norm style is unknown there): a warning only.
  const ModelSpec qwen3 = testing::ParsePresetOrDie("qwen3-8b.json");
  EXPECT_EQ(testing::Find(Validate(kNoPreset, With(&qwen3, "0.19.5")), "tp-hf-plan-unsupported")
                ->severity,
            Severity::kWarning);
}

// gpt_oss: self_attn.sinks [N] is a raw parameter; AutoTP replaces 2-D-weight modules only.
TEST(HfTpPlanTest, SinksStayWholeWhenQkvSplit) {
  const ModelSpec oss = testing::ParsePresetOrDie("gpt-oss-20b.json");
  const std::string attention = R"json(
    {"patterns": [".*\\.self_attn\\.o_proj\\.weight$"], "partition_type": "row"},
    {"patterns": [".*\\.self_attn\\.[qkv]_proj\\.weight$"], "partition_type": "column"})json";
  auto r = Validate(Specs(attention), With(&oss));
  EXPECT_DIAG(r, "tp-head-params-unsharded", "/tensor_parallel/partition_config/layer_specs/1");
  EXPECT_NE(MessageOf(r, "tp-head-params-unsharded").find("self_attn.sinks [64]"),
            std::string::npos);
  EXPECT_NE(MessageOf(r, "tp-head-params-unsharded").find("computes 32 heads"), std::string::npos);
  // Attention skipped, only the MLP's router left alone: nothing splits the heads.
  const std::string skip = R"json(
    {"patterns": [".*\\.self_attn\\..*"], "partition_type": "skip"})json";
  EXPECT_NO_DIAG(Validate(Specs(skip), With(&oss)), "tp-head-params-unsharded");
  // Models without sinks never see the rule.
  const ModelSpec llama = testing::ParsePresetOrDie("llama-3-8b.json");
  EXPECT_NO_DIAG(Validate(Specs(tptest::kLlamaSpecs), With(&llama)), "tp-head-params-unsharded");
}

}  // namespace
}  // namespace dsp
