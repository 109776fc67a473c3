// SPDX-License-Identifier: Apache-2.0
#include "sim/calibrate/calibrate.h"

#include <algorithm>
#include <cmath>

namespace dsp::sim {

const std::vector<FitParameter>& FitParameters() {
  static const std::vector<FitParameter> kAll = {
      {"efficiency.matmul", "/efficiency/matmul", 0.3, 1.0},
      {"efficiency.memory", "/efficiency/memory", 0.3, 1.0},
      {"efficiency.attention", "/efficiency/attention", 0.2, 1.0},
      {"efficiency.attention_flash2", "/efficiency/attention_flash2", 0.1, 1.0},
      {"gpu.kernel_overhead_seconds", "/gpu/kernel_overhead_seconds", 0.0, 30e-6},
      {"gpu.compute_clock_ratio", "/gpu/compute_clock_ratio", 0.3, 1.2},
      {"intra_node.hop_latency_seconds", "/intra_node/hop_latency_seconds", 0.0, 10e-6},
      {"inter_node.hop_latency_seconds", "/inter_node/hop_latency_seconds", 0.0, 50e-6},
      {"intra_node.busbw_bytes_per_second", "/intra_node/busbw_bytes_per_second", 50e9, 1000e9},
      {"inter_node.busbw_bytes_per_second", "/inter_node/busbw_bytes_per_second", 5e9, 100e9},
      {"inter_node.max_rails", "/inter_node/max_rails", 1.0, 8.0},
      {"host.forward_seconds_per_kernel", "/host/forward_seconds_per_kernel", 0.0, 200e-6},
      {"host.backward_seconds_per_kernel", "/host/backward_seconds_per_kernel", 0.0, 200e-6},
      {"host.zero3_fetch_seconds", "/host/zero3_fetch_seconds", 0.0, 2e-3},
  };
  return kAll;
}

double GetFigure(const Cluster& c, const std::string& name) {
  if (name == "efficiency.matmul") return c.efficiency.matmul;
  if (name == "efficiency.memory") return c.efficiency.memory;
  if (name == "efficiency.attention") return c.efficiency.attention > 0 ? c.efficiency.attention : c.efficiency.matmul;
  if (name == "efficiency.attention_flash2") {
    return c.efficiency.attention_flash2 > 0 ? c.efficiency.attention_flash2 : GetFigure(c, "efficiency.attention");
  }
  if (name == "gpu.kernel_overhead_seconds") return c.gpu.kernel_overhead_seconds;
  if (name == "gpu.compute_clock_ratio") return c.gpu.compute_clock_ratio;
  if (name == "intra_node.hop_latency_seconds") return c.intra_node.hop_latency_seconds;
  if (name == "inter_node.hop_latency_seconds") return c.inter_node.hop_latency_seconds;
  if (name == "intra_node.busbw_bytes_per_second") return c.intra_node.busbw_bytes_per_second;
  if (name == "inter_node.busbw_bytes_per_second") return c.inter_node.busbw_bytes_per_second;
  if (name == "inter_node.max_rails") return c.inter_node.max_rails > 0 ? c.inter_node.max_rails : c.gpus_per_node;
  if (name == "host.forward_seconds_per_kernel") return c.host.forward_seconds_per_kernel;
  if (name == "host.backward_seconds_per_kernel") return c.host.backward_seconds_per_kernel;
  if (name == "host.zero3_fetch_seconds") return c.host.zero3_fetch_seconds;
  return 0;
}

void SetFigure(Cluster& c, const std::string& name, double value) {
  if (name == "efficiency.matmul") c.efficiency.matmul = value;
  if (name == "efficiency.memory") c.efficiency.memory = value;
  if (name == "efficiency.attention") c.efficiency.attention = value;
  if (name == "efficiency.attention_flash2") c.efficiency.attention_flash2 = value;
  if (name == "gpu.kernel_overhead_seconds") c.gpu.kernel_overhead_seconds = value;
  if (name == "gpu.compute_clock_ratio") c.gpu.compute_clock_ratio = value;
  if (name == "intra_node.hop_latency_seconds") c.intra_node.hop_latency_seconds = value;
  if (name == "inter_node.hop_latency_seconds") c.inter_node.hop_latency_seconds = value;
  if (name == "intra_node.busbw_bytes_per_second") c.intra_node.busbw_bytes_per_second = value;
  if (name == "inter_node.busbw_bytes_per_second") c.inter_node.busbw_bytes_per_second = value;
  if (name == "inter_node.max_rails") c.inter_node.max_rails = value;
  if (name == "host.forward_seconds_per_kernel") c.host.forward_seconds_per_kernel = value;
  if (name == "host.backward_seconds_per_kernel") c.host.backward_seconds_per_kernel = value;
  if (name == "host.zero3_fetch_seconds") c.host.zero3_fetch_seconds = value;
}

std::vector<CalibrationRun> CalibrationRunsOf(const std::vector<MeasuredRun>& runs) {
  std::vector<CalibrationRun> out;
  for (const MeasuredRun& run : runs) {
    out.push_back(CalibrationRun{run.run_id, run.measured_seconds, run.calculon_seconds, false,
                                 [run](const Cluster& c) { return PredictRun(run, c); }});
  }
  return out;
}

// Mean and max over the runs in the fit (not held out); predictions and verdicts for all.
Result<ErrorSummary> Evaluate(const std::vector<CalibrationRun>& runs, const Cluster& cluster) {
  ErrorSummary s;
  int counted = 0;
  for (const CalibrationRun& run : runs) {
    auto p = run.predict(cluster);
    if (!p.ok()) return Error{run.run_id + ": " + p.error().message};
    const double e = std::fabs(p->seconds / run.measured_seconds - 1);
    if (!run.held_out) {
      s.mean += e;
      s.max = std::max(s.max, e);
      ++counted;
    }
    s.predicted.push_back(p->seconds);
    s.fits.push_back(p->memory.fits);
  }
  if (counted > 0) s.mean /= static_cast<double>(counted);
  return s;
}

Result<CalibrationResult> Calibrate(const std::vector<MeasuredRun>& runs, const Cluster& cluster,
                                    const std::vector<std::string>& fit_names) {
  return Calibrate(CalibrationRunsOf(runs), cluster, fit_names);
}

Result<CalibrationResult> Calibrate(const std::vector<CalibrationRun>& runs, const Cluster& cluster,
                                    const std::vector<std::string>& fit_names) {
  std::vector<FitParameter> fit;
  for (const std::string& name : fit_names) {
    auto it = std::find_if(FitParameters().begin(), FitParameters().end(),
                           [&](const FitParameter& p) { return p.name == name; });
    if (it == FitParameters().end()) {
      std::string known;
      for (const FitParameter& p : FitParameters()) known += (known.empty() ? "" : ", ") + p.name;
      return Error{"--fit: unknown figure '" + name + "' (known: " + known + ")"};
    }
    fit.push_back(*it);
  }
  const bool any_fitted = std::any_of(runs.begin(), runs.end(), [](const CalibrationRun& r) { return !r.held_out; });
  if (!any_fitted && !fit.empty()) return Error{"every run is held out: nothing is left to fit"};
  for (const CalibrationRun& r : runs) {
    if (!(r.measured_seconds > 0)) return Error{r.run_id + ": the measured step time must be above 0"};
  }
  auto before = Evaluate(runs, cluster);
  if (!before.ok()) return before.error();

  Cluster c = cluster;
  auto objective = [&](const Cluster& x) {
    auto s = Evaluate(runs, x);
    return s.ok() ? s->mean : 1e9;
  };
  // Coordinate descent: along one figure at a time, a grid of 17 points over its whole range
  // (so a figure that trades off against another is not trapped in the first valley), then a
  // golden-section search between the best grid point's neighbours. Three sweeps settle every
  // case tried.
  const double phi = (std::sqrt(5.0) - 1.0) / 2.0;
  constexpr int kGrid = 16;
  for (int sweep = 0; sweep < 3; ++sweep) {
    for (const FitParameter& p : fit) {
      auto at = [&](double v) {
        Cluster x = c;
        SetFigure(x, p.name, v);
        return objective(x);
      };
      const double width = (p.hi - p.lo) / kGrid;
      int best_i = 0;
      double best_f = at(p.lo);
      for (int i = 1; i <= kGrid; ++i) {
        const double f = at(p.lo + i * width);
        if (f < best_f) {
          best_f = f;
          best_i = i;
        }
      }
      double lo = p.lo + std::max(best_i - 1, 0) * width;
      double hi = p.lo + std::min(best_i + 1, kGrid) * width;
      double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo);
      double fa = at(a), fb = at(b);
      for (int i = 0; i < 30; ++i) {
        if (fa < fb) {
          hi = b;
          b = a;
          fb = fa;
          a = hi - phi * (hi - lo);
          fa = at(a);
        } else {
          lo = a;
          a = b;
          fa = fb;
          b = lo + phi * (hi - lo);
          fb = at(b);
        }
      }
      double best = fa < fb ? a : b;
      double f = std::min(fa, fb);
      if (best_f < f) {
        best = p.lo + best_i * width;
        f = best_f;
      }
      // Keep the old value unless the search found better (flat objectives stay put).
      if (f < objective(c)) SetFigure(c, p.name, best);
    }
  }
  auto after = Evaluate(runs, c);
  if (!after.ok()) return after.error();

  CalibrationResult r;
  r.cluster = c;
  for (const FitParameter& p : fit) r.fitted.emplace_back(p.name, GetFigure(c, p.name));
  for (size_t i = 0; i < runs.size(); ++i) {
    r.runs.push_back(RunFit{runs[i].run_id, runs[i].measured_seconds, runs[i].calculon_seconds,
                            before->predicted[i], after->predicted[i], before->fits[i],
                            after->fits[i], runs[i].held_out});
    if (runs[i].held_out) {
      ++r.held_out_runs;
      r.held_out_mean_before += std::fabs(before->predicted[i] / runs[i].measured_seconds - 1);
      r.held_out_mean_after += std::fabs(after->predicted[i] / runs[i].measured_seconds - 1);
    }
  }
  if (r.held_out_runs > 0) {
    r.held_out_mean_before /= r.held_out_runs;
    r.held_out_mean_after /= r.held_out_runs;
  }
  r.mean_abs_error_before = before->mean;
  r.max_abs_error_before = before->max;
  r.mean_abs_error_after = after->mean;
  r.max_abs_error_after = after->max;
  return r;
}

}  // namespace dsp::sim
