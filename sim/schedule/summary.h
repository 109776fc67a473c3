// SPDX-License-Identifier: Apache-2.0
// What a performance engineer reads first in a profile, computed from a simulated schedule: where
// the step's time went on one rank (compute, communication nobody hid, idle), exposed
// communication per collective kind, and the critical path that set the step time.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/schedule/program.h"
#include "sim/schedule/simulator.h"

namespace dsp::sim::schedule {

struct PathStep {
  int task = -1;
  int rank = 0;  // the representative rank the step ran on
  double seconds = 0;
};

struct ScheduleSummary {
  int rank = 0;                  // the rank summarised
  double step_seconds = 0;
  double compute_seconds = 0;    // busy time of the compute stream
  double exposed_communication_seconds = 0;  // a collective or host copy runs, no compute does
  double idle_seconds = 0;       // nothing runs (waiting for another rank)
  std::map<std::string, double> exposed_by_kind;  // "all_reduce", ..., "checkpoint copy": shares of overlapping calls
  std::map<std::string, double> communication_by_kind;  // total time of collectives and host copies
  double peak_bytes = 0;
  double peak_at = 0;
  // Critical path: the chain of tasks, last first, each the latest-finishing constraint of the
  // next (a dependency, the previous task on its stream, or a late member of its group).
  std::vector<PathStep> critical_path;
  std::map<std::string, double> critical_path_by_category;  // "compute forward", "all_to_all", ...
};

ScheduleSummary Summarize(const Program& program, const Schedule& schedule, int rank);

// Category of a task for summaries and colours: "compute forward", "compute backward",
// "recompute", "optimizer", "checkpoint copy", or its collective kind ("all_reduce", ...).
std::string TaskCategory(const Task& task);

}  // namespace dsp::sim::schedule
