// SPDX-License-Identifier: Apache-2.0
// A simulated schedule as an SVG timeline: for each shown rank one lane per stream (compute and
// one per process-group kind) with a box per task coloured by category, so overlap of
// communication and compute is visible at a glance; under them the rank's memory in use over the
// step with its peak; a time axis in milliseconds and a legend. Written directly as SVG text (a
// timeline is rectangles on a time axis, nothing Graphviz lays out).
#pragma once

#include <string>
#include <vector>

#include "sim/schedule/program.h"
#include "sim/schedule/simulator.h"

namespace dsp::sim::render {

// A second memory curve drawn dashed over each rank's own: the same step simulated without some
// setting (cpu_checkpointing's copies), so what the setting saves is visible where it is saved.
struct MemoryBaseline {
  const schedule::Schedule* schedule = nullptr;
  std::string label;  // "without cpu_checkpointing"
};

// `hbm_bytes` (0: not drawn) is the GPU's memory: a red line on each memory curve, inside the
// axis whenever it is near the curve, so a plan that does not fit shows its curve crossing it.
std::string ScheduleToSvg(const schedule::Program& program, const schedule::Schedule& schedule,
                          const std::vector<int>& ranks, const std::string& title,
                          const MemoryBaseline& baseline = {}, double hbm_bytes = 0);

// The colour of a task category (schedule::TaskCategory), shared by the SVG and its legend.
std::string CategoryColor(const std::string& category);

}  // namespace dsp::sim::render
