// SPDX-License-Identifier: Apache-2.0
// AutoTP layer_specs against a --model (layer_specs_model_rules.cc, layer_specs_pairing_rules.cc):
// unmatched patterns, shadowed specs, strict_mode, shapes, column/row pairing, q/k norms, speed.
#include <chrono>

#include "tests/core/rules/tensor_parallel_test_util.h"

namespace dsp {
namespace {

using testing::Validate;
using tptest::At;
using tptest::kLlamaSpecs;
using tptest::MessageOf;
using tptest::Specs;
using tptest::Tp;

// ---- layer_specs against --model

class TensorParallelModelTest : public ::testing::Test {
 protected:
  const ModelSpec llama_ = testing::ParsePresetOrDie("tiny-llama.json");
  const ModelSpec moe_ = testing::ParsePresetOrDie("tiny-moe.json");  // qwen3_moe: q_norm/k_norm
};

TEST_F(TensorParallelModelTest, CompleteLlamaSpecsAreClean) {
  auto r = Validate(Specs(kLlamaSpecs), At(8, &llama_));
  for (const auto& d : r.diagnostics)
    EXPECT_FALSE(d.rule_id.starts_with("tp-")) << testing::Dump(r);
}

TEST_F(TensorParallelModelTest, PatternThatMatchesNothing) {
  const std::string p = "/tensor_parallel/partition_config/layer_specs/";
  auto dollar =
      Validate(Specs(std::string(kLlamaSpecs) +
                     R"json(, {"patterns": [".*\\.q_norm$"], "partition_type": "skip"})json"),
               At(8, &llama_));
  EXPECT_DIAG(dollar, "tp-spec-pattern-unmatched", p + "2/patterns/0");
  auto no_prefix = Validate(
      Specs(R"json({"patterns": ["self_attn\\.o_proj\\.weight$"], "partition_type": "skip"})json"),
      At(8, &llama_));
  EXPECT_DIAG(no_prefix, "tp-spec-pattern-unmatched", p + "0/patterns/0");
  EXPECT_NE(MessageOf(no_prefix, "tp-spec-pattern-unmatched").find("start it with .*"),
            std::string::npos);
  auto module_name = Validate(
      Specs(R"json({"patterns": [".*\\.o_proj$"], "partition_type": "skip"})json"), At(8, &llama_));
  EXPECT_NE(MessageOf(module_name, "tp-spec-pattern-unmatched").find(".weight"), std::string::npos);
  EXPECT_NO_DIAG(Validate(Specs(kLlamaSpecs), At(8, &llama_)), "tp-spec-pattern-unmatched");
  // model_types that exclude the model switch the spec off: not reported.
  EXPECT_NO_DIAG(Validate(Specs(std::string(kLlamaSpecs) +
                                R"json(, {"patterns": ["nothing"], "model_types": ["bloom"]})json"),
                          At(8, &llama_)),
                 "tp-spec-pattern-unmatched");
}

TEST_F(TensorParallelModelTest, Phi3PresetCutsAGqaQkvAcrossItsBlocks) {
  // AutoTPPresets.phi3 (module_inject/autotp_config.py, DeepSpeed 0.19.6) gives qkv_proj the
  // shape (3, -1): three equal sub-parameters. Phi-3-mini (32 heads, 32 KV heads) has equal
  // blocks; with 8 KV heads they are 3072, 768 and 768 rows and the thirds cross them.
  const ModelSpec mini = testing::ParsePresetOrDie("phi-3-mini-4k.json");
  Json gqa_config = testing::LoadModelPreset("phi-3-mini-4k.json");
  gqa_config["num_key_value_heads"] = 8;
  const ModelSpec gqa = *ParseHfConfig(gqa_config);
  const auto preset = Tp(R"({"autotp_size": 2, "preset_model": "phi3"})");
  EXPECT_NO_DIAG(Validate(preset, At(4, &mini)), "tp-fused-qkv-unequal-split");
  auto r = Validate(preset, At(4, &gqa));
  EXPECT_DIAG(r, "tp-fused-qkv-unequal-split", "/tensor_parallel/preset_model");
  EXPECT_NE(MessageOf(r, "tp-fused-qkv-unequal-split").find("3072, 768 and 768 rows"),
            std::string::npos)
      << testing::Dump(r);
  EXPECT_NO_DIAG(r, "tp-preset-model-mismatch");  // the preset does match the names
  // A nested shape that describes the blocks is the fix and is not reported.
  auto fixed = Validate(
      Specs(R"json({"patterns": [".*\\.self_attn\\.qkv_proj\\.weight$"], "partition_type": "column",
                    "shape": [[3072, 768, 768], -1], "partition_dim": 0},
                   {"patterns": [".*\\.self_attn\\.o_proj\\.weight$"], "partition_type": "row"},
                   {"patterns": [".*\\.mlp\\.gate_up_proj\\.weight$"], "partition_type": "column",
                    "shape": [2, -1], "partition_dim": 0},
                   {"patterns": [".*\\.mlp\\.down_proj\\.weight$"], "partition_type": "row"})json"),
      At(4, &gqa));
  EXPECT_NO_DIAG(fixed, "tp-fused-qkv-unequal-split");
  EXPECT_NO_DIAG(fixed, "tp-spec-shape-mismatch");
}

TEST_F(TensorParallelModelTest, PresetForAnotherArchitecture) {
  EXPECT_DIAG(Validate(Tp(R"({"autotp_size": 2, "preset_model": "bloom"})"), At(8, &llama_)),
              "tp-preset-model-mismatch", "/tensor_parallel/preset_model");
  EXPECT_NO_DIAG(Validate(Tp(R"({"autotp_size": 2, "preset_model": "llama"})"), At(8, &llama_)),
                 "tp-preset-model-mismatch");
}

TEST_F(TensorParallelModelTest, ShadowedSpec) {
  auto r = Validate(Specs(R"json({"patterns": [".*_proj\\.weight$"], "partition_type": "column"},
                                  {"patterns": [".*\\.o_proj\\.weight$"], "partition_type": "row"})json"),
                    At(8, &llama_));
  EXPECT_DIAG(r, "tp-spec-shadowed", "/tensor_parallel/partition_config/layer_specs/1");
  EXPECT_NO_DIAG(Validate(Specs(kLlamaSpecs), At(8, &llama_)), "tp-spec-shadowed");
}

TEST_F(TensorParallelModelTest, StrictModeNeedsASpecForEveryLinear) {
  auto r = Validate(
      Specs(R"json({"patterns": [".*\\.self_attn\\.o_proj\\.weight$"], "partition_type": "row"},
                                  {"patterns": [".*\\.self_attn\\.[qkv]_proj\\.weight$"]})json",
            R"( "strict_mode": true,)"),
      At(8, &llama_));
  EXPECT_DIAG(r, "tp-strict-unmatched", "/tensor_parallel/partition_config/strict_mode");
  EXPECT_NE(MessageOf(r, "tp-strict-unmatched")
                .find("No matching spec for model.layers.0.mlp.gate_proj.weight"),
            std::string::npos);
  auto full = Validate(Specs(std::string(kLlamaSpecs) +
                                 R"json(, {"patterns": ["lm_head"], "partition_type": "skip"})json",
                             R"( "strict_mode": true,)"),
                       At(8, &llama_));
  EXPECT_NO_DIAG(full, "tp-strict-unmatched");
}

