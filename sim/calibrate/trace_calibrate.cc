// SPDX-License-Identifier: Apache-2.0
#include "sim/calibrate/trace_calibrate.h"

#include <cmath>
#include <algorithm>
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

// The figure in [lo, hi] at which `predicted(cluster)` equals `target` (predicted falls as the
// figure rises); clamped to the range when the target lies outside it.
double Solve(Cluster& cluster, const std::string& name, double lo, double hi, double target,
             const std::function<double(const Cluster&)>& predicted) {
  auto at = [&](double v) {
    SetFigure(cluster, name, v);
    return predicted(cluster);
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

// What each kernel class measured in a trace and which figure sets its predicted time: the
// memory-bound and optimizer kernels lean on efficiency.memory, GEMMs on .matmul, fused attention
// on .attention. Memory first: small GEMMs lean on it too.
struct ClassTarget {
  const char* figure;
  std::vector<TraceClass> classes;
  double (*predicted)(const TimeReport&);
};
const std::vector<ClassTarget>& ClassTargets() {
  static const std::vector<ClassTarget> kTargets = {
      {"efficiency.memory", {TraceClass::kMemoryBound, TraceClass::kOptimizer},
       [](const TimeReport& r) { return r.memory_kernel_seconds + r.optimizer_seconds; }},
      {"efficiency.matmul", {TraceClass::kGemm}, [](const TimeReport& r) { return r.gemm_seconds; }},
      {"efficiency.attention", {TraceClass::kAttention}, [](const TimeReport& r) { return r.attention_seconds; }},
  };
  return kTargets;
}

double MeasuredSeconds(const TraceSummary& t, const std::vector<TraceClass>& classes) {
  double total = 0;
  for (TraceClass c : classes) {
    if (auto it = t.seconds.find(c); it != t.seconds.end()) total += it->second;
  }
  return t.PerStep(total);
}

// Each class's figure so that its time summed over the traced steps equals what the traces
// measured, summed (a long step weighs more than a short one, as in a training run). Two sweeps.
Result<std::vector<std::pair<std::string, double>>> FitEfficiencies(const std::vector<CalibrationStep>& steps,
                                                                     Cluster& cluster) {
  auto predicted_sum = [&](const ClassTarget& t, const Cluster& c) {
    double sum = 0;
    for (const CalibrationStep& s : steps) {
      if (s.trace != nullptr) sum += t.predicted(Predict(*s.input, c));
    }
    return sum;
  };
  std::vector<double> measured;
  std::vector<bool> fit;
  for (const ClassTarget& t : ClassTargets()) {
    double sum = 0;
    for (const CalibrationStep& s : steps) {
      if (s.trace != nullptr) sum += MeasuredSeconds(*s.trace, t.classes);
    }
    measured.push_back(sum);
    fit.push_back(sum > 0 && predicted_sum(t, cluster) > 0);
  }
  bool any = false;
  for (bool f : fit) any = any || f;
  if (!any) return Error{"the plan predicts no GEMM, attention or memory-bound time the trace measured"};
  const std::vector<ClassTarget>& targets = ClassTargets();
  for (int sweep = 0; sweep < 2; ++sweep) {
    for (size_t i = 0; i < targets.size(); ++i) {
      if (!fit[i]) continue;
      // FlashAttention-2 steps fit its own rate; cuDNN's (and the rest) fit "attention".
      std::string figure = targets[i].figure;
      if (figure == "efficiency.attention" && steps.front().input->engine.attention == AttentionKernel::kFlash2) {
        figure = "efficiency.attention_flash2";
      }
      for (const FitParameter& p : FitParameters()) {
        if (p.name != figure) continue;
        Solve(cluster, p.name, p.lo, p.hi, measured[i],
              [&](const Cluster& c) { return predicted_sum(targets[i], c); });
      }
    }
  }
  std::vector<std::pair<std::string, double>> fitted;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (fit[i]) fitted.emplace_back(targets[i].figure, GetFigure(cluster, targets[i].figure));
  }
  return fitted;
}

// The host's time per kernel: the least measured issue time per predicted launch over the steps.
// A step can only make the host look slower than it is (when the GPU is the bottleneck, the host
// blocks on a full launch queue), so the least is the host's own cost. Backward: steps without
// recompute only (a recompute re-runs the forward's Python inside backward).
void FitHost(const std::vector<CalibrationStep>& steps, Cluster& cluster,
             std::vector<std::pair<std::string, double>>& fitted) {
  double forward = 0, backward = 0;
  auto least = [](double& best, double v) { best = best > 0 ? std::min(best, v) : v; };
  for (const CalibrationStep& s : steps) {
    const TimeReport r = Predict(*s.input, cluster);
    if (s.host_forward_seconds > 0 && r.forward_launches > 0) least(forward, s.host_forward_seconds / r.forward_launches);
    if (s.host_backward_seconds > 0 && r.backward_launches > 0 && r.recompute_launches == 0) {
      least(backward, s.host_backward_seconds / r.backward_launches);
    }
  }
  if (forward > 0) {
    cluster.host.forward_seconds_per_kernel = forward;
    fitted.emplace_back("host.forward_seconds_per_kernel", forward);
  }
  if (backward > 0) {
    cluster.host.backward_seconds_per_kernel = backward;
    fitted.emplace_back("host.backward_seconds_per_kernel", backward);
  }
}

}  // namespace

Result<TraceCalibration> CalibrateFromTrace(const SimInput& input, const TraceSummary& trace) {
  if (input.cluster == nullptr) return Error{"no cluster to start from"};
  TraceCalibration out;
  out.cluster = *input.cluster;
  out.before = CompareWithTrace(Predict(input, out.cluster), trace);
  auto fitted = FitEfficiencies({CalibrationStep{&input, &trace}}, out.cluster);
  if (!fitted.ok()) return fitted.error();
  out.fitted = std::move(fitted).value();
  out.after = CompareWithTrace(Predict(input, out.cluster), trace);
  return out;
}

Result<StepsCalibration> CalibrateFromSteps(const std::vector<CalibrationStep>& steps, const Cluster& start) {
  StepsCalibration out;
  out.cluster = start;
  for (const CalibrationStep& s : steps) out.before.push_back(Predict(*s.input, start));
  // Host first: the efficiencies are fitted to kernel time, which the host's figures do not change.
  FitHost(steps, out.cluster, out.fitted);
  bool traced = false;
  for (const CalibrationStep& s : steps) traced = traced || s.trace != nullptr;
  if (traced) {
    auto fitted = FitEfficiencies(steps, out.cluster);
    if (!fitted.ok()) return fitted.error();
    out.fitted.insert(out.fitted.end(), fitted->begin(), fitted->end());
  }
  if (out.fitted.empty()) return Error{"no step has a trace or a measured host time to fit"};
  for (const CalibrationStep& s : steps) out.after.push_back(Predict(*s.input, out.cluster));
  return out;
}

}  // namespace dsp::sim
