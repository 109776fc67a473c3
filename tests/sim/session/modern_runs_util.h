// SPDX-License-Identifier: Apache-2.0
// One run of samples/runs/modern-runs.tsv simulated as `ds-plan simulate` would (the flags of each
// row: see modern_runs_test.cc), shared by the table test and the error-band test.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "core/model/model_spec.h"
#include "sim/cost/cluster.h"
#include "sim/report/error_band.h"
#include "sim/session/evaluation.h"
#include "sim/session/reference_runs.h"
#include "tests/sim/table_test_util.h"

namespace dsp::sim::modern_runs {

using Row = testing::TsvRow;

inline std::string Source(const std::string& relative) { return testing::SourceFile(relative); }

// The cluster preset of each hardware name.
inline std::string ClusterOf(const std::string& hardware) {
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
inline std::string ModelOf(const std::string& column) {
  const std::string name = column.substr(column.find('/') + 1);
  const std::string shared = "samples/models/" + name;
  if (std::filesystem::exists(std::string(DSP_SOURCE_DIR) + "/" + shared)) return shared;
  return "samples/runs/modern/models/" + name;
}

inline int Int(const Row& row, const char* key) { return std::stoi(row.at(key)); }

struct Outcome {
  std::string run_id, engine, flags;
  double measured_s = 0, predicted_s = 0;
  double measured_gb = 0, predicted_gb = 0;  // 0: not published
  bool fits = false;
  std::string gpu_class;  // GpuClass of the row's cluster preset
};

inline Outcome Simulate(const Row& r) {
  Outcome o;
  o.run_id = r.at("run_id");
  auto run = PlanModernRun(r);
  EXPECT_TRUE(run.ok()) << o.run_id << ": " << (run.ok() ? "" : run.error().message);
  if (!run.ok()) return o;
  o.engine = std::string(EngineName(run->engine));
  o.flags = run->flags;
  const Cluster cluster = ParseCluster(Json::parse(Source(ClusterOf(r.at("hardware"))), nullptr, true, true)).value();
  auto model = ParseHfConfig(Json::parse(Source(ModelOf(r.at("model")))));
  EXPECT_TRUE(model.ok()) << o.run_id;
  if (!model.ok()) return o;
  auto e = Evaluate(*model, cluster, o.run_id + ".json", run->config.dump(), {}, run->knobs);
  EXPECT_TRUE(e->has_numbers()) << o.run_id << ": " << e->message;
  if (!e->has_numbers()) return o;
  o.measured_s = run->measured_seconds;
  o.predicted_s = e->time.step_seconds;
  o.measured_gb = run->measured_peak_gb;
  o.predicted_gb = (run->measured_peak_reserved ? e->memory.reserved_peak_bytes : e->memory.peak_bytes) / 1e9;
  o.fits = e->memory.fits;
  o.gpu_class = GpuClass(cluster.gpu);
  return o;
}

}  // namespace dsp::sim::modern_runs
