// SPDX-License-Identifier: Apache-2.0
// `ds-plan calibrate --trace`: the cluster's kernel efficiencies fitted to a profiler trace of one
// step of a plan, class by class: efficiency.memory so the memory-bound and optimizer kernels take
// the time they took, efficiency.matmul for the GEMMs, efficiency.attention for fused attention.
// Each class depends mostly on its own figure, so each is solved by bisection (the predicted time
// falls as the figure rises), memory first since small GEMMs lean on it too; two sweeps.
// `calibrate --steps` does the same over many traced steps at once and fits the host's figures.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/util/result.h"
#include "sim/cost/cluster.h"
#include "sim/calibrate/kineto_trace.h"
#include "sim/calibrate/trace_compare.h"
#include "sim/cost/sim_input.h"

namespace dsp::sim {

struct TraceCalibration {
  Cluster cluster;                                     // with the fitted figures
  std::vector<std::pair<std::string, double>> fitted;  // name, value; FitParameters' names
  Comparison before, after;
};

// `input` is the plan the trace ran (its cluster is the starting point). A class the trace has no
// time in leaves its figure as it was. Errors: the plan predicts no time for any fitted class.
Result<TraceCalibration> CalibrateFromTrace(const SimInput& input, const TraceSummary& trace);

// One measured step of a sweep (sim/calibrate/step_sweep.h): the plan it ran, its trace if one
// was taken, and the host's measured time to issue its forward and backward (0 = not measured).
struct CalibrationStep {
  const SimInput* input = nullptr;
  const TraceSummary* trace = nullptr;
  double host_forward_seconds = 0, host_backward_seconds = 0;
};

struct StepsCalibration {
  Cluster cluster;
  std::vector<std::pair<std::string, double>> fitted;  // FitParameters' names
  std::vector<TimeReport> before, after;               // one per step, on the starting and the fitted cluster
};

// `ds-plan calibrate --steps`: the efficiencies fitted to all the traced steps at once (each
// class's time summed over them), and the host's per-kernel issue times (host.*) to the least
// measured time per predicted launch. The steps' inputs point to other clusters; `start` is the
// one varied. Errors: no step has a trace or a host time, or no fitted class has predicted time.
Result<StepsCalibration> CalibrateFromSteps(const std::vector<CalibrationStep>& steps, const Cluster& start);

}  // namespace dsp::sim
