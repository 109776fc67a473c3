// SPDX-License-Identifier: Apache-2.0
// AutoEP rules (expert_parallel_rules.cc, expert_parallel_fields.cc): one config that trips each
// rule and one that does not, with the pointer the finding is reported at. The group-size and
// folding rules are in folding_rules_test.cc.
#include "tests/core/model/model_test_util.h"
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Find;
using testing::Validate;
using testing::World;

ValidateOptions At(int64_t world, const ModelSpec* model = nullptr, const char* version = nullptr) {
  ValidateOptions o;
  o.world_size = world;
  o.model = model;
  if (version != nullptr) o.version = *DeepSpeedVersion::Parse(version);
  return o;
}

// A config with AutoEP settings `ep` (the inside of the expert_parallel object) and other
// top-level keys `extra`.
std::string Ep(const std::string& ep, const std::string& extra = "") {
  return R"({"train_micro_batch_size_per_gpu": 1, )" + extra + (extra.empty() ? "" : ", ") +
         R"("expert_parallel": {)" + ep + "}}";
}

std::string MessageOf(const FileReport& r, const std::string& id) {
  const Diagnostic* d = Find(r, id);
  return d == nullptr ? "" : d->message + " | " + d->hint;
}

const char* kOn = R"("enabled": true, "autoep_size": 4)";

TEST(ExpertParallelRulesTest, CleanConfigHasNoFindings) {
  auto r = Validate(
      Ep(std::string(kOn) + R"(, "preset_model": "mixtral", "score_func": "softmax")"), World(8));
  for (const auto& d : r.diagnostics)
    EXPECT_FALSE(d.rule_id.starts_with("ep-")) << testing::Dump(r);
}

TEST(ExpertParallelRulesTest, SectionIgnoredBeforeAutoEp) {
  auto old = Validate(Ep(kOn), At(8, nullptr, "0.19.1"));
  EXPECT_DIAG(old, "ep-unsupported-version", "/expert_parallel");
  EXPECT_EQ(Find(old, "ep-size-one"), nullptr);
  EXPECT_NO_DIAG(Validate(Ep(kOn), At(8, nullptr, "0.19.2")), "ep-unsupported-version");
  EXPECT_NO_DIAG(Validate(Ep(R"("enabled": false)"), At(8, nullptr, "0.19.1")),
                 "ep-unsupported-version");
}

TEST(ExpertParallelRulesTest, LoadBalanceCoeffFailsAtParseTime) {
  auto r = Validate(Ep(R"("enabled": false, "load_balance_coeff": 0.001)"), World(8));
  EXPECT_DIAG(r, "ep-load-balance-coeff", "/expert_parallel/load_balance_coeff");
  EXPECT_NO_DIAG(Validate(Ep(std::string(kOn) + R"(, "load_balance_coeff": null)"), World(8)),
                 "ep-load-balance-coeff");
}

TEST(ExpertParallelRulesTest, EnabledIsTestedForTruthiness) {
  auto r = Validate(Ep(R"("enabled": "false", "autoep_size": 4)"), World(8));
  EXPECT_DIAG(r, "ep-enabled-not-bool", "/expert_parallel/enabled");
  EXPECT_NE(MessageOf(r, "ep-enabled-not-bool").find("AutoEP is ON"), std::string::npos);
  // "false" turns AutoEP on, the opposite of what it says: an error. 1 and "true" do what they
  // say (auto_ep_config.py parse_autoep_config keeps the raw value): a warning.
  EXPECT_EQ(Find(r, "ep-enabled-not-bool")->severity, Severity::kError);
  for (const char* said : {R"("enabled": 1)", R"("enabled": "true")"}) {
    auto one = Validate(Ep(std::string(said) + R"(, "autoep_size": 4)"), World(8));
    ASSERT_NE(Find(one, "ep-enabled-not-bool"), nullptr) << said;
    EXPECT_EQ(Find(one, "ep-enabled-not-bool")->severity, Severity::kWarning) << said;
  }
  EXPECT_NO_DIAG(Validate(Ep(kOn), World(8)), "ep-enabled-not-bool");
}

TEST(ExpertParallelRulesTest, SettingsIgnoredWhileDisabled) {
  EXPECT_DIAG(Validate(Ep(R"("autoep_size": 4, "preset_model": "mixtral")"), World(8)),
              "ep-disabled-settings", "/expert_parallel");
  EXPECT_DIAG(Validate(Ep(R"("enabled": false, "autoep_size": 4)"), World(8)),
              "ep-disabled-settings", "/expert_parallel/enabled");
  EXPECT_NO_DIAG(Validate(Ep(R"("enabled": false)"), World(8)), "ep-disabled-settings");
  EXPECT_NO_DIAG(Validate(Ep(kOn), World(8)), "ep-disabled-settings");
}

