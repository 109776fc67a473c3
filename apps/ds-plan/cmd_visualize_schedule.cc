// SPDX-License-Identifier: Apache-2.0
// ds-plan visualize schedule CONFIG --model M --cluster C -o OUT.svg|OUT.json: one training step
// simulated event by event over the graph the passes rewrote (sim/schedule), drawn as a timeline
// (SVG) or written as a Perfetto/Chrome trace (JSON), with a text summary on stdout: where the
// time went, exposed communication per kind, the critical path, and the memory peak next to the
// cost model's figures.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/terminal_color.h"
#include "apps/ds-plan/sim_setup.h"
#include "core/util/file_io.h"
#include "core/util/text.h"
#include "sim/graph/builder.h"
#include "sim/cost/memory_model.h"
#include "sim/passes/from_config.h"
#include "sim/render/schedule_svg.h"
#include "sim/render/schedule_trace.h"
#include "sim/schedule/engine_program.h"
#include "sim/schedule/program.h"
#include "sim/schedule/simulator.h"
#include "sim/schedule/summary.h"
#include "sim/cost/step_time.h"

namespace dsp::app {
namespace {

// The most ranks x tasks per rank one schedule simulates or draws (a few hundred MB).
constexpr double kMaxScheduleRankTasks = 4e6;

struct ScheduleArgs {
  SimArgs sim;
  std::string ranks = "0";
  int micro_steps = 0;
  bool full = false;
  std::vector<std::string> slow;  // "RANK:FACTOR"
  std::string output;
  std::string format;  // --format svg|json: overrides the extension; needed for -o -
  bool force = false;
  bool ranks_given = false;  // set after parsing from the --ranks option
};

// Above this a timeline or trace gets a warning: Perfetto's UI and browsers slow down (a Perfetto
// trace of this size takes tens of seconds to load).
constexpr size_t kLargeOutputBytes = size_t{100} * 1000 * 1000;

std::string Ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", seconds * 1e3);
  return buf;
}

// Memory in GB = 1e9 bytes, as simulate and tune print it (HBM sizes are sold in these units).
Result<std::vector<int>> ParseRanks(const std::string& text, int world) {
  std::vector<int> ranks;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      const int r = std::stoi(item, &used);
      if (used != item.size() || r < 0 || r >= world) throw std::out_of_range("rank");
      if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
    } catch (const std::exception&) {
      return Error{"--ranks: '" + item + "' is not a rank of this world (0-" + std::to_string(world - 1) + ")"};
    }
  }
  if (ranks.empty()) return Error{"--ranks: no rank given"};
  return ranks;
}

Result<std::map<int, double>> ParseSlow(const std::vector<std::string>& items) {
  std::map<int, double> slow;
  for (const std::string& item : items) {
    const size_t colon = item.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      size_t a = 0, b = 0;
      const int rank = std::stoi(item.substr(0, colon), &a);
      const double factor = std::stod(item.substr(colon + 1), &b);
      if (a != colon || b != item.size() - colon - 1 || !(factor > 0 && factor <= 1000)) {
        throw std::invalid_argument("bad");
      }
      slow[rank] = factor;
    } catch (const std::exception&) {
      return Error{"--slow-rank " + item + ": expected RANK:FACTOR with 0 < FACTOR <= 1000, e.g. 3:1.5 (rank 3 "
                   "computes 50% slower)"};
    }
  }
  return slow;
}

