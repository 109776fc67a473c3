// SPDX-License-Identifier: Apache-2.0
// AutoTP rules (tensor_parallel_rules.cc, layer_specs_*.cc): one config that trips each rule and
// one that does not, with the pointer the finding is reported at.
#include "tests/core/rules/tensor_parallel_test_util.h"

namespace dsp {
namespace {

using testing::Find;
using testing::Validate;
using testing::World;
using tptest::At;
using tptest::kLlamaSpecs;
using tptest::MessageOf;
using tptest::Specs;
using tptest::Tp;
using tptest::Version;

// ---- sizes, presets, settings

TEST(TensorParallelRulesTest, AutotpSizeMustDivideTheWorld) {
  auto bad = Validate(Tp(R"({"autotp_size": 4})"), World(6));
  EXPECT_DIAG(bad, "tp-world-divisibility", "/tensor_parallel/autotp_size");
  EXPECT_NE(MessageOf(bad, "tp-world-divisibility").find("1, 2, 3, 6"), std::string::npos);
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 4})"), World(8)), "tp-world-divisibility");
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 4})")), "tp-world-divisibility");  // world unknown
}

TEST(TensorParallelRulesTest, TpSizeMustBeOneOrAutotpSize) {
  auto bad = Validate(Tp(R"({"autotp_size": 4, "tp": {"tp_size": 2}})"), World(8));
  EXPECT_DIAG(bad, "tp-size-mismatch", "/tensor_parallel/tp/tp_size");
  EXPECT_NE(
      MessageOf(bad, "tp-size-mismatch").find("does not match tensor_parallel.autotp_size (4)"),
      std::string::npos);
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 4, "tp": {"tp_size": 4}})"), World(8)),
                 "tp-size-mismatch");
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 4, "tp": {"tp_size": 1}})"), World(8)),
                 "tp-size-mismatch");
}

TEST(TensorParallelRulesTest, TpGroupsCrossingNodes) {
  EXPECT_DIAG(Validate(Tp(R"({"autotp_size": 16})"), At(32, nullptr, 8)), "tp-crosses-nodes",
              "/tensor_parallel/autotp_size");
  EXPECT_DIAG(Validate(Tp(R"({"autotp_size": 3})"), At(24, nullptr, 8)), "tp-crosses-nodes",
              "/tensor_parallel/autotp_size");
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 4})"), At(32, nullptr, 8)), "tp-crosses-nodes");
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 3})"), At(6, nullptr, 8)),
                 "tp-crosses-nodes");  // one node
  ValidateOptions no_world;
  no_world.gpus_per_node = 8;
  EXPECT_DIAG(Validate(Tp(R"({"autotp_size": 3})"), no_world), "tp-crosses-nodes",
              "/tensor_parallel/autotp_size");
}

TEST(TensorParallelRulesTest, UnknownPresetIsSilentlyIgnored) {
  auto bad = Validate(Tp(R"({"autotp_size": 2, "preset_model": "lama"})"), World(8));
  EXPECT_DIAG(bad, "tp-unknown-preset", "/tensor_parallel/preset_model");
  const std::string msg = MessageOf(bad, "tp-unknown-preset");
  EXPECT_NE(msg.find("did you mean \"llama\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("llama, bloom, chatglm, mixtral, deepseek_v2, qwen2, phi3"), std::string::npos)
      << msg;
  auto ep_name = Validate(Tp(R"({"autotp_size": 2, "preset_model": "qwen3_moe"})"), World(8));
  EXPECT_NE(MessageOf(ep_name, "tp-unknown-preset").find("AutoEP preset"), std::string::npos);
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 2, "preset_model": "LLaMA"})"), World(8)),
                 "tp-unknown-preset");
}