TEST(ExpertParallelRulesTest, AutoTpRejectedBeforeFolding) {
  const std::string cfg = Ep(kOn, R"("tensor_parallel": {"autotp_size": 2})");
  auto old = Validate(cfg, At(8, nullptr, "0.19.2"));
  EXPECT_DIAG(old, "ep-autotp-unsupported", "/tensor_parallel/autotp_size");
  EXPECT_NE(
      MessageOf(old, "ep-autotp-unsupported").find("AutoEP does not currently support AutoTP"),
      std::string::npos);
  EXPECT_EQ(Find(old, "ep-fold-needs-ep"), nullptr);
  EXPECT_NO_DIAG(Validate(cfg, At(8, nullptr, ds_release::kAutoEpFolding.ToString().c_str())),
                 "ep-autotp-unsupported");
}

TEST(ExpertParallelRulesTest, ValidateFoldingRoutingMustBeBool) {
  EXPECT_DIAG(Validate(Ep(std::string(kOn) + R"(, "validate_folding_routing": "yes")"), World(8)),
              "ep-folding-routing-type", "/expert_parallel/validate_folding_routing");
  EXPECT_NO_DIAG(Validate(Ep(std::string(kOn) + R"(, "validate_folding_routing": true)"), World(8)),
                 "ep-folding-routing-type");
}

