// SPDX-License-Identifier: Apache-2.0
// `ds-plan calibrate`: fits a cluster file's few global figures (GEMM and HBM efficiency, the
// per-kernel overhead, network hop latency, ...) to measured step times, so the cost model agrees
// with the user's own machines. No per-run constants: one set of figures for every run.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/util/result.h"
#include "sim/cost/cluster.h"
#include "sim/calibrate/measured_runs.h"

namespace dsp::sim {

// A cluster figure the fit may move, with the range it may move in.
struct FitParameter {
  std::string name;     // "efficiency.matmul", "inter_node.hop_latency_seconds", ...
  std::string pointer;  // where it lives in the cluster file: "/efficiency/matmul"
  double lo = 0, hi = 1;
};

// Every figure calibrate knows; `--fit` picks among their names.
const std::vector<FitParameter>& FitParameters();

struct RunFit {
  std::string run_id;
  double measured = 0;
  double calculon = 0;  // Calculon's prediction, 0 when the row has none
  double before = 0, after = 0;  // predicted seconds
  bool fits_before = false, fits_after = false;
  bool held_out = false;  // not in the fit's objective: its error is out-of-sample
};

// A measured run as the fit sees it: what it measured and how the cost model predicts it on a
// given cluster (the published-runs rows through PredictRun, the modern-runs rows through the
// session's Evaluate: apps/ds-plan builds these).
struct CalibrationRun {
  std::string run_id;
  double measured_seconds = 0;
  double calculon_seconds = 0;
  bool held_out = false;
  std::function<Result<RunPrediction>(const Cluster&)> predict;
};
std::vector<CalibrationRun> CalibrationRunsOf(const std::vector<MeasuredRun>& runs);

struct CalibrationResult {
  Cluster cluster;                                  // with the fitted figures
  std::vector<std::pair<std::string, double>> fitted;  // name, value (FitParameters order)
  std::vector<RunFit> runs;
  double mean_abs_error_before = 0, max_abs_error_before = 0;
  double mean_abs_error_after = 0, max_abs_error_after = 0;
  // Over the held-out runs alone (0 runs: 0): the out-of-sample error of the fitted figures.
  int held_out_runs = 0;
  double held_out_mean_before = 0, held_out_mean_after = 0;
};

// Mean and max |predicted / measured - 1| of `runs` on `cluster`.
struct ErrorSummary {
  double mean = 0, max = 0;
  std::vector<double> predicted;
  std::vector<bool> fits;
};
Result<ErrorSummary> Evaluate(const std::vector<CalibrationRun>& runs, const Cluster& cluster);

// Coordinate descent (golden-section search per figure, a few sweeps) on the mean absolute
// relative error of the runs not held out. Deterministic.
Result<CalibrationResult> Calibrate(const std::vector<CalibrationRun>& runs, const Cluster& cluster,
                                    const std::vector<std::string>& fit_names);
Result<CalibrationResult> Calibrate(const std::vector<MeasuredRun>& runs, const Cluster& cluster,
                                    const std::vector<std::string>& fit_names);

// Reads / writes a figure of a Cluster by its FitParameter name.
double GetFigure(const Cluster& c, const std::string& name);
void SetFigure(Cluster& c, const std::string& name, double value);

}  // namespace dsp::sim