TEST_F(TensorParallelModelTest, ShapeMustFitTheWeight) {
  auto bad = Validate(
      Specs(
          std::string(
              R"json({"patterns": [".*\\.q_proj\\.weight$"], "shape": [[64, 32, 32], -1]},)json") +
          kLlamaSpecs),
      At(8, &llama_));
  EXPECT_DIAG(bad, "tp-spec-shape-mismatch",
              "/tensor_parallel/partition_config/layer_specs/0/shape");
  EXPECT_NE(MessageOf(bad, "tp-spec-shape-mismatch").find("must match weight input dim 64"),
            std::string::npos);
  auto ok = Validate(
      Specs(std::string(R"json({"patterns": [".*\\.q_proj\\.weight$"], "shape": [2, -1]},)json") +
            kLlamaSpecs),
      At(8, &llama_));
  EXPECT_NO_DIAG(ok, "tp-spec-shape-mismatch");
}

TEST_F(TensorParallelModelTest, ColumnWithoutRowPartner) {
  auto r = Validate(
      Specs(
          R"json({"patterns": [".*\\.self_attn\\.[qkv]_proj\\.weight$"], "partition_type": "column"})json"),
      At(8, &llama_));
  EXPECT_DIAG(r, "tp-missing-row-partner", "/tensor_parallel/partition_config/layer_specs/0");
  EXPECT_NE(MessageOf(r, "tp-missing-row-partner").find("o_proj is replicated"), std::string::npos);
  auto lm_head =
      Validate(Specs(std::string(kLlamaSpecs) + R"json(, {"patterns": ["lm_head\\.weight$"]})json"),
               At(8, &llama_));
  EXPECT_DIAG(lm_head, "tp-missing-row-partner", "/tensor_parallel/partition_config/layer_specs/2");
  auto gathered =
      Validate(Specs(std::string(kLlamaSpecs) +
                     R"json(, {"patterns": ["lm_head\\.weight$"], "gather_output": true})json"),
               At(8, &llama_));
  EXPECT_NO_DIAG(gathered, "tp-missing-row-partner");
}