TEST(ExpertParallelRulesTest, UnknownPreset) {
  auto r = Validate(Ep(std::string(kOn) + R"(, "preset_model": "Mixtral")"), World(8));
  EXPECT_DIAG(r, "ep-unknown-preset", "/expert_parallel/preset_model");
  const std::string msg = MessageOf(r, "ep-unknown-preset");
  EXPECT_NE(msg.find("Available presets: ['mixtral', 'qwen3_moe', 'qwen3_5_moe', 'deepseek_v2', "
                     "'deepseek_v3']"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("did you mean \"mixtral\""), std::string::npos) << msg;
  EXPECT_NO_DIAG(Validate(Ep(std::string(kOn) + R"(, "preset_model": "qwen3_moe")"), World(8)),
                 "ep-unknown-preset");
}

TEST(ExpertParallelRulesTest, EnumChoices) {
  auto r = Validate(Ep(std::string(kOn) + R"(, "score_apply": "before", "combine_impl": null)"),
                    World(8));
  EXPECT_DIAG(r, "ep-invalid-choice", "/expert_parallel/score_apply");
  EXPECT_DIAG(r, "ep-invalid-choice", "/expert_parallel/combine_impl");
  EXPECT_NE(MessageOf(r, "ep-invalid-choice").find("('auto', 'pre', 'post')"), std::string::npos);
  EXPECT_NO_DIAG(
      Validate(
          Ep(std::string(kOn) +
             R"(, "score_apply": "auto", "combine_impl": "legacy_bmm", "score_func": "sigmoid")"),
          World(8)),
      "ep-invalid-choice");
}

TEST(ExpertParallelRulesTest, GroupLimitedRoutingCounts) {
  EXPECT_DIAG(Validate(Ep(std::string(kOn) + R"(, "num_limited_groups": 0)"), World(8)),
              "ep-group-counts", "/expert_parallel/num_limited_groups");
  EXPECT_DIAG(Validate(Ep(std::string(kOn) + R"(, "num_expert_groups": 0)"), World(8)),
              "ep-group-counts", "/expert_parallel/num_expert_groups");
  EXPECT_DIAG(
      Validate(Ep(std::string(kOn) + R"(, "num_expert_groups": 2, "num_limited_groups": 4)"),
               World(8)),
      "ep-group-counts", "/expert_parallel/num_limited_groups");
  EXPECT_NO_DIAG(
      Validate(Ep(std::string(kOn) + R"(, "num_expert_groups": 4, "num_limited_groups": 2)"),
               World(8)),
      "ep-group-counts");
  // With the model: the groups must divide the experts, and each needs the other.
  const ModelSpec moe = testing::ParsePresetOrDie("tiny-moe.json");  // 4 experts
  EXPECT_DIAG(
      Validate(
          Ep(R"("enabled": true, "autoep_size": 2, "num_expert_groups": 3, "num_limited_groups": 1)"),
          At(8, &moe)),
      "ep-group-counts", "/expert_parallel/num_expert_groups");
  EXPECT_DIAG(
      Validate(Ep(R"("enabled": true, "autoep_size": 2, "num_limited_groups": 1)"), At(8, &moe)),
      "ep-group-counts", "/expert_parallel/num_limited_groups");
  EXPECT_NO_DIAG(
      Validate(
          Ep(R"("enabled": true, "autoep_size": 2, "num_expert_groups": 2, "num_limited_groups": 1)"),
          At(8, &moe)),
      "ep-group-counts");
}

TEST(ExpertParallelRulesTest, AttributeNames) {
  auto dotted = Validate(Ep(std::string(kOn) + R"(, "router_pattern": "mlp.gate")"), World(8));
  EXPECT_DIAG(dotted, "ep-attribute-name", "/expert_parallel/router_pattern");
  EXPECT_NE(MessageOf(dotted, "ep-attribute-name").find("direct attribute name (no dots)"),
            std::string::npos);
  EXPECT_DIAG(Validate(Ep(std::string(kOn) + R"(, "expert_w1": "")"), World(8)),
              "ep-attribute-name", "/expert_parallel/expert_w1");
  EXPECT_NO_DIAG(
      Validate(Ep(std::string(kOn) + R"(, "router_pattern": "gate", "expert_w3": null)"), World(8)),
      "ep-attribute-name");
}

TEST(ExpertParallelRulesTest, FieldTypes) {
  EXPECT_DIAG(Validate(Ep(std::string(kOn) + R"(, "has_shared_experts": "yes")"), World(8)),
              "ep-field-type", "/expert_parallel/has_shared_experts");
  EXPECT_DIAG(Validate(Ep(std::string(kOn) + R"(, "routed_scaling_factor": "2.5")"), World(8)),
              "ep-field-type", "/expert_parallel/routed_scaling_factor");
  EXPECT_NO_DIAG(Validate(Ep(std::string(kOn) +
                             R"(, "routed_scaling_factor": 2.5, "has_shared_experts": false)"),
                          World(8)),
                 "ep-field-type");
}

TEST(ExpertParallelRulesTest, MoeLayerPatternIsAPythonRegex) {
  EXPECT_DIAG(
      Validate(Ep(std::string(kOn) + R"(, "moe_layer_pattern": "model\\.layers\\.(\\d+\\.mlp")"),
               World(8)),
      "ep-moe-layer-pattern", "/expert_parallel/moe_layer_pattern");
  EXPECT_NO_DIAG(Validate(Ep(std::string(kOn) +
                             R"(, "moe_layer_pattern": "model\\.layers\\.(?P<i>\\d+)\\.mlp")"),
                          World(8)),
                 "ep-moe-layer-pattern");
}

TEST(ExpertParallelRulesTest, DeepSpeedWarnings) {
  EXPECT_DIAG(Validate(Ep(R"("enabled": true, "autoep_size": 1)"), World(8)), "ep-size-one",
              "/expert_parallel/autoep_size");
  EXPECT_DIAG(Validate(Ep(R"("enabled": true)"), World(8)), "ep-size-one",
              "/expert_parallel/enabled");
  EXPECT_NO_DIAG(Validate(Ep(kOn), World(8)), "ep-size-one");

  EXPECT_DIAG(
      Validate(Ep(std::string(kOn) + R"(, "top_k": 2, "top_k_attr": "num_experts_per_tok")"),
               World(8)),
      "ep-top-k-override", "/expert_parallel/top_k_attr");
  EXPECT_NO_DIAG(
      Validate(Ep(std::string(kOn) + R"(, "top_k": "auto", "top_k_attr": "num_experts_per_tok")"),
               World(8)),
      "ep-top-k-override");

  EXPECT_DIAG(Validate(Ep(std::string(kOn) + R"(, "has_shared_experts": true)"), World(8)),
              "ep-shared-experts-pairing", "/expert_parallel/has_shared_experts");
  EXPECT_DIAG(
      Validate(Ep(std::string(kOn) + R"(, "shared_experts_pattern": "shared_expert")"), World(8)),
      "ep-shared-experts-pairing", "/expert_parallel/shared_experts_pattern");
  EXPECT_NO_DIAG(
      Validate(Ep(std::string(kOn) +
                  R"(, "has_shared_experts": true, "shared_experts_pattern": "shared_expert")"),
               World(8)),
      "ep-shared-experts-pairing");

  EXPECT_DIAG(Validate(Ep(std::string(kOn) + R"(, "preset_model": "mixtral", "expert_w1": "w1")"),
                       World(8)),
              "ep-custom-fields", "/expert_parallel/preset_model");
  EXPECT_NO_DIAG(Validate(Ep(std::string(kOn) + R"(, "preset_model": "mixtral")"), World(8)),
                 "ep-custom-fields");
}

TEST(ExpertParallelRulesTest, DataBeforeExpertWithSequenceParallel) {
  auto r = Validate(
      Ep(kOn, R"("sequence_parallel_size": 2, "use_data_before_expert_parallelism": true)"),
      World(8));
  EXPECT_DIAG(r, "ep-data-before-sequence-parallel", "/use_data_before_expert_parallelism");
  EXPECT_NO_DIAG(Validate(Ep(kOn, R"("use_data_before_expert_parallelism": true)"), World(8)),
                 "ep-data-before-sequence-parallel");
}

TEST(ExpertParallelRulesTest, ZeroStage3Restrictions) {
  auto r = Validate(
      Ep(kOn,
         R"("zero_optimization": {"stage": 3, "mics_shard_size": 4, "zero_hpz_partition_size": 2,
                                  "zero_quantized_gradients": true}, "sequence_parallel_size": 2)"),
      World(8));
  EXPECT_DIAG(r, "ep-zero3-unsupported", "/zero_optimization/mics_shard_size");
  EXPECT_DIAG(r, "ep-zero3-unsupported", "/zero_optimization/zero_hpz_partition_size");
  EXPECT_DIAG(r, "ep-zero3-unsupported", "/zero_optimization/zero_quantized_gradients");
  EXPECT_DIAG(r, "ep-zero3-unsupported", "/sequence_parallel_size");
  EXPECT_NO_DIAG(Validate(Ep(kOn, R"("zero_optimization": {"stage": 3})"), World(8)),
                 "ep-zero3-unsupported");
  // Before AutoEP learnt ZeRO-3, any MoE model was rejected under stage 3.
  auto old = Validate(Ep(kOn, R"("zero_optimization": {"stage": 3})"), At(8, nullptr, "0.19.2"));
  EXPECT_DIAG(old, "ep-zero3-unsupported", "/zero_optimization/stage");
  EXPECT_NE(MessageOf(old, "ep-zero3-unsupported").find("MoE not supported with Stage 3"),
            std::string::npos);
}

TEST(ExpertParallelRulesTest, ExpertsAgainstAutoepSize) {
  const ModelSpec mixtral = testing::ParsePresetOrDie("mixtral-8x7b.json");  // 8 experts
  auto over = Validate(Ep(R"("enabled": true, "autoep_size": 16)"), At(16, &mixtral));
  EXPECT_DIAG(over, "ep-experts-divisibility", "/expert_parallel/autoep_size");
  const std::string msg = MessageOf(over, "ep-experts-divisibility");
  // transformers 5 names Mixtral's block model.layers.N.mlp, which the mixtral preset matches.
  EXPECT_NE(msg.find("exceeds num_experts=8 in layer 'model.layers.0.mlp'"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("[1, 2, 4, 8]"), std::string::npos) << msg;
  const ModelSpec qwen = testing::ParsePresetOrDie("qwen3-30b-a3b.json");  // 128 experts
  auto uneven = Validate(Ep(R"("enabled": true, "autoep_size": 3)"), At(6, &qwen));
  EXPECT_DIAG(uneven, "ep-experts-divisibility", "/expert_parallel/autoep_size");
  EXPECT_NE(MessageOf(uneven, "ep-experts-divisibility")
                .find("Suggested autoep_size values: [1, 2, 4, 8, 16, 32, 64, 128]"),
            std::string::npos);
  EXPECT_NO_DIAG(Validate(Ep(R"("enabled": true, "autoep_size": 8)"), At(8, &mixtral)),
                 "ep-experts-divisibility");
}

// validate_autoep_post_detection checks the counts after fill_autoep_config_from_hf filled the
// null ones from the model config's n_group / topk_group (auto_ep_config.py, 0.19.6).
TEST(ExpertParallelRulesTest, GroupCountsTakeTheModelsGroupsWhereTheConfigLeavesThemOut) {
  const ModelSpec v3 = testing::ParsePresetOrDie("deepseek-v3.json");  // n_group 8, topk_group 4
  const ModelSpec lite = testing::ParsePresetOrDie("deepseek-v2-lite.json");  // 1 and 1
  const ModelSpec mixtral = testing::ParsePresetOrDie("mixtral-8x7b.json");  // no n_group
  auto with = [](const char* keys) {
    return Ep(std::string(R"("enabled": true, "autoep_size": 8, "preset_model": "deepseek_v3", )") + keys);
  };
  EXPECT_NO_DIAG(Validate(with(R"("num_expert_groups": 8)"), At(8, &v3)), "ep-group-counts");
  EXPECT_NO_DIAG(Validate(with(R"("num_limited_groups": 2)"), At(8, &v3)), "ep-group-counts");
  auto over = Validate(with(R"("num_limited_groups": 10)"), At(8, &v3));
  EXPECT_DIAG(over, "ep-group-counts", "/expert_parallel/num_limited_groups");
  EXPECT_NE(MessageOf(over, "ep-group-counts").find("(8 (from the model config's n_group))"),
            std::string::npos)
      << MessageOf(over, "ep-group-counts");
  EXPECT_DIAG(Validate(with(R"("num_limited_groups": 2)"), At(8, &lite)), "ep-group-counts",
              "/expert_parallel/num_limited_groups");
  // One expert per group: the router's top2_sum group scores raise at the first forward
  // (moe/ep_router.py); deepseek_v2's preset scores groups by their maximum.
  auto singles = Validate(Ep(R"("enabled": true, "autoep_size": 8, "num_expert_groups": 8, "num_limited_groups": 2)"),
                          At(8, &mixtral));
  EXPECT_DIAG(singles, "ep-group-counts", "/expert_parallel/num_expert_groups");
  EXPECT_NE(MessageOf(singles, "ep-group-counts").find("must be >= 2"), std::string::npos);
  EXPECT_NO_DIAG(Validate(Ep(R"("enabled": true, "autoep_size": 8, "num_expert_groups": 4, "num_limited_groups": 2)"),
                          At(8, &mixtral)),
                 "ep-group-counts");
  // deepseek_v2's preset scores by the maximum only on a group_limited_greedy model; V2-Lite is
  // "greedy" (deepseek_v2.py resolve_group_routing).
  EXPECT_DIAG(Validate(Ep(R"("enabled": true, "autoep_size": 8, "num_expert_groups": 64, "num_limited_groups": 4)"),
                       At(8, &lite)),
              "ep-group-counts", "/expert_parallel/num_expert_groups");
  auto no_groups = Validate(Ep(R"("enabled": true, "autoep_size": 8, "num_limited_groups": 2)"), At(8, &mixtral));
  EXPECT_DIAG(no_groups, "ep-group-counts", "/expert_parallel/num_limited_groups");
  EXPECT_NE(MessageOf(no_groups, "ep-group-counts").find("has no n_group"), std::string::npos);
}

// stage_1_and_2.py _configure_moe_settings (0.19.6) asserts reduce_scatter and, at stage 2,
// contiguous_gradients once the model has MoE layers; stage 1 only warns.
TEST(ExpertParallelRulesTest, ZeroStage1And2MoeSettings) {
  const ModelSpec mixtral = testing::ParsePresetOrDie("mixtral-8x7b.json");
  auto zero = [&](const char* stage_and_keys) {
    return Validate(Ep(std::string(kOn), std::string(R"("zero_optimization": {)") + stage_and_keys + "}"),
                    At(8, &mixtral));
  };
  EXPECT_DIAG(zero(R"("stage": 2, "reduce_scatter": false)"), "ep-zero-moe-settings",
              "/zero_optimization/reduce_scatter");
  EXPECT_DIAG(zero(R"("stage": 1, "reduce_scatter": false)"), "ep-zero-moe-settings",
              "/zero_optimization/reduce_scatter");
  auto contiguous = zero(R"("stage": 2, "contiguous_gradients": false)");
  EXPECT_DIAG(contiguous, "ep-zero-moe-settings", "/zero_optimization/contiguous_gradients");
  EXPECT_EQ(Find(contiguous, "ep-zero-moe-settings")->severity, Severity::kError);
  auto stage1 = zero(R"("stage": 1, "contiguous_gradients": false)");
  ASSERT_NE(Find(stage1, "ep-zero-moe-settings"), nullptr);
  EXPECT_EQ(Find(stage1, "ep-zero-moe-settings")->severity, Severity::kWarning);
  // The optimizer offloaded to cpu turns contiguous_gradients on itself.
  EXPECT_NO_DIAG(zero(R"("stage": 2, "contiguous_gradients": false, "offload_optimizer": {"device": "cpu"})"),
                 "ep-zero-moe-settings");
  EXPECT_NO_DIAG(zero(R"("stage": 2, "contiguous_gradients": false, "offload_optimizer": {"device": "nvme", "nvme_path": "/x"})"),
                 "ep-zero-moe-settings");
  EXPECT_NO_DIAG(zero(R"("stage": 2)"), "ep-zero-moe-settings");
  // A model AutoEP finds no block in has no MoE layers for the optimizer to check.
  const ModelSpec oss = testing::ParsePresetOrDie("gpt-oss-20b.json");
  EXPECT_NO_DIAG(Validate(Ep(std::string(kOn), R"("zero_optimization": {"stage": 2, "reduce_scatter": false})"),
                          At(8, &oss)),
                 "ep-zero-moe-settings");
  // Nor does ZeRO-3's MoE check (engine.py _validate_zero3_moe_compatibility returns).
  EXPECT_NO_DIAG(Validate(Ep(std::string(kOn), R"("zero_optimization": {"stage": 3}, "sequence_parallel_size": 2)"),
                          At(8, &oss)),
                 "ep-zero3-unsupported");
}

// fill_autoep_config_from_hf copies a DeepSeek config's routed_scaling_factor over route_scale.
TEST(ExpertParallelRulesTest, RouteScaleIsReplacedByTheModelsScalingFactor) {
  const ModelSpec v3 = testing::ParsePresetOrDie("deepseek-v3.json");
  const ModelSpec mixtral = testing::ParsePresetOrDie("mixtral-8x7b.json");
  // DeepSeek-V2-Lite's factor is 1.0: the route_scale given is replaced without a log line.
  const ModelSpec lite = testing::ParsePresetOrDie("deepseek-v2-lite.json");
  EXPECT_DIAG(Validate(Ep(std::string(kOn) + R"(, "route_scale": 2.0)"), At(8, &lite)), "ep-route-scale-ignored",
              "/expert_parallel/route_scale");
  EXPECT_DIAG(Validate(Ep(std::string(kOn) + R"(, "route_scale": 2.0)"), At(8, &v3)), "ep-route-scale-ignored",
              "/expert_parallel/route_scale");
  EXPECT_NO_DIAG(Validate(Ep(std::string(kOn) + R"(, "route_scale": 2.0, "routed_scaling_factor": 2.0)"), At(8, &v3)),
                 "ep-route-scale-ignored");
  EXPECT_NO_DIAG(Validate(Ep(std::string(kOn) + R"(, "route_scale": 2.5)"), At(8, &mixtral)),
                 "ep-route-scale-ignored");
}

TEST(ExpertParallelRulesTest, TopKAgainstTheExperts) {
  const ModelSpec mixtral = testing::ParsePresetOrDie("mixtral-8x7b.json");  // 8 experts
  EXPECT_DIAG(Validate(Ep(std::string(kOn) + R"(, "top_k": 16)"), At(8, &mixtral)),
              "ep-top-k-exceeds-experts", "/expert_parallel/top_k");
  EXPECT_NO_DIAG(Validate(Ep(std::string(kOn) + R"(, "top_k": 4)"), At(8, &mixtral)),
                 "ep-top-k-exceeds-experts");
  // DeepSpeed's hjson loader reads 16.0 as the int 16 (hjson/decoder.py), so isinstance(top_k, int)
  // holds and ep_parser raises; a float 16.5 is not an int and the model's top_k is used.
  EXPECT_DIAG(Validate(Ep(std::string(kOn) + R"(, "top_k": 16.0)"), At(8, &mixtral)),
              "ep-top-k-exceeds-experts", "/expert_parallel/top_k");
  EXPECT_NO_DIAG(Validate(Ep(std::string(kOn) + R"(, "top_k": 16.5)"), At(8, &mixtral)),
                 "ep-top-k-exceeds-experts");
  // A string top_k is not an int: ep_parser takes the model's num_experts_per_tok instead, so
  // the schema finding is a warning.
  auto text = Validate(Ep(std::string(kOn) + R"(, "top_k": "2")"), At(8, &mixtral));
  ASSERT_NE(Find(text, "schema-type"), nullptr);
  EXPECT_EQ(Find(text, "schema-type")->severity, Severity::kWarning);
  EXPECT_NO_DIAG(text, "ep-top-k-exceeds-experts");
}

TEST(ExpertParallelRulesTest, DenseModel) {
  const ModelSpec llama = testing::ParsePresetOrDie("tiny-llama.json");
  const ModelSpec moe = testing::ParsePresetOrDie("tiny-moe.json");
  EXPECT_DIAG(Validate(Ep(R"("enabled": true, "autoep_size": 2)"), At(8, &llama)), "ep-dense-model",
              "/expert_parallel/enabled");
  EXPECT_NO_DIAG(Validate(Ep(R"("enabled": true, "autoep_size": 2)"), At(8, &moe)),
                 "ep-dense-model");
  // With preset_model or moe_layer_pattern finding nothing is DeepSpeed's ValueError
  // (auto_ep.py _requires_selected_preset_detection).
  auto preset = Validate(Ep(R"("enabled": true, "autoep_size": 2, "preset_model": "mixtral")"), At(8, &llama));
  EXPECT_DIAG(preset, "ep-preset-no-moe", "/expert_parallel/preset_model");
  EXPECT_NO_DIAG(preset, "ep-dense-model");
  EXPECT_DIAG(Validate(Ep(R"("enabled": true, "autoep_size": 2, "moe_layer_pattern": "model\\.layers\\.\\d+\\.mlp")"),
                       At(8, &llama)),
              "ep-preset-no-moe", "/expert_parallel/moe_layer_pattern");
}

}  // namespace
}  // namespace dsp

