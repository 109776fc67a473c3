// SPDX-License-Identifier: Apache-2.0
#include "sim/calibrate/trace_calibrate.h"

#include <cmath>
#include <functional>

#include "sim/calibrate/calibrate.h"
#include "sim/cost/step_time.h"

namespace dsp::sim {
namespace {

TimeReport Predict(const SimInput& input, const Cluster& cluster) {
  SimInput in = input;
  in.cluster = &cluster;
  in.link_cache = nullptr;  // links depend on the cluster being varied
  return EstimateStepTime(in);
}

double MeasuredSeconds(const TraceSummary& t, std::initializer_list<TraceClass> classes) {
  double total = 0;
  for (TraceClass c : classes) {
    if (auto it = t.seconds.find(c); it != t.seconds.end()) total += it->second;
  }
  return t.PerStep(total);
}

// The figure in [lo, hi] at which `predicted(cluster)` equals `target` (predicted falls as the
// figure rises); clamped to the range when the target lies outside it.
double Solve(const SimInput& input, Cluster& cluster, const std::string& name, double lo, double hi,
             double target, const std::function<double(const TimeReport&)>& predicted) {
  auto at = [&](double v) {
    SetFigure(cluster, name, v);
    return predicted(Predict(input, cluster));
  };
  if (at(hi) >= target) return hi;
  if (at(lo) <= target) return lo;
  for (int i = 0; i < 50; ++i) {
    const double mid = std::sqrt(lo * hi);
    (at(mid) > target ? lo : hi) = mid;
  }
  const double v = std::sqrt(lo * hi);
  SetFigure(cluster, name, v);
  return v;
}

}  // namespace

Result<TraceCalibration> CalibrateFromTrace(const SimInput& input, const TraceSummary& trace) {
  if (input.cluster == nullptr) return Error{"no cluster to start from"};
  TraceCalibration out;
  out.cluster = *input.cluster;
  out.before = CompareWithTrace(Predict(input, out.cluster), trace);

  struct Target {
    const char* figure;
    double measured;
    std::function<double(const TimeReport&)> predicted;
  };
  const std::vector<Target> targets = {
      {"efficiency.memory", MeasuredSeconds(trace, {TraceClass::kMemoryBound, TraceClass::kOptimizer}),
       [](const TimeReport& r) { return r.memory_kernel_seconds + r.optimizer_seconds; }},
      {"efficiency.matmul", MeasuredSeconds(trace, {TraceClass::kGemm}),
       [](const TimeReport& r) { return r.gemm_seconds; }},
      {"efficiency.attention", MeasuredSeconds(trace, {TraceClass::kAttention}),
       [](const TimeReport& r) { return r.attention_seconds; }},
  };
  const TimeReport start = Predict(input, out.cluster);
  bool any = false;
  for (const Target& t : targets) any = any || (t.measured > 0 && t.predicted(start) > 0);
  if (!any) return Error{"the plan predicts no GEMM, attention or memory-bound time the trace measured"};

  for (int sweep = 0; sweep < 2; ++sweep) {
    for (const Target& t : targets) {
      if (t.measured <= 0 || t.predicted(start) <= 0) continue;
      for (const FitParameter& p : FitParameters()) {
        if (p.name == t.figure) Solve(input, out.cluster, p.name, p.lo, p.hi, t.measured, t.predicted);
      }
    }
  }
  for (const Target& t : targets) {
    if (t.measured > 0 && t.predicted(start) > 0) out.fitted.emplace_back(t.figure, GetFigure(out.cluster, t.figure));
  }
  out.after = CompareWithTrace(Predict(input, out.cluster), trace);
  return out;
}

}  // namespace dsp::sim
