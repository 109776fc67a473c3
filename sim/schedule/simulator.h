// SPDX-License-Identifier: Apache-2.0
// Discrete-event simulation of one training step: every rank runs the program's tasks on its
// streams (one compute stream, one communication stream per group kind, each FIFO as CUDA streams
// are); a task starts when its dependencies are done and its stream is free, and a collective only
// when every member of its group is ready, so a slow rank delays its whole group. Collectives are
// priced on the rank's real group (GroupLink, CollectiveSeconds: the cost model's functions).
//
// Scale by symmetry: ranks are partitioned into classes that provably behave the same (same
// compute speed, same links, and, refined to a fixed point, groups made of the same classes), and
// one representative per class is simulated. Full mode simulates every rank; both give the same
// times (tests/sim/schedule).
#pragma once

#include <map>
#include <vector>

#include "core/util/result.h"
#include "sim/schedule/program.h"
#include "sim/cost/sim_input.h"

namespace dsp::sim::schedule {

struct SimulateOptions {
  bool full = false;                  // every rank its own class (small worlds, checks)
  std::map<int, double> slow_ranks;   // rank -> compute time factor (1.5 = 50% slower)
};

struct TaskTime {
  double start = 0;
  double end = 0;
};

struct RankTimeline {
  std::vector<TaskTime> times;                       // per program task
  std::vector<std::pair<double, double>> memory;     // (seconds, bytes in use from then on)
  double peak_bytes = 0;
  double peak_at = 0;
  double end = 0;
};

struct Schedule {
  int world = 0;
  std::vector<int> class_of_rank;    // rank -> class
  std::vector<int> representative;   // class -> its lowest rank
  std::vector<RankTimeline> classes; // class -> timeline
  double step_seconds = 0;           // the last task's end on any rank

  const RankTimeline& Of(int rank) const { return classes[static_cast<size_t>(class_of_rank[static_cast<size_t>(rank)])]; }
};

// Errors: a slow rank outside the world or a factor <= 0; a task on a group kind the plan lacks.
Result<Schedule> Simulate(const Program& program, const SimInput& input, const SimulateOptions& options = {});

// The rank classes alone (what Simulate uses), for tests and reports: class per rank.
std::vector<int> RankClasses(const SimInput& input, const std::map<int, double>& slow_ranks);

}  // namespace dsp::sim::schedule
