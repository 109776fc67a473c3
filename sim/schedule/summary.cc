// SPDX-License-Identifier: Apache-2.0
#include "sim/schedule/summary.h"

#include <algorithm>

namespace dsp::sim::schedule {

std::string TaskCategory(const Task& task) {
  if (task.collective) return std::string(CollectiveKindName(task.kind));
  if (task.host_copy) return "checkpoint copy";
  if (task.phase == Phase::kOptimizer) return "optimizer";
  if (task.name.starts_with("recompute")) return "recompute";
  return task.phase == Phase::kForward ? "compute forward" : "compute backward";
}

ScheduleSummary Summarize(const Program& program, const Schedule& schedule, int rank) {
  ScheduleSummary s;
  s.rank = rank;
  const RankTimeline& tl = schedule.Of(rank);
  s.step_seconds = schedule.step_seconds;
  s.peak_bytes = tl.peak_bytes;
  s.peak_at = tl.peak_at;

  // Sweep the rank's intervals: at every elementary interval, compute busy, or the active
  // collectives share it equally, or nothing runs.
  struct Edge {
    double t;
    int task;
    bool open;
  };
  std::vector<Edge> edges;
  for (size_t i = 0; i < program.tasks.size(); ++i) {
    const TaskTime& t = tl.times[i];
    if (t.end <= t.start) continue;
    edges.push_back({t.start, static_cast<int>(i), true});
    edges.push_back({t.end, static_cast<int>(i), false});
    if (program.tasks[i].collective || program.tasks[i].host_copy) {
      s.communication_by_kind[TaskCategory(program.tasks[i])] += t.end - t.start;
    }
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.t != b.t ? a.t < b.t : a.open < b.open;
  });
  int compute_open = 0;
  std::map<int, int> comm_open;  // task -> 1
  double prev = 0;
  for (const Edge& e : edges) {
    const double dt = e.t - prev;
    if (dt > 0) {
      if (compute_open > 0) {
        s.compute_seconds += dt;
      } else if (!comm_open.empty()) {
        s.exposed_communication_seconds += dt;
        for (const auto& [task, one] : comm_open) {
          s.exposed_by_kind[TaskCategory(program.tasks[static_cast<size_t>(task)])] +=
              dt / static_cast<double>(comm_open.size());
        }
      } else {
        s.idle_seconds += dt;
      }
    }
    prev = e.t;
    const Task& task = program.tasks[static_cast<size_t>(e.task)];
    // A blocking host copy holds the compute stream but is time the step waits on a transfer.
    const bool on_compute = task.stream == kComputeStream && !task.host_copy;
    if (e.open) {
      if (on_compute) {
        ++compute_open;
      } else {
        comm_open[e.task] = 1;
      }
    } else if (on_compute) {
      --compute_open;
    } else {
      comm_open.erase(e.task);
    }
  }
  s.idle_seconds += std::max(0.0, s.step_seconds - prev);

  // Critical path, from the task that ends last on any rank, walking back through whatever
  // finished last before each task started.
  int cls = 0;
  int current = -1;
  double latest = -1;
  for (size_t c = 0; c < schedule.classes.size(); ++c) {
    for (size_t i = 0; i < program.tasks.size(); ++i) {
      if (schedule.classes[c].times[i].end > latest) {
        latest = schedule.classes[c].times[i].end;
        current = static_cast<int>(i);
        cls = static_cast<int>(c);
      }
    }
  }
  // The previous task on each task's stream (FIFO order).
  std::vector<int> stream_prev(program.tasks.size(), -1);
  std::map<int, int> last_on_stream;
  for (size_t i = 0; i < program.tasks.size(); ++i) {
    auto it = last_on_stream.find(program.tasks[i].stream);
    if (it != last_on_stream.end()) stream_prev[i] = it->second;
    last_on_stream[program.tasks[i].stream] = static_cast<int>(i);
  }
  while (current >= 0) {
    const auto& times = schedule.classes[static_cast<size_t>(cls)].times;
    const TaskTime& t = times[static_cast<size_t>(current)];
    s.critical_path.push_back({current, schedule.representative[static_cast<size_t>(cls)], t.end - t.start});
    s.critical_path_by_category[TaskCategory(program.tasks[static_cast<size_t>(current)])] += t.end - t.start;
    int next = -1;
    int next_cls = cls;
    double best = -1;
    auto consider = [&](int task, int c) {
      const double end = schedule.classes[static_cast<size_t>(c)].times[static_cast<size_t>(task)].end;
      if (end > best && end <= t.start + 1e-15) {
        best = end;
        next = task;
        next_cls = c;
      }
    };
    const Task& task = program.tasks[static_cast<size_t>(current)];
    auto constraints = [&](int c) {
      for (int d : task.deps) consider(d, c);
      if (stream_prev[static_cast<size_t>(current)] >= 0) consider(stream_prev[static_cast<size_t>(current)], c);
    };
    constraints(cls);
    if (task.collective && best < t.start - 1e-12) {
      // This rank was ready earlier: a member of its group was late. Follow the rank whose
      // readiness matches the start.
      for (size_t c = 0; c < schedule.classes.size(); ++c) {
        if (static_cast<int>(c) != cls) constraints(static_cast<int>(c));
      }
    }
    current = next;
    cls = next_cls;
  }
  return s;
}

}  // namespace dsp::sim::schedule