int RunVisualizeSchedule(const ScheduleArgs& args) {
  const bool to_stdout = args.output == "-";
  if (to_stdout && args.format.empty()) {
    return UsageError("-o -: pass --format svg|json (there is no extension to pick it from)");
  }
  const bool svg = args.format.empty() ? args.output.ends_with(".svg") : args.format == "svg";
  if (args.format.empty() && !svg && !args.output.ends_with(".json")) {
    return UsageError("-o " + args.output + ": the extension picks the format: .svg (timeline) or .json (Perfetto "
                      "trace), or pass --format");
  }
  // Checked before any work so a long simulation never ends in a refusal.
  if (Status out = CheckOutputPath("-o", args.output, args.force); !out.ok()) return UsageError(out.error().message);
  if (args.micro_steps < 0) return UsageError("--micro-steps must be >= 1");
  auto slow = ParseSlow(args.slow);
  if (!slow.ok()) return UsageError(slow.error().message);

  int code = kExitOk;
  std::unique_ptr<SimSetup> s = PrepareSimulation(args.sim, &code);
  if (!s) return code;
  PrintWarnings(s->eval->report);
  // --full simulates every rank, so without --ranks it draws every rank too.
  std::string shown = args.ranks;
  if (args.full && !args.ranks_given) {
    shown.clear();
    for (int64_t r = 0; r < s->eval->world_size; ++r) shown += (r ? "," : "") + std::to_string(r);
  }
  auto ranks = ParseRanks(shown, static_cast<int>(s->eval->world_size));
  if (!ranks.ok()) return UsageError(ranks.error().message);

  // DeepSpeed's engine runs the graph its compiler passes rewrote (hooks, streams, buckets); the
  // other engines run their planners' collectives around the closed form's kernels.
  std::optional<sim::graph::Graph> graph;
  Result<sim::schedule::Program> program = Error{""};
  if (s->eval->input.engine.framework().event_schedule) {
    auto built = sim::graph::BuildModelGraph(s->model);
    if (!built.ok()) return UsageError("--model: " + built.error().message);
    graph = std::move(built).value();
    auto pipeline =
        sim::passes::PipelineForConfig({.model = &s->model, .config = &s->eval->config, .plan = &s->eval->plan});
    if (!pipeline.ok()) return UsageError(pipeline.error().message);
    if (auto r = pipeline->Run(*graph); !r.ok()) {
      std::cerr << args.sim.config << ": error: " << r.error().message << "\n";
      return kExitFindings;
    }
    PrintPassNotes(args.sim.config, pipeline->Notes());
    program = sim::schedule::BuildProgram(*graph, s->eval->input, {.micro_steps = args.micro_steps});
  } else {
    program = sim::schedule::BuildEngineProgram(s->eval->input, {.micro_steps = args.micro_steps});
  }
  if (!program.ok()) {
    std::cerr << args.sim.config << ": error: " << program.error().message << "\n";
    return kExitFindings;
  }
  // Memory grows with ranks x tasks (the simulation holds every simulated rank's tasks, the drawing
  // every drawn rank's): 4,096 ranks of a 70B ZeRO-3 step ran out of memory after a minute.
  const double tasks = static_cast<double>(program->tasks.size());
  const double simulated = args.full ? static_cast<double>(s->eval->world_size) : 1.0;
  const double per_rank_load = std::max(simulated, static_cast<double>(ranks->size())) * tasks;
  if (per_rank_load > kMaxScheduleRankTasks) {
    return UsageError("--full/--ranks: " + std::to_string(static_cast<int64_t>(std::max(simulated, static_cast<double>(ranks->size())))) +
                      " ranks x " + std::to_string(program->tasks.size()) + " tasks is more than the " +
                      std::to_string(static_cast<int64_t>(kMaxScheduleRankTasks)) +
                      " rank-tasks a schedule holds: leave --full off (one rank per symmetry class is exact for a "
                      "plan's symmetric ranks), draw fewer --ranks, or --micro-steps 1");
  }
  std::optional<StatusLine> status;
  status.emplace("simulating " + std::to_string(program->tasks.size()) + " tasks per rank" +
                 (args.full ? " on all " + std::to_string(s->eval->world_size) + " ranks" : ""));
  auto schedule = sim::schedule::Simulate(*program, s->eval->input, {.full = args.full, .slow_ranks = *slow});
  status.reset();
  if (!schedule.ok()) return UsageError(schedule.error().message);
  if (!std::isfinite(schedule->step_seconds)) {
    return UsageError("the simulated step time is not a finite number: the inputs are outside what the "
                      "schedule handles");
  }

  // cpu_checkpointing: the same step without it, for the memory curve it saves against.
  std::optional<sim::schedule::Program> base_program;
  std::optional<sim::schedule::Schedule> base_schedule;
  if (graph && s->eval->input.checkpointing.cpu_checkpointing &&
      s->eval->input.workload.recompute == sim::Recompute::kFull) {
    sim::SimInput without = s->eval->input;
    without.checkpointing.cpu_checkpointing = false;
    without.checkpointing.async_copy = false;
    auto p = sim::schedule::BuildProgram(*graph, without, {.micro_steps = args.micro_steps});
    if (p.ok()) {
      auto b = sim::schedule::Simulate(*p, without, {.full = args.full, .slow_ranks = *slow});
      if (b.ok()) {
        base_program = std::move(p).value();
        base_schedule = std::move(b).value();
      }
    }
  }
  const sim::render::MemoryBaseline baseline{base_schedule ? &*base_schedule : nullptr,
                                             "without cpu_checkpointing"};

  const std::string title = args.sim.config + " - " + s->model.model_type + " on " + std::to_string(s->eval->world_size) +
                            " GPUs (" + s->eval->cluster.name + "), " + std::to_string(program->micro_steps) + " micro-step" +
                            (program->micro_steps == 1 ? "" : "s");
  const std::string contents =
      svg ? sim::render::ScheduleToSvg(*program, *schedule, *ranks, title, baseline, s->eval->cluster.gpu.hbm_bytes)
          : sim::render::ScheduleToTrace(*program, *schedule, *ranks).dump() + "\n";
  if (contents.size() > kLargeOutputBytes) {
    std::cerr << "ds-plan: warning: the " << (svg ? "timeline" : "trace") << " is " << contents.size() / 1000000
              << " MB (" << ranks->size() << " rank" << (ranks->size() == 1 ? "" : "s") << " x " << program->tasks.size()
              << " tasks); Perfetto and browsers get slow on files this large: fewer --ranks or --micro-steps 1 "
                 "make it smaller\n";
  }
  if (Status w = WriteOutput("-o", args.output, contents, args.force); !w.ok()) return UsageError(w.error().message);

  // The summary, next to the cost model's closed-form figures for the same inputs.
  const sim::schedule::ScheduleSummary sum = sim::schedule::Summarize(*program, *schedule, ranks->front());
  const sim::TimeReport& model_time = s->eval->time;
  const sim::MemoryReport& model_memory = s->eval->memory;
  std::ostringstream out;
  const size_t classes = schedule->representative.size();
  out << "schedule: " << args.sim.config << ", " << s->eval->world_size << (s->eval->world_size == 1 ? " rank (" : " ranks (")
      << (args.full ? "all simulated" : std::to_string(classes) + " rank class" + (classes == 1 ? "" : "es") + " simulated")
      << "), " << program->micro_steps << " micro-step" << (program->micro_steps == 1 ? "" : "s") << ", "
      << program->tasks.size() << " tasks per rank\n";
  for (const std::string& note : s->notes) out << "note: " << note << "\n";
  out << "step time          " << Ms(sum.step_seconds);
  if (args.micro_steps == 0) out << "   (cost model: " << Ms(model_time.step_seconds) << ")";
  out << "\nrank " << sum.rank << "             compute " << Ms(sum.compute_seconds) << ", exposed communication "
      << Ms(sum.exposed_communication_seconds) << ", idle " << Ms(sum.idle_seconds) << "\n";
  // Largest first: what to look at first.
  auto ranked = [](const std::map<std::string, double>& parts) {
    std::vector<std::pair<std::string, double>> v(parts.begin(), parts.end());
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string text;
    for (const auto& [name, seconds] : v) text += (text.empty() ? "" : ", ") + name + " " + Ms(seconds);
    return text.empty() ? std::string("none") : text;
  };
  out << "exposed by kind    " << ranked(sum.exposed_by_kind) << "\n";
  out << "communication      " << ranked(sum.communication_by_kind) << "\n";
  out << "memory peak        " << FormatGb(sum.peak_bytes) << " at " << Ms(sum.peak_at)
      << "   (cost model: " << FormatGb(model_memory.peak_bytes) << "; HBM " << FormatGb(s->eval->cluster.gpu.hbm_bytes)
      << (sum.peak_bytes <= s->eval->cluster.gpu.hbm_bytes ? ": fits)" : ": does not fit)") << "\n";
  if (base_schedule) {
    const sim::schedule::ScheduleSummary b = sim::schedule::Summarize(*base_program, *base_schedule, ranks->front());
    out << "without cpu_ckpt   step " << Ms(b.step_seconds) << ", memory peak " << FormatGb(b.peak_bytes) << ": copies "
        << (sum.peak_bytes < b.peak_bytes ? "save " + FormatGb(b.peak_bytes - sum.peak_bytes) : std::string("save nothing"))
        << " at " << Ms(sum.step_seconds - b.step_seconds) << " of step time\n";
  }
  out << "critical path      " << ranked(sum.critical_path_by_category) << "\n";
  // With -o - the picture or trace has standard output to itself; the summary moves to stderr.
  (to_stdout ? std::cerr : std::cout) << out.str();
  if (!to_stdout) std::cerr << "wrote " << args.output << "\n";
  return kExitOk;
}

}  // namespace