namespace dsp {
namespace {

// A bf16 config with AutoEP on at `autoep_size`, its expert_parallel object left open.
std::string EpOn(int autoep_size) {
  return R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
      "bf16": {"enabled": true}, "expert_parallel": {"enabled": true, "autoep_size": )" +
         std::to_string(autoep_size);
}

TEST(ExpertParallelModelLayoutTest, GptOssAndLlama4AreNotDetected) {
  // Every AutoEP preset detects model.layers.N.mlp with a `gate` router (auto_ep_presets/*.py,
  // DeepSpeed 0.19.6): gpt_oss's `mlp.router` and llama4's `feed_forward` match none.
  const ModelSpec oss = testing::ParsePresetOrDie("gpt-oss-20b.json");
  const ModelSpec scout = testing::ParsePresetOrDie("llama-4-scout-17b-16e.json");
  const std::string ep = EpOn(4);
  auto warned = testing::Validate(ep + "}}", At(8, &oss));
  EXPECT_DIAG(warned, "ep-moe-not-detected", "/expert_parallel/enabled");
  EXPECT_NE(testing::Find(warned, "ep-moe-not-detected")->message.find("mlp.router"),
            std::string::npos);
  EXPECT_DIAG(testing::Validate(ep + R"(, "preset_model": "mixtral"}})", At(8, &scout)),
              "ep-preset-no-moe", "/expert_parallel/preset_model");
  // A router_pattern naming gpt_oss's `router` makes every preset match its blocks
  // (auto_ep.py _raise_if_duplicate_moe_specs); with moe_layer_pattern too, one custom preset
  // detects them: the user's own detection, not second-guessed.
  auto routed = testing::Validate(ep + R"(, "router_pattern": "router"}})", At(8, &oss));
  EXPECT_NO_DIAG(routed, "ep-moe-not-detected");
  EXPECT_DIAG(routed, "ep-detection-ambiguous", "/expert_parallel/enabled");
  auto custom = testing::Validate(
      ep + R"(, "router_pattern": "router", "moe_layer_pattern": "model\\.layers\\.\\d+\\.mlp"}})", At(8, &oss));
  EXPECT_NO_DIAG(custom, "ep-moe-not-detected");
  EXPECT_NO_DIAG(custom, "ep-detection-ambiguous");
}

TEST(ExpertParallelModelLayoutTest, Qwen3VlMoeBlocksAreNotDetected) {
  // Qwen3-VL-MoE trains as Qwen3VLMoeForConditionalGeneration: its MoE blocks are
  // model.language_model.layers.N.mlp, which `model\.layers\.\d+\.mlp` does not fullmatch
  // (auto_ep.py ep_parser), and qwen3_vl_moe is in no preset's hf_model_types, so AutoEP only
  // warns; an explicit preset raises.
  const ModelSpec vl = testing::ParsePresetOrDie("qwen3-vl-30b-a3b.json");
  const std::string ep = EpOn(8);
  auto warned = testing::Validate(ep + "}}", At(8, &vl));
  EXPECT_DIAG(warned, "ep-moe-not-detected", "/expert_parallel/enabled");
  EXPECT_NE(MessageOf(warned, "ep-moe-not-detected").find("model.language_model.layers.N.mlp"),
            std::string::npos);
  EXPECT_NO_DIAG(warned, "ep-detection-ambiguous");
  EXPECT_DIAG(testing::Validate(ep + R"(, "preset_model": "qwen3_moe"}})", At(8, &vl)),
              "ep-preset-no-moe", "/expert_parallel/preset_model");
  // Its text-only twin, Qwen3-30B-A3B, is qwen3_moe's own.
  const ModelSpec text = testing::ParsePresetOrDie("qwen3-30b-a3b.json");
  EXPECT_NO_DIAG(testing::Validate(ep + "}}", At(8, &text)), "ep-moe-not-detected");
}

TEST(ExpertParallelModelLayoutTest, AModelTypeNoPresetListsIsMatchedByEveryPreset) {
  // registry.py resolve_preset_candidates tries every preset for a model_type outside their
  // hf_model_types; all five detect model.layers.N.mlp with `gate` and `experts`, which is how
  // transformers 5 builds glm4_moe (Glm4MoeMoE) and qwen3_next (Qwen3NextSparseMoeBlock), so
  // auto_ep.py _raise_if_duplicate_moe_specs raises (DeepSpeed 0.19.6).
  const ModelSpec glm = testing::ParsePresetOrDie("glm-4.5-air.json");
  const ModelSpec next = testing::ParsePresetOrDie("qwen3-next-80b-a3b-thinking.json");
  const ModelSpec qwen3 = testing::ParsePresetOrDie("qwen3-30b-a3b.json");
  const ModelSpec v3 = testing::ParsePresetOrDie("deepseek-v3.json");
  const std::string ep = EpOn(8);
  auto glm_auto = testing::Validate(ep + "}}", At(8, &glm));
  EXPECT_DIAG(glm_auto, "ep-detection-ambiguous", "/expert_parallel/enabled");
  EXPECT_NE(MessageOf(glm_auto, "ep-detection-ambiguous").find("deepseek_v3"), std::string::npos);
  auto next_auto = testing::Validate(ep + "}}", At(8, &next));
  EXPECT_DIAG(next_auto, "ep-detection-ambiguous", "/expert_parallel/enabled");
  EXPECT_NE(MessageOf(next_auto, "ep-detection-ambiguous").find("qwen3_moe"), std::string::npos);
  // A preset, or the user's own layer pattern, picks one: no ambiguity.
  EXPECT_NO_DIAG(testing::Validate(ep + R"(, "preset_model": "deepseek_v3"}})", At(8, &glm)),
                 "ep-detection-ambiguous");
  EXPECT_NO_DIAG(
      testing::Validate(ep + R"(, "moe_layer_pattern": "model\\.layers\\.\\d+\\.mlp"}})", At(8, &next)),
      "ep-detection-ambiguous");
  // A router pattern alone still leaves every preset in play.
  EXPECT_DIAG(testing::Validate(ep + R"(, "router_pattern": "gate"}})", At(8, &glm)),
              "ep-detection-ambiguous", "/expert_parallel/enabled");
  // model_types a preset lists are detected by that preset alone.
  EXPECT_NO_DIAG(testing::Validate(ep + "}}", At(8, &qwen3)), "ep-detection-ambiguous");
  EXPECT_NO_DIAG(testing::Validate(ep + "}}", At(8, &v3)), "ep-detection-ambiguous");
}

TEST(ExpertParallelModelLayoutTest, PresetOfAnotherFamilyIsUsedAsGiven) {
  // registry.py resolve_preset_candidates takes an explicit preset without a model-type check.
  const ModelSpec v3 = testing::ParsePresetOrDie("deepseek-v3.json");
  const std::string ep = EpOn(8) + R"(, "preset_model": )";
  auto other = testing::Validate(ep + R"("mixtral"}})", At(8, &v3));
  EXPECT_DIAG(other, "ep-preset-other-model", "/expert_parallel/preset_model");
  // DeepSeek-V3's config names its scoring_func, which ep_parser takes: only its shared experts,
  // which mixtral's preset has no pattern for, are lost.
  EXPECT_NE(MessageOf(other, "ep-preset-other-model").find("shared experts (`shared_experts`)"), std::string::npos);
  EXPECT_EQ(MessageOf(other, "ep-preset-other-model").find("scores experts"), std::string::npos);
  // GLM-4.5 has no scoring_func: a softmax preset scores its sigmoid router the wrong way.
  const ModelSpec glm = testing::ParsePresetOrDie("glm-4.5-air.json");
  EXPECT_NE(MessageOf(testing::Validate(ep + R"("qwen3_moe"}})", At(8, &glm)), "ep-preset-other-model")
                .find("with softmax, where the model was trained with sigmoid"),
            std::string::npos);
  EXPECT_NO_DIAG(testing::Validate(ep + R"("deepseek_v3"}})", At(8, &glm)), "ep-preset-other-model");
  // Qwen3-Next under qwen3_moe's preset: same router, same shared_expert name.
  const ModelSpec next = testing::ParsePresetOrDie("qwen3-next-80b-a3b-thinking.json");
  EXPECT_NO_DIAG(testing::Validate(ep + R"("qwen3_moe"}})", At(8, &next)), "ep-preset-other-model");
  // The config's overrides apply (registry.py apply_config_overrides, auto_ep.py score_func).
  EXPECT_NO_DIAG(testing::Validate(ep + R"("deepseek_v3", "has_shared_experts": true,
      "shared_experts_pattern": "shared_expert", "score_func": "softmax"}})", At(8, &next)),
                 "ep-preset-other-model");
  EXPECT_DIAG(testing::Validate(ep + R"("deepseek_v3"}})", At(8, &next)), "ep-preset-other-model",
              "/expert_parallel/preset_model");
  // deepseek_v2's preset keeps route_norm false (deepseek_v2.py resolve_route_norm).
  const ModelSpec qwen3 = testing::ParsePresetOrDie("qwen3-30b-a3b.json");
  EXPECT_NE(MessageOf(testing::Validate(ep + R"("deepseek_v2"}})", At(8, &qwen3)), "ep-preset-other-model")
                .find("not renormalised"),
            std::string::npos);
  EXPECT_NO_DIAG(testing::Validate(ep + R"("deepseek_v2", "route_norm": true}})", At(8, &qwen3)),
                 "ep-preset-other-model");
  EXPECT_NO_DIAG(testing::Validate(ep + R"("deepseek_v3"}})", At(8, &v3)),
                 "ep-preset-other-model");
}

}  // namespace
}  // namespace dsp
