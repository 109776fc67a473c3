// SPDX-License-Identifier: Apache-2.0
// ds-plan calibrate RUNS.tsv --cluster C -o C2.json: fits the cluster file's global figures to
// measured step times and prints each run's error before and after. The output is the input
// cluster file with the fitted figures set and a `_calibration` note; an existing file is not
// overwritten without --force.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "apps/ds-plan/data_files.h"
#include "apps/ds-plan/calibrate_modern.h"
#include "apps/ds-plan/calibrate_steps.h"
#include "apps/ds-plan/command.h"
#include "apps/ds-plan/model_input.h"
#include "apps/ds-plan/sim_setup.h"
#include "core/json/document.h"
#include "core/util/file_io.h"
#include "core/util/text.h"
#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/kineto_trace.h"
#include "sim/calibrate/trace_calibrate.h"
#include "sim/calibrate/trace_compare.h"

namespace dsp::app {
namespace {

struct CalibrateArgs {
  std::string runs;
  std::string cluster;
  std::string output;
  std::vector<std::string> fit = {"efficiency.matmul", "efficiency.memory", "inter_node.max_rails",
                                  "inter_node.hop_latency_seconds", "gpu.kernel_overhead_seconds"};
  bool force = false;
  bool no_fit = false;
  std::string format = "text";
  // --trace: a profiler trace of one step of the plan RUNS names (then a DeepSpeed config), with
  // the flags simulate would take for it.
  std::string trace;
  // --steps: a sweep of measured one-GPU steps (scripts/gpu-ground-truth.py's steps.tsv).
  std::string steps;
  // A modern-runs table: the machine whose rows to fit, and the rows kept out of the fit.
  std::string hardware;
  std::vector<std::string> groups;
  std::vector<std::string> hold_out;
  SimArgs sim;
};

std::string RenderCalibration(const sim::CalibrationResult& r) {
  std::ostringstream out;
  out << "run                                   measured   before   error    after   error\n";
  for (const sim::RunFit& f : r.runs) {
    std::string id = f.run_id.size() > 36 ? f.run_id.substr(0, 36) : f.run_id;
    out << id << std::string(38 - id.size(), ' ') << FormatNumber("%8.2f", f.measured) << " "
        << FormatNumber("%8.2f", f.before) << " " << FormatNumber("%+6.1f%%", 100 * (f.before / f.measured - 1)) << " "
        << FormatNumber("%8.2f", f.after) << " " << FormatNumber("%+6.1f%%", 100 * (f.after / f.measured - 1))
        << (f.held_out ? "  held out" : "") << (f.fits_after ? "" : "  (does not fit)") << "\n";
  }
  const size_t fitted_runs = r.runs.size() - static_cast<size_t>(r.held_out_runs);
  out << "mean |error| " << FormatNumber("%.1f", 100 * r.mean_abs_error_before) << "% -> "
      << FormatNumber("%.1f", 100 * r.mean_abs_error_after) << "%, max "
      << FormatNumber("%.1f", 100 * r.max_abs_error_before) << "% -> "
      << FormatNumber("%.1f", 100 * r.max_abs_error_after) << "% over " << fitted_runs << " runs\n";
  if (r.held_out_runs > 0) {
    out << "held out (not fitted): mean |error| " << FormatNumber("%.1f", 100 * r.held_out_mean_before) << "% -> "
        << FormatNumber("%.1f", 100 * r.held_out_mean_after) << "% over " << r.held_out_runs << " runs\n";
  }
  out << "fitted:";
  for (const auto& [name, value] : r.fitted) out << " " << name << "=" << FormatNumber("%.4g", value);
  out << "\n";
  return out.str();
}

// The predictions of the cluster as given, as the Markdown table docs/validation.md holds.
std::string CalibrationMarkdown(const sim::CalibrationResult& r) {
  std::ostringstream out;
  out << "| run | measured s | predicted s | error | Calculon s | Calculon error |\n";
  out << "|---|---:|---:|---:|---:|---:|\n";
  for (const sim::RunFit& f : r.runs) {
    out << "| " << f.run_id << (f.held_out ? " (held out)" : "") << " | " << FormatNumber("%.2f", f.measured) << " | " << FormatNumber("%.2f", f.before)
        << " | " << FormatNumber("%+.1f%%", 100 * (f.before / f.measured - 1)) << " | ";
    if (f.calculon > 0) {
      out << FormatNumber("%.2f", f.calculon) << " | " << FormatNumber("%+.1f%%", 100 * (f.calculon / f.measured - 1));
    } else {
      out << "- | -";
    }
    out << " |\n";
  }
  out << "\nmean |error| " << FormatNumber("%.1f", 100 * r.mean_abs_error_before) << "%, max "
      << FormatNumber("%.1f", 100 * r.max_abs_error_before) << "% over " << r.runs.size() - r.held_out_runs << " runs\n";
  if (r.held_out_runs > 0) {
    out << "held out: mean |error| " << FormatNumber("%.1f", 100 * r.held_out_mean_before) << "% over " << r.held_out_runs
        << " runs\n";
  }
  return out.str();
}

// The source a fitted figure carries: that it was fitted (the file's `_calibration` says to what),
// and what it was before, with the source that figure had. A fitted figure keeps no stale text
// (a datasheet's or a microbenchmark's) that no longer describes its value.
Json::json_pointer SourceOf(const std::string& pointer) {
  const std::string::size_type slash = pointer.rfind('/');
  return Json::json_pointer(pointer.substr(0, slash) + "/_" + pointer.substr(slash + 1) + "_source");
}

std::string FittedSource(const Json& before, const std::string& pointer) {
  const Json::json_pointer value_at(pointer);
  const Json::json_pointer source_at = SourceOf(pointer);
  std::string text = "fitted by ds-plan calibrate (this file's _calibration says to what); before the fit ";
  if (before.contains(value_at) && before.at(value_at).is_number()) {
    text += FormatNumber("%.6g", before.at(value_at).get<double>());
  } else {
    text += "absent (its default)";
  }
  if (before.contains(source_at) && before.at(source_at).is_string()) {
    text += ", whose source was: " + before.at(source_at).get<std::string>();
  }
  return text;
}

// Writes the starting cluster file with `fitted` set, each with its source, and a `_calibration`
// note.
int WriteFitted(const CalibrateArgs& args, const std::vector<std::pair<std::string, double>>& fitted,
                const std::string& note) {
  auto text = ReadFile(args.cluster);
  if (!text.ok()) return UsageError(text.error().message);
  ParsedJson parsed = ParseJsonLenient(args.cluster, std::move(text).value());
  if (!parsed.ok) return UsageError("--cluster: not JSON");
  const Json& before = parsed.doc.root;
  Json out = before;
  for (const auto& [name, value] : fitted) {
    for (const sim::FitParameter& p : sim::FitParameters()) {
      if (p.name != name) continue;
      out[SourceOf(p.pointer)] = FittedSource(before, p.pointer);
      out[Json::json_pointer(p.pointer)] = value;
    }
  }
  out["_calibration"] = note;
  Status written = WriteOutput("-o", args.output, out.dump(2) + "\n", args.force);
  if (!written.ok()) return UsageError(written.error().message);
  if (args.output != "-") std::cerr << "wrote " << args.output << "\n";
  return kExitOk;
}

int RunCalibrateTrace(CalibrateArgs args) {
  if (!args.output.empty()) {
    if (Status out = CheckOutputPath("-o", args.output, args.force); !out.ok()) return UsageError(out.error().message);
  }
  if (args.sim.model_path.empty()) return UsageError("--trace needs --model: the model the traced step ran");
  auto doc = sim::ReadTraceFile(args.trace);
  if (!doc.ok()) return UsageError(doc.error().message);
  auto trace = sim::SummarizeTrace(*doc);
  if (!trace.ok()) return UsageError(args.trace + ": " + trace.error().message);
  args.sim.config = args.runs;
  args.sim.cluster_path = args.cluster;
  // Fit the rate of the attention kernel the trace ran (unless --attention names one).
  if (args.sim.attention == "flash" && !trace->attention_kernel.empty()) args.sim.attention = trace->attention_kernel;
  int code = kExitOk;
  std::unique_ptr<SimSetup> setup = PrepareSimulation(args.sim, &code);
  if (!setup) return code;
  auto fit = sim::CalibrateFromTrace(setup->eval->input, *trace);
  if (!fit.ok()) return UsageError(fit.error().message);
  std::ostream& report = args.output == "-" ? std::cerr : std::cout;
  report << "before (" << args.cluster << ")\n"
         << sim::RenderComparison(fit->before, args.runs, args.trace) << "\nafter\n"
         << sim::RenderComparison(fit->after, args.runs, args.trace) << "\nfitted:";
  for (const auto& [name, value] : fit->fitted) report << " " << name << "=" << FormatNumber("%.4g", value);
  report << std::endl;
  if (args.output.empty()) return kExitOk;
  return WriteFitted(args, fit->fitted,
                     "efficiencies fitted by ds-plan calibrate --trace to " + args.trace + " (" +
                         args.runs + ", " + args.sim.model_path + ")");
}

int RunCalibrateSteps(CalibrateArgs args) {
  if (!args.trace.empty()) return UsageError("--steps and --trace: give one (a sweep's rows name their traces)");
  if (!args.output.empty()) {
    if (Status out = CheckOutputPath("-o", args.output, args.force); !out.ok()) return UsageError(out.error().message);
  }
  args.sim.config = args.runs;
  args.sim.cluster_path = args.cluster;
  StepsFit fit;
  int code = kExitOk;
  if (!FitSteps(args.sim, args.steps, &fit, &code)) return code;
  (args.output == "-" ? std::cerr : std::cout) << fit.report << std::flush;
  if (args.output.empty()) return kExitOk;
  return WriteFitted(args, fit.fitted, "efficiencies and host figures fitted by ds-plan calibrate --steps " +
                                           args.steps + " (" + args.runs + ")");
}

int RunCalibrate(const CalibrateArgs& args) {
  if (!args.steps.empty()) return RunCalibrateSteps(args);
  if (!args.trace.empty()) return RunCalibrateTrace(args);
  auto tsv = ReadFile(args.runs);
  if (!tsv.ok()) return UsageError(tsv.error().message);
  auto cluster = LoadCluster(args.cluster);
  if (!cluster.ok()) return UsageError("--cluster: " + cluster.error().message);
  std::vector<sim::CalibrationRun> runs;
  auto records = sim::ParseTsvRecords(*tsv);
  if (records.ok() && sim::IsModernRunsTable(*records)) {
    auto modern = ModernCalibrationRuns(*records, args.runs, args.hardware, args.hold_out, args.groups);
    if (!modern.ok()) return UsageError(args.runs + ": " + modern.error().message);
    runs = std::move(modern->runs);
  } else {
    if (!args.hardware.empty() || !args.hold_out.empty() || !args.groups.empty()) {
      return UsageError("--hardware, --group and --hold-out read a modern-runs table (samples/runs/modern-runs.tsv's columns)");
    }
    auto measured = sim::ParseMeasuredRuns(*tsv);
    if (!measured.ok()) return UsageError(args.runs + ": " + measured.error().message);
    runs = sim::CalibrationRunsOf(*measured);
  }
  if (!args.output.empty()) {
    if (Status out = CheckOutputPath("-o", args.output, args.force); !out.ok()) return UsageError(out.error().message);
  }
  if (args.no_fit && !args.output.empty()) return UsageError("--no-fit writes no cluster file: drop -o");
  auto result = sim::Calibrate(runs, *cluster, args.no_fit ? std::vector<std::string>{} : args.fit);
  if (!result.ok()) return UsageError(result.error().message);
  // With -o - the fitted cluster has standard output to itself; the report moves to stderr.
  (args.output == "-" ? std::cerr : std::cout) << (args.format == "markdown" ? CalibrationMarkdown(*result) : RenderCalibration(*result));
  if (args.output.empty()) return kExitOk;
  return WriteFitted(args, result->fitted,
                     "fitted by ds-plan calibrate to " + std::to_string(runs.size() - result->held_out_runs) +
                         " runs of " +
                         args.runs + ": mean |error| " + FormatNumber("%.1f", 100 * result->mean_abs_error_before) +
                         "% -> " + FormatNumber("%.1f", 100 * result->mean_abs_error_after) + "%" +
                         (result->held_out_runs > 0
                              ? "; " + std::to_string(result->held_out_runs) + " held-out runs " +
                                    FormatNumber("%.1f", 100 * result->held_out_mean_before) + "% -> " +
                                    FormatNumber("%.1f", 100 * result->held_out_mean_after) + "%"
                              : std::string()));
}

}  // namespace

Command AddCalibrateCommand(CLI::App& root) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* app = root.add_subcommand(
      "calibrate", "fit a cluster file's efficiency and latency figures to measured step times");
  app->add_option("runs", args->runs,
                  "TSV of measured runs (samples/runs/published-runs.tsv); with --trace, the DeepSpeed "
                  "config of the traced step")->required();
  app->add_option("--cluster", args->cluster, "cluster description to start from (a file or a preset name)")
      ->required()
      ->transform(PresetFile("clusters"));
  app->add_option("-o,--output", args->output, "write the fitted cluster file here (- for standard output)");
  app->add_option("--fit", args->fit,
                  "figures to fit, in this order (default: efficiency.matmul efficiency.memory "
                  "inter_node.max_rails inter_node.hop_latency_seconds gpu.kernel_overhead_seconds)");
  app->add_flag("--force", args->force, "replace an existing -o file");
  app->add_option("--hardware", args->hardware,
                  "a modern-runs table (samples/runs/modern-runs.tsv): fit the runs on this machine (its hardware "
                  "column), each predicted as simulate predicts it");
  app->add_option("--group", args->groups,
                  "a modern-runs table: fit only the runs of these groups (its group column, comma-separated)")
      ->delimiter(',');
  app->add_option("--hold-out", args->hold_out,
                  "run ids to keep out of the fit (comma-separated): their error is reported apart, out of sample")
      ->delimiter(',');
  app->add_flag("--no-fit", args->no_fit, "only predict each run with the cluster as given");
  app->add_option("--format", args->format, "text, or markdown (the predictions as docs/validation.md shows them)")
      ->check(CLI::IsMember({"text", "markdown"}));
  app->add_option("--trace", args->trace,
                  "fit efficiency.memory, .matmul and .attention to this PyTorch profiler trace of one "
                  "step of RUNS (a DeepSpeed config), class by class");
  app->add_option("--model", args->sim.model_path, "with --trace: " + std::string(kModelHelp))
      ->transform(PresetFile("models"));
  app->add_option("--steps", args->steps,
                  "fit the efficiencies to every traced step and host.* to the host times of this sweep "
                  "of measured one-GPU steps (scripts/gpu-ground-truth.py's steps.tsv), RUNS being the "
                  "DeepSpeed config they ran");
  // With --trace, simulate's flags describe the traced step.
  args->sim.AddPlanFlags(app);
  return Command{app, [args] { return RunCalibrate(*args); }};
}

}  // namespace dsp::app