// A row spec on lm_head is LmHeadLinearAllreduce (auto_tp.py _create_row_parallel_layer): eager
// training gets a warning (its forward slices the input and sums the logits with
// inference_all_reduce outside autograd: module_inject/layers.py LmHeadLinearAllreduce.forward);
// the autotp compile pass refuses it (tp_compile.py defer_collectives_to_compiler).
TEST_F(TensorParallelModelTest, RowLmHeadWarnsEagerAndIsRefusedByTheCompilePass) {
  const std::string specs = std::string(kLlamaSpecs) +
                            R"json(, {"patterns": ["lm_head\\.weight$"], "partition_type": "row"})json";
  auto eager = Validate(Specs(specs), At(8, &llama_));
  EXPECT_DIAG(eager, "tp-lm-head-row-backward", "/tensor_parallel/partition_config/layer_specs/2");
  EXPECT_NO_DIAG(eager, "tp-missing-row-partner");
  EXPECT_NO_DIAG(eager, "compile-autotp-lm-head-row");
  std::string compiled = Specs(specs);
  compiled.insert(compiled.rfind('}'), R"(, "compile": {"deepcompile": true, "passes": ["autotp"]})");
  auto refused = Validate(compiled, At(8, &llama_));
  EXPECT_DIAG(refused, "compile-autotp-lm-head-row", "/tensor_parallel/partition_config/layer_specs/2");
  EXPECT_NE(MessageOf(refused, "compile-autotp-lm-head-row").find("LmHeadLinearAllreduce"), std::string::npos);
  EXPECT_NO_DIAG(refused, "tp-lm-head-row-backward");
}

TEST_F(TensorParallelModelTest, RowWithoutColumnPartner) {
  auto r = Validate(
      Specs(R"json({"patterns": [".*\\.self_attn\\.o_proj\\.weight$"], "partition_type": "row"},
                                  {"patterns": [".*\\.self_attn\\.[qv]_proj\\.weight$"], "partition_type": "column"})json"),
      At(8, &llama_));
  EXPECT_DIAG(r, "tp-missing-column-partner", "/tensor_parallel/partition_config/layer_specs/0");
  EXPECT_NE(MessageOf(r, "tp-missing-column-partner").find("k_proj"), std::string::npos);
  EXPECT_NO_DIAG(Validate(Specs(kLlamaSpecs), At(8, &llama_)), "tp-missing-column-partner");
}

TEST_F(TensorParallelModelTest, QkNormNeedsGradAllreduce) {
  auto preset = Validate(Tp(R"({"autotp_size": 2, "preset_model": "llama"})"), At(8, &moe_));
  EXPECT_DIAG(preset, "tp-qk-norm-grad-allreduce", "/tensor_parallel/preset_model");
  auto fixed = Validate(
      Tp(R"json({"autotp_size": 2, "preset_model": "llama", "partition_config": {"layer_specs": [
      {"patterns": [".*\\.self_attn\\.[qk]_norm\\.weight$"], "partition_type": "skip", "grad_allreduce": true}]}})json"),
      At(8, &moe_));
  EXPECT_NO_DIAG(fixed, "tp-qk-norm-grad-allreduce");
  EXPECT_NO_DIAG(fixed, "tp-missing-row-partner");
}

TEST(TensorParallelRulesTest, MatchingAQwen3MoeIsFast) {
  const ModelSpec qwen = testing::ParsePresetOrDie("qwen3-30b-a3b.json");  // ~18k parameter names
  const std::string specs = R"json(
      {"patterns": [".*\\.self_attn\\.o_proj\\.weight$"], "partition_type": "row"},
      {"patterns": [".*\\.self_attn\\.[qkv]_proj\\.weight$"], "partition_type": "column"},
      {"patterns": [".*\\.self_attn\\.[qk]_norm\\.weight$"], "partition_type": "skip", "grad_allreduce": true},
      {"patterns": [".*\\.experts\\.\\d+\\.down_proj\\.weight$"], "partition_type": "row"},
      {"patterns": [".*\\.experts\\.\\d+\\.(gate|up)_proj\\.weight$"], "partition_type": "column"},
      {"patterns": ["model\\.layers\\.1\\.mlp\\.gate\\.weight$", ".*\\.mlp\\.gate\\.weight$"], "partition_type": "skip"},
      {"patterns": [".*\\.mlp\\.down_proj\\.weight$"], "partition_type": "row"})json";
  auto start = std::chrono::steady_clock::now();
  auto r = Validate(Specs(specs), At(8, &qwen));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  // Qwen3-30B-A3B has no dense MLP layers: only the last pattern matches nothing.
  for (const auto& d : r.diagnostics) {
    if (d.rule_id.starts_with("tp-spec")) {
      EXPECT_EQ(d.pointer, "/tensor_parallel/partition_config/layer_specs/6/patterns/0")
          << d.message;
    }
  }
  EXPECT_DIAG(r, "tp-spec-pattern-unmatched",
              "/tensor_parallel/partition_config/layer_specs/6/patterns/0");
  EXPECT_NO_DIAG(r, "tp-missing-row-partner");
  EXPECT_NO_DIAG(r, "tp-qk-norm-grad-allreduce");
  EXPECT_LT(ms, 20000) << "layer_specs matching took " << ms << " ms";
}

}  // namespace
}  // namespace dsp