TEST(TensorParallelRulesTest, PresetDroppedByUseDefaultSpecsFalse) {
  auto bad = Validate(
      Tp(R"({"autotp_size": 2, "preset_model": "llama", "partition_config": {"use_default_specs": false, "layer_specs": [)" +
         std::string(kLlamaSpecs) + "]}}"),
      World(8));
  EXPECT_DIAG(bad, "tp-preset-ignored", "/tensor_parallel/partition_config/use_default_specs");
  auto ok = Validate(
      Tp(R"({"autotp_size": 2, "preset_model": "llama", "partition_config": {"use_default_specs": true, "layer_specs": []}})"),
      World(8));
  EXPECT_NO_DIAG(ok, "tp-preset-ignored");
}

TEST(TensorParallelRulesTest, UseDefaultSpecsWithoutPreset) {
  auto bad = Validate(
      Tp(R"({"autotp_size": 2, "partition_config": {"use_default_specs": true, "layer_specs": [)" +
         std::string(kLlamaSpecs) + "]}}"),
      World(8));
  EXPECT_DIAG(bad, "tp-default-specs-without-preset",
              "/tensor_parallel/partition_config/use_default_specs");
  EXPECT_NO_DIAG(Validate(Specs(kLlamaSpecs), World(8)), "tp-default-specs-without-preset");
}

TEST(TensorParallelRulesTest, EmptyPartitionConfigPartitionsNothing) {
  auto bad =
      Validate(Tp(R"({"autotp_size": 2, "partition_config": {"strict_mode": false}})"), World(8));
  EXPECT_DIAG(bad, "tp-empty-partition-config", "/tensor_parallel/partition_config");
  EXPECT_NO_DIAG(
      Validate(
          Tp(R"({"autotp_size": 2, "preset_model": "llama", "partition_config": {"strict_mode": false}})"),
          World(8)),
      "tp-empty-partition-config");
}

TEST(TensorParallelRulesTest, SettingsIgnoredWithoutAutotp) {
  auto bad = Validate(Tp(R"({"autotp_size": 1, "preset_model": "llama", "tp": {"tp_size": 4}})"),
                      World(8));
  EXPECT_DIAG(bad, "tp-settings-without-autotp", "/tensor_parallel/preset_model");
  EXPECT_NE(MessageOf(bad, "tp-settings-without-autotp").find("tensor_parallel.tp.tp_size"),
            std::string::npos);
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 2, "preset_model": "llama"})"), World(8)),
                 "tp-settings-without-autotp");
}

TEST(TensorParallelRulesTest, PartitionConfigNeedsDeepSpeed0186) {
  auto old = Validate(Tp(R"({"autotp_size": 2, "preset_model": "llama"})"), Version("0.18.5"));
  EXPECT_DIAG(old, "tp-key-version", "/tensor_parallel/preset_model");
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 2, "preset_model": "llama"})"), Version("0.18.6")),
                 "tp-key-version");
}

// ---- the model's heads and vocabulary

TEST(TensorParallelRulesTest, HeadsAndVocabAgainstTp) {
  const ModelSpec tiny = testing::ParsePresetOrDie("tiny-llama.json");  // 4 heads, 2 kv heads
  auto over = Validate(Tp(R"({"autotp_size": 4})"), At(8, &tiny));
  EXPECT_DIAG(over, "tp-exceeds-kv-heads", "/tensor_parallel/autotp_size");
  EXPECT_NE(MessageOf(over, "tp-exceeds-kv-heads").find("1, 2"), std::string::npos);
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 2})"), At(8, &tiny)), "tp-exceeds-kv-heads");

  const ModelSpec mixtral =
      testing::ParsePresetOrDie("mixtral-8x7b.json");  // 32 heads, 8 kv, vocab 32000
  auto uneven = Validate(Tp(R"({"autotp_size": 3})"), At(6, &mixtral));
  EXPECT_DIAG(uneven, "tp-uneven-heads", "/tensor_parallel/autotp_size");
  EXPECT_DIAG(uneven, "tp-uneven-vocab", "/tensor_parallel/autotp_size");
  auto even = Validate(Tp(R"({"autotp_size": 4})"), At(8, &mixtral));
  EXPECT_NO_DIAG(even, "tp-uneven-heads");
  EXPECT_NO_DIAG(even, "tp-uneven-vocab");
}

