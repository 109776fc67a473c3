// SPDX-License-Identifier: Apache-2.0
// Evaluate (sim/session/evaluation.cc): what the engine does with the config beyond its sizes.
#include "sim/session/evaluation.h"

#include <gtest/gtest.h>

#include <string>

#include "core/util/file_io.h"

namespace dsp::sim {
namespace {

std::string Source(const std::string& rel) { return ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel).value(); }

ModelSpec Model(const std::string& file) {
  return ParseHfConfig(Json::parse(Source("samples/models/" + file))).value();
}

Cluster H100() { return ParseCluster(Json::parse(Source("samples/clusters/h100-sxm.json"), nullptr, true, true)).value(); }

// ZeRO-2 in bf16 on one node of 8, with the `expert_parallel` section `ep` (empty: none).
std::unique_ptr<Evaluation> SimulateOn8(const std::string& model_file, const std::string& ep) {
  const std::string config = R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 4,
      "bf16": {"enabled": true}, "zero_optimization": {"stage": 2})" +
                             (ep.empty() ? "" : ", \"expert_parallel\": " + ep) + "}";
  PlanKnobs k;
  k.world_size = 8;
  k.seq_len = 4096;
  k.engine.engine = Engine::kDeepSpeed;
  auto e = Evaluate(Model(model_file), H100(), "ep.json", config, {}, k);
  EXPECT_TRUE(e->has_numbers()) << model_file << " " << ep << ": " << e->message;
  return e;
}

bool Noted(const Evaluation& e, const std::string& text) {
  for (const auto& n : e.notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

// DeepSpeed creates the EP groups, then AutoEP finds no block on gpt_oss (`mlp.router`, not
// `mlp.gate`: module_inject/auto_ep_presets, 0.19.6), logs, and the experts stay ordinary
// parameters: the run costs what the same run without expert_parallel costs.
TEST(EvaluateAutoEpTest, AnUndetectedModelIsPricedWithoutExpertParallelism) {
  const std::string on = R"({"enabled": true, "autoep_size": 4})";
  auto oss = SimulateOn8("gpt-oss-20b.json", on);
  auto oss_plain = SimulateOn8("gpt-oss-20b.json", "");
  ASSERT_TRUE(oss->has_numbers() && oss_plain->has_numbers());
  EXPECT_FALSE(oss->plan.sizes.expert_parallel);
  EXPECT_EQ(oss->memory.peak_bytes, oss_plain->memory.peak_bytes);
  EXPECT_EQ(oss->time.step_seconds, oss_plain->time.step_seconds);
  EXPECT_TRUE(Noted(*oss, "[ep-moe-not-detected]"));
  // With the user's patterns AutoEP finds the blocks: experts split over EP 4.
  auto custom = SimulateOn8("gpt-oss-20b.json", R"({"enabled": true, "autoep_size": 4,
      "moe_layer_pattern": "model\\.layers\\.\\d+\\.mlp", "router_pattern": "router"})");
  ASSERT_TRUE(custom->has_numbers());
  EXPECT_TRUE(custom->plan.sizes.expert_parallel);
  EXPECT_LT(custom->memory.peak_bytes, 0.8 * oss_plain->memory.peak_bytes);
  // A model its preset detects keeps its expert parallelism.
  auto mixtral = SimulateOn8("mixtral-8x7b.json", on);
  auto mixtral_plain = SimulateOn8("mixtral-8x7b.json", "");
  ASSERT_TRUE(mixtral->has_numbers() && mixtral_plain->has_numbers());
  EXPECT_TRUE(mixtral->plan.sizes.expert_parallel);
  EXPECT_NE(mixtral->memory.peak_bytes, mixtral_plain->memory.peak_bytes);
  EXPECT_FALSE(Noted(*mixtral, "[ep-moe-not-detected]"));
}

// GLM-4.5 without preset_model: every AutoEP preset matches its blocks and DeepSpeed raises, so
// there are no numbers, only validate's error.
TEST(EvaluateAutoEpTest, AnAmbiguousDetectionIsAConfigError) {
  PlanKnobs k;
  k.world_size = 8;
  k.engine.engine = Engine::kDeepSpeed;
  const std::string config = R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3}, "expert_parallel": {"enabled": true, "autoep_size": 8}})";
  auto e = Evaluate(Model("glm-4.5-air.json"), H100(), "ep.json", config, {}, k);
  EXPECT_EQ(e->outcome, Evaluation::Outcome::kConfigErrors);
  bool found = false;
  for (const auto& d : e->report.diagnostics) found = found || d.rule_id == "ep-detection-ambiguous";
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace dsp::sim
