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
  EXPECT_NE(msg.find("exceeds num_experts=8 in layer 'model.layers.0.block_sparse_moe'"),
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

TEST(ExpertParallelRulesTest, DenseModel) {
  const ModelSpec llama = testing::ParsePresetOrDie("tiny-llama.json");
  const ModelSpec moe = testing::ParsePresetOrDie("tiny-moe.json");
  EXPECT_DIAG(Validate(Ep(R"("enabled": true, "autoep_size": 2)"), At(8, &llama)), "ep-dense-model",
              "/expert_parallel/enabled");
  EXPECT_NO_DIAG(Validate(Ep(R"("enabled": true, "autoep_size": 2)"), At(8, &moe)),
                 "ep-dense-model");
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
  // Custom patterns are the user's own detection: not second-guessed.
  EXPECT_NO_DIAG(testing::Validate(ep + R"(, "router_pattern": "router"}})", At(8, &oss)),
                 "ep-moe-not-detected");
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
      testing::Validate(ep + R"(, "moe_layer_pattern": "model\.layers\.\d+\.mlp"}})", At(8, &next)),
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
  EXPECT_NO_DIAG(testing::Validate(ep + R"("deepseek_v3"}})", At(8, &v3)),
                 "ep-preset-other-model");
}

}  // namespace
}  // namespace dsp