// auto_tp.py AutoTP.supported (gpt2) and tp_plan_converter.py SUPPORTED_STYLES (gpt_oss's
// tp_plan), DeepSpeed 0.19.6.
TEST(TensorParallelRulesTest, ModelsTrainingAutoTpCannotPartition) {
  const ModelSpec gpt2 = testing::ParsePresetOrDie("gpt2.json");
  EXPECT_DIAG(Validate(Tp(R"({"autotp_size": 2})"), At(2, &gpt2)), "tp-model-unsupported",
              "/tensor_parallel/autotp_size");
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 1})"), At(2, &gpt2)), "tp-model-unsupported");
  const ModelSpec oss = testing::ParsePresetOrDie("gpt-oss-20b.json");
  auto plan = Validate(Tp(R"({"autotp_size": 2})"), At(2, &oss));
  EXPECT_DIAG(plan, "tp-model-unsupported", "/tensor_parallel/autotp_size");
  EXPECT_NE(MessageOf(plan, "tp-model-unsupported").find("sinks [64]"), std::string::npos);
  // With layer_specs the tp_plan is not converted: no false alarm for an MLP-only split.
  EXPECT_NO_DIAG(
      Validate(Tp(R"({"autotp_size": 2, "partition_config": {"layer_specs": [{"patterns": [".*\\.self_attn\\..*"], "partition_type": "skip"}]}})"),
               At(2, &oss)),
      "tp-model-unsupported");
  const ModelSpec llama = testing::ParsePresetOrDie("llama-3-8b.json");
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 2})"), At(2, &llama)), "tp-model-unsupported");
}

// ---- layer_specs at parse time

TEST(TensorParallelRulesTest, LayerSpecsStructure) {
  EXPECT_DIAG(Validate(Specs(R"("not a spec")"), World(8)), "tp-spec-structure",
              "/tensor_parallel/partition_config/layer_specs/0");
  EXPECT_NO_DIAG(Validate(Specs(kLlamaSpecs), World(8)), "tp-spec-structure");
}

TEST(TensorParallelRulesTest, PartitionTypeIsCaseInsensitiveEnum) {
  auto bad = Validate(Specs(R"({"patterns": [".*"], "partition_type": "columns"})"), World(8));
  EXPECT_DIAG(bad, "tp-spec-partition-type",
              "/tensor_parallel/partition_config/layer_specs/0/partition_type");
  EXPECT_NE(MessageOf(bad, "tp-spec-partition-type").find("column, row and skip"),
            std::string::npos);
  EXPECT_NO_DIAG(
      Validate(Specs(R"({"patterns": [".*lm_head.*"], "partition_type": "SKIP"})"), World(8)),
      "tp-spec-partition-type");
  // A non-string is passed through by AutoTPConfig.from_dict and built column-parallel
  // (auto_tp.py _replace_with_config): a warning on a plain weight, with no follow-on finding.
  const ModelSpec llama = testing::ParsePresetOrDie("llama-3-8b.json");
  auto null_type = Validate(Specs(R"({"patterns": [".*\\.[qkv]_proj\\.weight$"], "partition_type": null},
      {"patterns": [".*\\.o_proj\\.weight$"], "partition_type": "row"},
      {"patterns": [".*\\.(gate|up)_proj\\.weight$"], "partition_type": "column"},
      {"patterns": [".*\\.down_proj\\.weight$"], "partition_type": "row"})"),
                            At(2, &llama));
  const Diagnostic* d = Find(null_type, "tp-spec-partition-type");
  ASSERT_NE(d, nullptr) << testing::Dump(null_type);
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_NO_DIAG(null_type, "tp-missing-column-partner");
  EXPECT_NO_DIAG(null_type, "schema-type");
  // On a shaped weight the row default partition_dim 1 splits the wrong dimension: an error.
  auto shaped = Validate(Specs(R"({"patterns": [".*gate_up_proj.*"], "partition_type": null, "shape": [2, -1]})"), World(2));
  ASSERT_NE(Find(shaped, "tp-spec-partition-type"), nullptr);
  EXPECT_EQ(Find(shaped, "tp-spec-partition-type")->severity, Severity::kError);
}

