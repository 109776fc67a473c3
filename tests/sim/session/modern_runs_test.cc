// SPDX-License-Identifier: Apache-2.0
// Every run of samples/runs/modern-runs.tsv (2024-2026 training runs on H100, H200 and A100 by
// NeMo, Megatron-LM, torchtitan, NeMo AutoModel and DeepSpeed; sources in its `source` column)
// evaluated as `ds-plan simulate` would with the flags the engines issue names: framework nemo /
// megatron-lm -> --engine megatron-lm, torchtitan / other -> fsdp2, deepspeed -> deepspeed; the ZeRO
// stage from zero_or_fsdp; --tp/--pp/--virtual-stages/--cp/--ep/--megatron-sp/--fp8 from the row
// (DeepSpeed takes TP and EP from its config), --tp-comm-overlap where the row's source says TP
// communication overlap is on (column tp_comm_overlap) and --fp8-param-gather where it says FP8 parameters
// (column fp8_param_gather: NeMo's fp8_params). Each must give numbers; docs/validation.md "Modern
// runs, every engine" holds the table this test computes and the test fails when it is stale.
// No accuracy bound yet: that is the cost model's next step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/model_spec.h"
#include "sim/cost/cluster.h"
#include "sim/session/evaluation.h"
#include "tests/sim/table_test_util.h"

namespace dsp::sim {
namespace {

using testing::Fixed;
using Row = testing::TsvRow;

std::string Source(const std::string& relative) { return testing::SourceFile(relative); }

// The cluster preset of each hardware name.
std::string ClusterOf(const std::string& hardware) {
  static const std::map<std::string, std::string> presets = {
      {"h100-80gb-sxm", "samples/clusters/h100-sxm.json"},
      {"h100-96gb-hbm2e-500w", "samples/clusters/h100-96gb-hbm2e.json"},
      {"h200", "samples/clusters/h200.json"},
      {"a100-80gb", "samples/clusters/a100-80gb.json"}};
  auto it = presets.find(hardware);
  EXPECT_NE(it, presets.end()) << hardware;
  return it == presets.end() ? "" : it->second;
}

// models/x.json: a shared sample model, or one bundled for these runs.
std::string ModelOf(const std::string& column) {
  const std::string name = column.substr(column.find('/') + 1);
  const std::string shared = "samples/models/" + name;
  if (std::filesystem::exists(std::string(DSP_SOURCE_DIR) + "/" + shared)) return shared;
  return "samples/runs/modern/models/" + name;
}

int Int(const Row& row, const char* key) { return std::stoi(row.at(key)); }

struct Outcome {
  std::string run_id, engine, flags;
  double measured_s = 0, predicted_s = 0;
  double measured_gb = 0, predicted_gb = 0;  // 0: not published
  bool fits = false;
};

Outcome Simulate(const Row& r) {
  Outcome o;
  o.run_id = r.at("run_id");
  const std::string framework = r.at("framework");
  const Engine engine = framework == "deepspeed"                             ? Engine::kDeepSpeed
                        : framework == "nemo" || framework == "megatron-lm" ? Engine::kMegatronLm
                                                                             : Engine::kFsdp2;
  o.engine = std::string(EngineName(engine));
  Json config = {{"train_micro_batch_size_per_gpu", Int(r, "micro_batch")},
                 {"gradient_accumulation_steps", Int(r, "grad_accum")},
                 {"gradient_clipping", 1.0},
                 {"zero_optimization", {{"stage", Int(r, "zero_or_fsdp")}}},
                 {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-4}}}}},
                 {r.at("precision") == "fp16" ? "fp16" : "bf16", {{"enabled", true}}}};
  PlanKnobs k;
  k.nodes = Int(r, "gpus") / Int(r, "gpus_per_node");
  k.gpus_per_node = Int(r, "gpus_per_node");
  k.pp = Int(r, "pp");
  k.seq_len = Int(r, "seq_len");
  // "unknown" (the Megatron-LM README does not say): selective, Megatron's default since 2022.
  k.recompute = ParseRecompute(r.at("recompute")).value_or(Recompute::kSelective);
  k.engine.engine = engine;
  std::ostringstream flags;
  if (engine == Engine::kDeepSpeed) {
    if (Int(r, "tp") > 1) config["tensor_parallel"] = {{"autotp_size", Int(r, "tp")}};
    if (Int(r, "ep") > 1) config["expert_parallel"] = {{"enabled", true}, {"autoep_size", Int(r, "ep")}};
  } else {
    k.megatron_tp = Int(r, "tp");
    if (Int(r, "tp") > 1) flags << " --tp " << Int(r, "tp");
    if (Int(r, "cp") > 1) k.cp = Int(r, "cp"), flags << " --cp " << k.cp;
    if (Int(r, "ep") > 1) k.ep = Int(r, "ep"), flags << " --ep " << k.ep;
    k.engine.megatron_sp = engine == Engine::kMegatronLm && r.at("sequence_parallel") == "1";
    if (k.engine.megatron_sp) flags << " --megatron-sp";
    // The runs whose recipe or README says TP communication overlap (userbuffers) is on.
    k.engine.tp_comm_overlap = k.engine.megatron_sp && r.at("tp_comm_overlap") == "1";
    if (k.engine.tp_comm_overlap) flags << " --tp-comm-overlap";
  }
  if (k.pp > 1) flags << " --pp " << k.pp;
  if (Int(r, "vp") > 1) k.engine.virtual_stages = Int(r, "vp"), flags << " --virtual-stages " << Int(r, "vp");
  k.engine.fp8 = r.at("precision") == "fp8";
  if (k.engine.fp8) flags << " --fp8";
  k.engine.fp8_param_gather = k.engine.fp8 && r.at("fp8_param_gather") == "1";
  if (k.engine.fp8_param_gather) flags << " --fp8-param-gather";
  o.flags = flags.str().empty() ? "" : flags.str().substr(1);
  const Cluster cluster = ParseCluster(Json::parse(Source(ClusterOf(r.at("hardware"))), nullptr, true, true)).value();
  auto model = ParseHfConfig(Json::parse(Source(ModelOf(r.at("model")))));
  EXPECT_TRUE(model.ok()) << o.run_id;
  if (!model.ok()) return o;
  auto e = Evaluate(*model, cluster, o.run_id + ".json", config.dump(), {}, k);
  EXPECT_TRUE(e->has_numbers()) << o.run_id << ": " << e->message;
  if (!e->has_numbers()) return o;
  o.measured_s = std::stod(r.at("measured_iter_s"));
  o.predicted_s = e->time.step_seconds;
  if (!r.at("measured_peak_mem_gb").empty()) o.measured_gb = std::stod(r.at("measured_peak_mem_gb"));
  o.predicted_gb = e->memory.peak_bytes / 1e9;
  o.fits = e->memory.fits;
  return o;
}

