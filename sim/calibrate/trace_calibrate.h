// SPDX-License-Identifier: Apache-2.0
// `ds-plan calibrate --trace`: the cluster's kernel efficiencies fitted to a profiler trace of one
// step of a plan, class by class: efficiency.memory so the memory-bound and optimizer kernels take
// the time they took, efficiency.matmul for the GEMMs, efficiency.attention for fused attention.
// Each class depends mostly on its own figure, so each is solved by bisection (the predicted time
// falls as the figure rises), memory first since small GEMMs lean on it too; two sweeps.
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

}  // namespace dsp::sim