TEST(TensorParallelRulesTest, ShapeRulesAtParseTime) {
  const std::string p = "/tensor_parallel/partition_config/layer_specs/0";
  auto spec = [](const std::string& fields) {
    return Specs(R"({"patterns": [".*qkv_proj\\.weight$"], "partition_type": "column", )" + fields +
                 "}");
  };
  EXPECT_DIAG(Validate(spec(R"("shape": "3,-1")"), World(8)), "tp-spec-shape", p + "/shape");
  EXPECT_DIAG(Validate(spec(R"("shape": [3, 0])"), World(8)), "tp-spec-shape", p + "/shape/1");
  EXPECT_DIAG(Validate(spec(R"("shape": [3, -2])"), World(8)), "tp-spec-shape", p + "/shape/1");
  EXPECT_DIAG(Validate(spec(R"("shape": [3.5, -1])"), World(8)), "tp-spec-shape", p + "/shape/0");
  EXPECT_DIAG(Validate(spec(R"("shape": [3, [1, 2]])"), World(8)), "tp-spec-shape", p + "/shape/1");
  EXPECT_DIAG(Validate(spec(R"("shape": [[], -1])"), World(8)), "tp-spec-shape", p + "/shape/0");
  EXPECT_DIAG(Validate(spec(R"("shape": [[4, [1]], -1])"), World(8)), "tp-spec-shape",
              p + "/shape/0");
  EXPECT_DIAG(Validate(spec(R"("shape": [[4, 0], -1])"), World(8)), "tp-spec-shape",
              p + "/shape/0");
  for (const char* ok : {R"("shape": [3, -1])", R"("shape": [[4096, 1024, 1024], -1])",
                         R"("shape": [8, -1, 64], "partition_dim": 1)"}) {
    auto r = Validate(spec(ok), World(8));
    EXPECT_NO_DIAG(r, "tp-spec-shape");
    EXPECT_NO_DIAG(r, "tp-spec-partition-dim");
  }
}

TEST(TensorParallelRulesTest, PartitionDimRange) {
  const std::string p = "/tensor_parallel/partition_config/layer_specs/0";
  auto bad = Validate(
      Specs(
          R"({"patterns": [".*"], "partition_type": "column", "shape": [3, -1], "partition_dim": 2})"),
      World(8));
  EXPECT_DIAG(bad, "tp-spec-partition-dim", p + "/partition_dim");
  EXPECT_NE(MessageOf(bad, "tp-spec-partition-dim")
                .find("partition_dim 2 is out of range for shape length 2"),
            std::string::npos);
  // A row spec defaults to partition_dim 1, out of range for a one-entry shape.
  EXPECT_DIAG(
      Validate(Specs(R"({"patterns": [".*"], "partition_type": "row", "shape": [4]})"), World(8)),
      "tp-spec-partition-dim", p + "/shape");
  EXPECT_DIAG(Validate(Specs(R"({"patterns": [".*"], "shape": []})"), World(8)),
              "tp-spec-partition-dim", p + "/shape");
  EXPECT_NO_DIAG(
      Validate(Specs(R"({"patterns": [".*"], "partition_type": "row", "shape": [4, -1]})"),
               World(8)),
      "tp-spec-partition-dim");
}

TEST(TensorParallelRulesTest, LayerSpecErrorsAreLatentWithoutAutotp) {
  auto r = Validate(
      Tp(R"({"autotp_size": 1, "partition_config": {"layer_specs": [{"patterns": [".*"], "shape": [0]}]}})"),
      World(8));
  const Diagnostic* d = Find(r, "tp-spec-shape");
  ASSERT_NE(d, nullptr) << testing::Dump(r);
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_NE(d->message.find("latent"), std::string::npos);
}

