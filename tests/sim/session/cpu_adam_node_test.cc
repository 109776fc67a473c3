// SPDX-License-Identifier: Apache-2.0
// CPU Adam shared by a node's ranks (Cluster::cpu_optimizer_node_params_per_second) against the
// Arctic Long Sequence Training runs of samples/runs/deepspeed-runs.tsv (Bekman et al., arXiv
// 2506.13996v1; DeepSpeed 0.17.0 ZeRO-3 with the optimizer on the CPU, AWS H100 nodes): no preset
// carries the figure (it is a property of a host), so this is a what-if. The node rate that makes
// the 8-GPU baseline's step exact is found, and every other ALST run is priced with it: the 32-GPU
// baseline (the same hosts, held out of the fit) and the 8-GPU runs whose steps are long enough
// for the optimizer to matter little. docs/validation.md "DeepSpeed runs" holds the table.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "tests/sim/session/deepspeed_runs_util.h"

namespace dsp::sim {
namespace {

using deepspeed_runs::Outcome;
using deepspeed_runs::Row;
using deepspeed_runs::Simulate;
using testing::Fixed;

constexpr const char* kFitted = "alst-llama31-8b-baseline-8g";
constexpr const char* kHeldOut = "alst-llama31-8b-baseline-32g";
// PR #8186's ZeRO-Offload run on 8 H200: another host, fitted the same way for comparison.
constexpr const char* kOtherHost = "pr8186-qwen3-14b-zero-offload-s2048";

Outcome WithNodeRate(const Row& r, double node_rate) {
  return Simulate(r, [node_rate](Cluster& c) { c.cpu_optimizer_node_params_per_second = node_rate; });
}

// The node rate that gives the row's measured step (the step grows as the rate falls: bisection in
// log space); 0 when none between 2e7 and 5e9 does.
double FitNodeRate(const Row& r) {
  double lo = 1e7, hi = 1e10;
  for (int i = 0; i < 60; ++i) {
    const double mid = std::sqrt(lo * hi);
    const Outcome o = WithNodeRate(r, mid);
    (o.predicted_s > o.measured_s ? lo : hi) = mid;
  }
  const double rate = std::sqrt(lo * hi);
  return rate > 2e7 && rate < 5e9 ? rate : 0;
}

TEST(CpuAdamNodeTest, TheNodeRateFittedOnOneAlstRunCarriesToTheOthers) {
  std::vector<Row> alst;
  const Row* h200 = nullptr;
  const std::vector<Row> rows = testing::TsvRows("samples/runs/deepspeed-runs.tsv");
  for (const Row& r : rows) {
    if (r.at("group") == "alst-h100-paper") alst.push_back(r);
    if (r.at("run_id") == kOtherHost) h200 = &r;
  }
  ASSERT_NE(h200, nullptr);
  ASSERT_EQ(alst.size(), 10u);
  const Row* fitted = nullptr;
  for (const Row& r : alst) {
    if (r.at("run_id") == kFitted) fitted = &r;
  }
  ASSERT_NE(fitted, nullptr);
  const double rate = FitNodeRate(*fitted);
  ASSERT_GT(rate, 0) << "no node rate gives the measured step";
  const double per_rank = ParseCluster(Json::parse(testing::SourceFile(modern_runs::ClusterOf(fitted->at("hardware"))),
                                                   nullptr, true, true))
                              ->cpu_optimizer_params_per_second;
  std::ostringstream table;
  table << "Node rate fitted on " << kFitted << ": " << Fixed(rate / 1e6, "%.0f")
        << "e6 parameters/s (one rank alone at the preset's per-rank rate, " << Fixed(per_rank / 1e6, "%.0f")
        << "e6).\n\n";
  table << "| run | measured s | predicted s | error | with the node rate s | error |\n";
  table << "|---|---:|---:|---:|---:|---:|\n";
  double before_held_out = 0, after_held_out = 0;
  for (const Row& r : alst) {
    const Outcome plain = Simulate(r);
    const Outcome shared = WithNodeRate(r, rate);
    const double e0 = plain.predicted_s / plain.measured_s - 1, e1 = shared.predicted_s / shared.measured_s - 1;
    if (plain.run_id == kHeldOut) before_held_out = e0, after_held_out = e1;
    table << "| " << plain.run_id << (plain.run_id == kFitted ? " (fitted)" : "") << " | "
          << Fixed(plain.measured_s, "%.2f") << " | " << Fixed(plain.predicted_s, "%.2f") << " | "
          << Fixed(100 * e0, "%+.1f%%") << " | " << Fixed(shared.predicted_s, "%.2f") << " | "
          << Fixed(100 * e1, "%+.1f%%") << " |\n";
  }
  const double other = FitNodeRate(*h200);
  ASSERT_GT(other, 0);
  table << "\nThe same fit on " << kOtherHost << " (8 H200, another host): " << Fixed(other / 1e6, "%.0f")
        << "e6 parameters/s.\n";
  // The run on 4 nodes of the same hosts, not fitted, moves toward its measurement.
  EXPECT_LT(std::fabs(after_held_out), std::fabs(before_held_out));
  EXPECT_NE(testing::SourceFile("docs/validation.md").find(table.str()), std::string::npos)
      << "docs/validation.md \"DeepSpeed runs\" is not the current table:\n" << table.str();
}

}  // namespace
}  // namespace dsp::sim
