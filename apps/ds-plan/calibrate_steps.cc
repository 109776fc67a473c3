// SPDX-License-Identifier: Apache-2.0
#include "apps/ds-plan/calibrate_steps.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include "apps/ds-plan/command.h"
#include "core/util/file_io.h"
#include "core/util/text.h"
#include "sim/calibrate/kineto_trace.h"
#include "sim/calibrate/step_sweep.h"
#include "sim/calibrate/trace_calibrate.h"

namespace dsp::app {
namespace {

namespace fs = std::filesystem;

// `name` as written, else beside the sweep file, else in its traces/ folder.
std::string Locate(const std::string& name, const std::string& steps_path) {
  std::error_code ec;
  if (fs::is_regular_file(name, ec)) return name;
  const fs::path dir = fs::path(steps_path).parent_path();
  for (const fs::path& candidate : {dir / name, dir / "traces" / name}) {
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  return name;  // the read fails and names it
}

std::string RenderSweepFit(const std::vector<sim::SweepStep>& steps, const sim::StepsCalibration& fit) {
  std::ostringstream out;
  out << "step                                        measured ms   before ms    error    after ms    error\n";
  double before = 0, after = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const double measured = steps[i].step_ms;
    const double b = fit.before[i].step_seconds * 1e3, a = fit.after[i].step_seconds * 1e3;
    before += std::fabs(b / measured - 1);
    after += std::fabs(a / measured - 1);
    std::string label = steps[i].label.substr(0, 42);
    out << label << std::string(44 - label.size(), ' ') << FormatNumber("%11.1f", measured) << FormatNumber("%12.1f", b)
        << FormatNumber("%+8.1f%%", 100 * (b / measured - 1)) << FormatNumber("%12.1f", a)
        << FormatNumber("%+8.1f%%", 100 * (a / measured - 1)) << (steps[i].trace.empty() ? "" : "  traced") << "\n";
  }
  const double n = static_cast<double>(steps.size());
  out << "mean |error| " << FormatNumber("%.1f", 100 * before / n) << "% -> " << FormatNumber("%.1f", 100 * after / n)
      << "% over " << steps.size() << " steps\n";
  return out.str();
}

}  // namespace

bool FitSteps(const SimArgs& flags, const std::string& steps_path, StepsFit* out, int* exit_code) {
  auto fail = [&](const std::string& message) {
    *exit_code = UsageError(message);
    return false;
  };
  auto text = ReadFile(steps_path);
  if (!text.ok()) return fail(text.error().message);
  auto steps = sim::ParseStepSweep(*text);
  if (!steps.ok()) return fail(steps_path + ": " + steps.error().message);
  if (steps->empty()) return fail(steps_path + ": no step with status ok");

  std::vector<std::unique_ptr<SimSetup>> setups;
  std::vector<std::unique_ptr<sim::TraceSummary>> traces;
  std::vector<sim::CalibrationStep> calibration;
  for (const sim::SweepStep& s : *steps) {
    SimArgs row = flags;
    row.model_path = Locate(s.config, steps_path);
    row.seq_len = s.seq_len;
    row.recompute = s.full_recompute ? "full" : "none";
    // scripts/gpu-ground-truth.py runs sdpa on torch >= 2.11, where SDPA takes cuDNN's kernels on
    // sm90 and sm100 (its traces name cudnn_generated_fort_native_sdpa_*): the rate calibrate fits
    // is the cluster's "attention", whatever --engine's own default kernel is.
    row.attention = s.flash_attention ? "cudnn" : "materialized";
    row.sets.push_back("train_micro_batch_size_per_gpu=" + std::to_string(s.micro_batch));
    std::unique_ptr<SimSetup> setup = PrepareSimulation(row, exit_code);
    if (!setup) return false;
    if (!setup->eval->has_numbers()) return fail(s.label + ": " + setup->eval->message);
    sim::CalibrationStep step{&setup->eval->input, nullptr, s.host_forward_ms / 1e3, s.host_backward_ms / 1e3};
    if (!s.trace.empty()) {
      const std::string path = Locate(s.trace, steps_path);
      auto doc = sim::ReadTraceFile(path);
      if (!doc.ok()) return fail(doc.error().message);
      auto summary = sim::SummarizeTrace(*doc);
      if (!summary.ok()) return fail(path + ": " + summary.error().message);
      traces.push_back(std::make_unique<sim::TraceSummary>(std::move(summary).value()));
      step.trace = traces.back().get();
    }
    calibration.push_back(step);
    setups.push_back(std::move(setup));
  }
  auto fit = sim::CalibrateFromSteps(calibration, *setups.front()->eval->input.cluster);
  if (!fit.ok()) return fail(steps_path + ": " + fit.error().message);
  out->report = RenderSweepFit(*steps, *fit) + "fitted:";
  for (const auto& [name, value] : fit->fitted) out->report += " " + name + "=" + FormatNumber("%.4g", value);
  out->report += "\n";
  out->fitted = fit->fitted;
  return true;
}

}  // namespace dsp::app