// TPLayerSpec.matches (module_inject/autotp_config.py, edaa722) returns before re.match for a
// model_type outside model_types, and a gather_output spec with a shape raises only when it wins
// a layer (auto_tp.py _replace_with_config): on a model the spec excludes, both are latent.
TEST(TensorParallelRulesTest, SpecErrorsAreLatentOnAModelTheSpecExcludes) {
  const ModelSpec llama = testing::ParsePresetOrDie("llama-3-8b.json");
  const std::string phi3_only = R"("model_types": ["phi3"])";
  const std::string specs[] = {
      R"({"patterns": [".*(unclosed"], )" + phi3_only + "}",
      R"({"patterns": [".*gate_up_proj\\.weight$"], "shape": [2, -1], "gather_output": true, )" + phi3_only + "}"};
  for (const std::string& spec : specs) {
    auto r = Validate(Specs(spec + R"(, {"patterns": [".*"], "partition_type": "skip"})"), At(2, &llama));
    for (const char* id : {"tp-spec-pattern-invalid", "tp-spec-gather-output-shape"}) {
      if (const Diagnostic* d = Find(r, id)) {
        EXPECT_EQ(d->severity, Severity::kWarning) << spec;
        EXPECT_NE(d->message.find("never tries it on this model"), std::string::npos) << d->message;
      }
    }
    EXPECT_TRUE(Find(r, "tp-spec-pattern-invalid") != nullptr || Find(r, "tp-spec-gather-output-shape") != nullptr)
        << testing::Dump(r);
    // On the model the spec names, DeepSpeed raises.
    const ModelSpec phi3 = testing::ParsePresetOrDie("phi-3-mini-4k.json");
    auto own = Validate(Specs(spec + R"(, {"patterns": [".*"], "partition_type": "skip"})"), At(2, &phi3));
    bool error = false;
    for (const auto& d : own.diagnostics) error = error || d.severity == Severity::kError;
    EXPECT_TRUE(error) << spec << testing::Dump(own);
  }
}

TEST(TensorParallelRulesTest, GatherOutput) {
  const std::string p = "/tensor_parallel/partition_config/layer_specs/0/gather_output";
  EXPECT_DIAG(
      Validate(Specs(R"({"patterns": [".*"], "shape": [2, -1], "gather_output": true})"), World(8)),
      "tp-spec-gather-output-shape", p);
  EXPECT_NO_DIAG(
      Validate(Specs(R"({"patterns": [".*lm_head\\.weight$"], "gather_output": true})"), World(8)),
      "tp-spec-gather-output-shape");
  EXPECT_DIAG(
      Validate(Specs(R"({"patterns": [".*"], "partition_type": "row", "gather_output": true})"),
               World(8)),
      "tp-spec-gather-output-ignored", p);
  EXPECT_NO_DIAG(
      Validate(Specs(R"({"patterns": [".*"], "partition_type": "column", "gather_output": true})"),
               World(8)),
      "tp-spec-gather-output-ignored");
}

TEST(TensorParallelRulesTest, GradAllreduceOnShardedSpec) {
  const std::string p = "/tensor_parallel/partition_config/layer_specs/0/grad_allreduce";
  EXPECT_DIAG(
      Validate(Specs(R"({"patterns": [".*"], "partition_type": "row", "grad_allreduce": true})"),
               World(8)),
      "tp-spec-grad-allreduce-sharded", p);
  EXPECT_NO_DIAG(
      Validate(
          Specs(R"({"patterns": [".*norm.*"], "partition_type": "skip", "grad_allreduce": true})"),
          World(8)),
      "tp-spec-grad-allreduce-sharded");
}

TEST(TensorParallelRulesTest, LayerSpecKeysFromNewerReleases) {
  const std::string spec =
      R"({"patterns": [".*norm.*"], "partition_type": "skip", "grad_allreduce": true})";
  EXPECT_DIAG(Validate(Specs(spec), Version("0.19.5")), "tp-spec-key-version",
              "/tensor_parallel/partition_config/layer_specs/0/grad_allreduce");
  EXPECT_NO_DIAG(Validate(Specs(spec), Version("0.19.6")), "tp-spec-key-version");
}

TEST(TensorParallelRulesTest, ModelTypesMustBeAList) {
  EXPECT_DIAG(Validate(Specs(R"({"patterns": [".*"], "model_types": "llama"})"), World(8)),
              "tp-spec-model-types", "/tensor_parallel/partition_config/layer_specs/0/model_types");
  EXPECT_NO_DIAG(Validate(Specs(R"({"patterns": [".*"], "model_types": ["llama"]})"), World(8)),
                 "tp-spec-model-types");
}

TEST(TensorParallelRulesTest, Patterns) {
  const std::string p = "/tensor_parallel/partition_config/layer_specs/0";
  EXPECT_DIAG(Validate(Specs(R"({"partition_type": "row"})"), World(8)), "tp-spec-no-patterns", p);
  EXPECT_DIAG(Validate(Specs(R"({"patterns": []})"), World(8)), "tp-spec-no-patterns",
              p + "/patterns");
  auto str = Validate(Specs(R"({"patterns": ".*o_proj"})"), World(8));
  EXPECT_DIAG(str, "tp-spec-patterns", p + "/patterns");
  EXPECT_NE(MessageOf(str, "tp-spec-patterns").find("character by character"), std::string::npos);
  EXPECT_DIAG(Validate(Specs(R"({"patterns": [3]})"), World(8)), "tp-spec-patterns",
              p + "/patterns/0");
  auto ok = Validate(Specs(kLlamaSpecs), World(8));
  EXPECT_NO_DIAG(ok, "tp-spec-patterns");
  EXPECT_NO_DIAG(ok, "tp-spec-no-patterns");
  EXPECT_NO_DIAG(ok, "tp-spec-pattern-invalid");
}

TEST(TensorParallelRulesTest, InvalidAndPythonOnlyPatterns) {
  const std::string p = "/tensor_parallel/partition_config/layer_specs/0/patterns/1";
  auto bad = Validate(
      Specs(R"json({"patterns": [".*\\.o_proj\\.weight$", ".*\\.(o_proj\\.weight$"]})json"),
      World(8));
  EXPECT_DIAG(bad, "tp-spec-pattern-invalid", p);
  auto js = Validate(Specs(R"json({"patterns": [".*", "(?<proj>o)_proj"]})json"), World(8));
  EXPECT_DIAG(js, "tp-spec-pattern-invalid", p);
  EXPECT_NE(MessageOf(js, "tp-spec-pattern-invalid").find("(?P<name>"), std::string::npos);
  // Python-only named groups are fine.
  EXPECT_NO_DIAG(
      Validate(Specs(R"json({"patterns": [".*", ".*\\.(?P<proj>o)_proj\\.weight$"]})json"),
               World(8)),
      "tp-spec-pattern-invalid");
  // Lookbehind is evaluated (PCRE2); a named character \N{...} is valid Python ds-plan cannot
  // evaluate; a possessive quantifier needs Python 3.11.
  auto lookbehind =
      Validate(Specs(R"json({"patterns": [".*", ".*(?<=attn)\\.o_proj"]})json"), World(8));
  EXPECT_NO_DIAG(lookbehind, "tp-spec-pattern-unsupported");
  EXPECT_NO_DIAG(lookbehind, "tp-spec-pattern-invalid");
  auto named = Validate(
      Specs(R"json({"patterns": [".*", ".*\\N{FULL STOP}o_proj\\.weight"]})json"), World(8));
  EXPECT_DIAG(named, "tp-spec-pattern-unsupported", p);
  EXPECT_NE(MessageOf(named, "tp-spec-pattern-unsupported").find("cannot evaluate"),
            std::string::npos);
  auto possessive =
      Validate(Specs(R"json({"patterns": [".*", ".*\\.o_proj\\.weight$", "[a-z.]*+"]})json"),
               World(8));
  EXPECT_DIAG(possessive, "tp-spec-pattern-unsupported",
              "/tensor_parallel/partition_config/layer_specs/0/patterns/2");
  EXPECT_NE(MessageOf(possessive, "tp-spec-pattern-unsupported").find("Python 3.11"),
            std::string::npos);
  EXPECT_NO_DIAG(Validate(Specs(kLlamaSpecs), World(8)), "tp-spec-pattern-unsupported");
}

}  // namespace
}  // namespace dsp

