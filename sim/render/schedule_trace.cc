// SPDX-License-Identifier: Apache-2.0
#include "sim/render/schedule_trace.h"

#include <cmath>
#include <cstdint>
#include <set>

#include "sim/schedule/summary.h"

namespace dsp::sim::render {
namespace {

// Whole nanoseconds: stable text, no float noise in diffs. A slice's start and end are rounded
// first and its duration is their difference, so a slice that ends where the next one starts
// never overlaps it by a rounding nanosecond (rounding start and duration separately did).
int64_t Ns(double seconds) { return std::llround(seconds * 1e9); }
double Us(int64_t ns) { return static_cast<double>(ns) / 1e3; }
double Us(double seconds) { return Us(Ns(seconds)); }

}  // namespace

Json ScheduleToTrace(const schedule::Program& program, const schedule::Schedule& schedule,
                     const std::vector<int>& ranks) {
  Json events = Json::array();
  std::set<int> streams;
  for (const schedule::Task& t : program.tasks) streams.insert(t.stream);
  for (int rank : ranks) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", rank},
                      {"args", {{"name", "rank " + std::to_string(rank)}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", rank}, {"args", {{"sort_index", rank}}}});
    for (int stream : streams) {
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", rank}, {"tid", stream},
                        {"args", {{"name", schedule::StreamName(stream)}}}});
      events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", rank}, {"tid", stream},
                        {"args", {{"sort_index", stream}}}});
    }
    const schedule::RankTimeline& tl = schedule.Of(rank);
    for (size_t i = 0; i < program.tasks.size(); ++i) {
      const schedule::Task& task = program.tasks[i];
      const schedule::TaskTime& time = tl.times[i];
      Json args = {{"micro_step", task.micro}};
      if (task.layer >= 0) args["layer"] = task.layer;
      if (task.collective) {
        args["group"] = std::string(GroupKindName(task.group));
        args["bytes"] = task.bytes;
      }
      events.push_back({{"ph", "X"}, {"name", task.name}, {"cat", schedule::TaskCategory(task)}, {"pid", rank},
                        {"tid", task.stream}, {"ts", Us(Ns(time.start))}, {"dur", Us(Ns(time.end) - Ns(time.start))},
                        {"args", std::move(args)}});
    }
    for (const auto& [t, bytes] : tl.memory) {
      events.push_back({{"ph", "C"}, {"name", "memory (GB)"}, {"pid", rank}, {"ts", Us(t)},
                        {"args", {{"in use", std::round(bytes / 1e9 * 1e4) / 1e4}}}});
    }
  }
  Json out = Json::object();
  out["displayTimeUnit"] = "ms";
  out["traceEvents"] = std::move(events);
  out["otherData"] = {{"generator", "ds-plan visualize schedule"},
                      {"step_seconds", schedule.step_seconds}};
  return out;
}

}  // namespace dsp::sim::render