Command AddVisualizeScheduleCommand(CLI::App& visualize) {
  auto args = std::make_shared<ScheduleArgs>();
  CLI::App* app = visualize.add_subcommand(
      "schedule", "one training step simulated rank by rank: SVG timeline or Perfetto trace, with a summary");
  args->sim.AddTo(app);
  CLI::Option* ranks = app->add_option("--ranks", args->ranks,
                                       "ranks drawn (comma-separated; default 0, every rank with --full); the summary "
                                       "is the first one's");
  app->add_option("--micro-steps", args->micro_steps, "micro-steps simulated (default: gradient_accumulation_steps)")
      ->check(CLI::PositiveNumber);
  app->add_flag("--full", args->full,
                "simulate and draw every rank instead of one per symmetry class (small worlds)");
  app->add_option("--slow-rank", args->slow, "RANK:FACTOR, a rank whose compute is FACTOR times slower; repeatable");
  app->add_flag("--force", args->force, "replace OUT if it exists");
  app->add_option("-o,--output", args->output,
                  "output file: .svg (timeline) or .json (Perfetto/Chrome trace); - for standard output, with --format")
      ->required();
  app->add_option("--format", args->format, "output format, instead of the extension's")
      ->check(CLI::IsMember({"svg", "json"}));
  return Command{app, [args, ranks] {
    args->ranks_given = ranks->count() > 0;
    return RunVisualizeSchedule(*args);
  }};
}

}  // namespace dsp::app