namespace dsp {
namespace {

TEST(TensorParallelRulesTest, AliasAndNameTogetherAreRejected) {
  EXPECT_DIAG(testing::Validate(R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 2, "tp": {"tp_size": 2},
                                    "tensor_parallel": {"tp_size": 2}}})", testing::World(8)),
              "tp-alias-and-name", "/tensor_parallel/tensor_parallel");
  EXPECT_NO_DIAG(testing::Validate(R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 2, "tp": {"tp_size": 2}}})",
                                   testing::World(8)),
                 "tp-alias-and-name");
  // replace_with_kernel_inject's alias is kernel_inject (runtime/tensor_parallel/config.py).
  EXPECT_DIAG(testing::Validate(R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 2, "kernel_inject": false,
                                    "replace_with_kernel_inject": false}})", testing::World(8)),
              "tp-alias-and-name", "/tensor_parallel/replace_with_kernel_inject");
}

// deepspeed/__init__.py initialize (from PR #7806, 0.18.6) tests `autotp_size and autotp_size >
// 0` on the raw config before TPTrainingConfig (pydantic, autotp_size: int = 0) reads it.
TEST(TensorParallelRulesTest, AutotpSizeIsComparedBeforeItIsValidated) {
  auto with = [](const char* v, const char* version = nullptr) {
    ValidateOptions o = testing::World(8);
    if (version != nullptr) o.version = *DeepSpeedVersion::Parse(version);
    return testing::Validate(std::string(R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": )") + v + "}}", o);
  };
  for (const char* raises : {"\"2\"", "[2]", "{\"a\": 1}"}) {
    auto r = with(raises);
    EXPECT_DIAG(r, "tp-autotp-size-invalid", "/tensor_parallel/autotp_size");
    EXPECT_NO_DIAG(r, "schema-type");  // the rule's finding replaces the schema's
  }
  EXPECT_NE(MessageOf(with("\"2\""), "tp-autotp-size-invalid").find("TypeError"), std::string::npos);
  // Before the raw comparison, pydantic coerced "2" (a schema warning).
  auto old = with("\"2\"", "0.18.5");
  EXPECT_NO_DIAG(old, "tp-autotp-size-invalid");
  ASSERT_NE(Find(old, "schema-type"), nullptr);
  EXPECT_EQ(Find(old, "schema-type")->severity, Severity::kWarning);
  // Below 2 AutoTP is simply off: no range error for -1 (the field has no minimum).
  for (const char* fine : {"-1", "0", "4"}) {
    auto r = with(fine);
    EXPECT_NO_DIAG(r, "tp-autotp-size-invalid");
    EXPECT_NO_DIAG(r, "schema-range");
  }
  // "auto" is the consumers' rule (auto-unfilled); "" is falsy and reaches pydantic, which rejects it.
  EXPECT_NO_DIAG(with("\"auto\""), "tp-autotp-size-invalid");
  EXPECT_NO_DIAG(with("\"\""), "tp-autotp-size-invalid");
}

TEST(TensorParallelRulesTest, DtypeIsNotSettableFromJson) {
  for (const char* v : {R"("bf16")", R"("torch.bfloat16")", "null", "16"}) {
    auto r = testing::Validate(std::string(R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 2, "dtype": )") + v + "}}",
                               testing::World(8));
    EXPECT_DIAG(r, "tp-dtype-not-settable", "/tensor_parallel/dtype");
  }
  EXPECT_NO_DIAG(testing::Validate(R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 2, "dtype": "auto"}})",
                                   testing::World(8)),
                 "tp-dtype-not-settable");
}

}  // namespace
}  // namespace dsp