std::string Table(const std::vector<Outcome>& outcomes) {
  std::ostringstream out;
  out << "| run | engine | flags | measured s | predicted s | error | peak measured GB | predicted GB | verdict |\n";
  out << "|---|---|---|---:|---:|---:|---:|---:|---|\n";
  double sum = 0;
  for (const Outcome& o : outcomes) {
    const double error = o.predicted_s / o.measured_s - 1;
    sum += std::fabs(error);
    out << "| " << o.run_id << " | " << o.engine << " | " << o.flags << " | " << Fixed(o.measured_s, "%.3f") << " | "
        << Fixed(o.predicted_s, "%.3f") << " | " << Fixed(100 * error, "%+.1f%%") << " | "
        << (o.measured_gb > 0 ? Fixed(o.measured_gb, "%.1f") : "") << " | " << Fixed(o.predicted_gb, "%.1f") << " | "
        << (o.fits ? "fits" : "DOES NOT FIT") << " |\n";
  }
  out << "\nMean |step-time error| over the " << outcomes.size() << " runs: "
      << Fixed(100 * sum / static_cast<double>(outcomes.size()), "%.1f%%") << ".\n";
  return out.str();
}

TEST(ModernRunsTest, EveryRunSimulatesAndTheDocsCarryTheTable) {
  const std::vector<Row> rows = testing::TsvRows("samples/runs/modern-runs.tsv");
  ASSERT_EQ(rows.size(), 45u);
  std::vector<Outcome> outcomes;
  for (const Row& r : rows) {
    Outcome o = Simulate(r);
    EXPECT_GT(o.predicted_s, 0) << o.run_id;
    if (o.predicted_s > 0) outcomes.push_back(o);
  }
  ASSERT_EQ(outcomes.size(), rows.size());
  const std::string table = Table(outcomes);
  EXPECT_NE(Source("docs/validation.md").find(table), std::string::npos)
      << "docs/validation.md \"Modern runs, every engine\" is not the current table:\n" << table;
}

}  // namespace
}  // namespace dsp::sim
