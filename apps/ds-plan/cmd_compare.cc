// SPDX-License-Identifier: Apache-2.0
// ds-plan compare PLAN_OR_CONFIG TRACE.json[.gz] [simulate's flags]: the step-time model against a
// PyTorch profiler trace of the same step, class by class (GEMM, attention, memory-bound,
// optimizer, host copies, each collective, GPU idle), largest gap first. With the trace alone it
// prints the trace's classes. A plan snapshot (ds-plan plan) brings the flags it was made with.
#include <iostream>
#include <memory>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/plan_setup.h"
#include "apps/ds-plan/sim_setup.h"
#include "core/util/file_io.h"
#include "sim/calibrate/kineto_trace.h"
#include "sim/calibrate/trace_compare.h"
#include "sim/plan/snapshot.h"

namespace dsp::app {
namespace {

struct CompareArgs {
  SimArgs sim;
  std::string trace;
  std::string format = "text";
};

// A plan snapshot (schema_version and inputs) rather than a DeepSpeed config: its recorded inputs.
std::optional<sim::PlanSnapshotInputs> SnapshotInputs(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return std::nullopt;
  Json doc = Json::parse(*text, nullptr, false);
  if (!doc.is_object() || !doc.contains("schema_version") || !doc.contains("inputs")) return std::nullopt;
  auto inputs = sim::ReadSnapshotInputs(doc);
  if (!inputs.ok()) return std::nullopt;
  return *inputs;
}

int RunCompare(CompareArgs args) {
  // One positional: the trace alone.
  const bool trace_only = args.trace.empty();
  const std::string trace_path = trace_only ? args.sim.config : args.trace;
  if (trace_path.empty()) return UsageError("compare needs a trace: ds-plan compare [PLAN_OR_CONFIG] TRACE.json");
  auto doc = sim::ReadTraceFile(trace_path);
  if (!doc.ok()) return UsageError(doc.error().message);
  auto summary = sim::SummarizeTrace(*doc);
  if (!summary.ok()) return UsageError(trace_path + ": " + summary.error().message);

  sim::Comparison comparison;
  std::string plan_label;
  std::unique_ptr<SimSetup> setup;
  if (trace_only) {
    comparison = sim::TraceOnly(*summary);
  } else {
    SimArgs sim_args = args.sim;
    if (auto inputs = SnapshotInputs(args.sim.config)) {
      sim_args = SimArgsFromInputs(*inputs);
    } else if (sim_args.model_path.empty() || sim_args.cluster_path.empty()) {
      return UsageError("--model and --cluster are required with a DeepSpeed config (a plan snapshot records them)");
    }
    plan_label = args.sim.config;
    // Priced as the attention kernel the trace ran unless --attention says otherwise.
    if (sim_args.attention == "flash" && !summary->attention_kernel.empty()) sim_args.attention = summary->attention_kernel;
    int code = kExitOk;
    setup = PrepareSimulation(sim_args, &code);
    if (!setup) return code;
    comparison = sim::CompareWithTrace(setup->eval->time, *summary);
  }
  if (args.format == "json") {
    std::cout << sim::ComparisonToJson(comparison, plan_label, trace_path).dump(2) << "\n";
  } else {
    std::cout << sim::RenderComparison(comparison, plan_label, trace_path);
  }
  return kExitOk;
}

}  // namespace

Command AddCompareCommand(CLI::App& root) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* app = root.add_subcommand(
      "compare", "predicted against a PyTorch profiler trace, per kernel class (GEMM, attention, "
                 "memory-bound, optimizer, collectives), largest gap first");
  args->sim.AddTo(app);
  // The config is optional (a trace alone is summarised) and may be a plan snapshot, which names
  // its model and cluster.
  app->get_option("config")->required(false)->description(
      "DeepSpeed config or plan snapshot (ds-plan plan); omit it to summarise the trace alone");
  app->get_option("--model")->required(false);
  app->get_option("--cluster")->required(false);
  app->add_option("trace", args->trace,
                  "PyTorch profiler trace (torch.profiler export_chrome_trace; .json or .json.gz)");
  app->add_option("--format", args->format, "output format")->check(CLI::IsMember({"text", "json"}));
  return Command{app, [args] { return RunCompare(*args); }};
}

}  // namespace dsp::app
