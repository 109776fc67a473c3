// SPDX-License-Identifier: Apache-2.0
#include "sim/calibrate/trace_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <utility>

namespace dsp::sim {
namespace {

std::string Ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", seconds * 1e3);
  return buf;
}

std::string Pct(double num, double den) {
  if (den <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f %%", 100 * num / den);
  return buf;
}

CompareRow Row(std::string what, double predicted, double measured) {
  CompareRow r;
  r.what = std::move(what);
  r.predicted = predicted;
  r.measured = measured;
  return r;
}

std::string PadCell(const std::string& s, size_t width, bool right) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// The measured rows every comparison has, and one per collective kind the trace shows.
Comparison MeasuredRows(const TraceSummary& t) {
  Comparison c;
  c.trace = t;
  auto seconds = [&](TraceClass k) {
    auto it = t.seconds.find(k);
    return t.PerStep(it == t.seconds.end() ? 0.0 : it->second);
  };
  for (TraceClass k : {TraceClass::kGemm, TraceClass::kAttention, TraceClass::kMemoryBound,
                       TraceClass::kOptimizer, TraceClass::kHostCopy}) {
    c.rows.push_back(Row(TraceClassName(k), 0, seconds(k)));
  }
  std::map<std::string, CompareRow> comm;
  for (const TraceCollective& tc : t.collectives) {
    CompareRow& r = comm[tc.kind];
    r.what = tc.kind;
    r.measured += t.PerStep(tc.seconds);
    r.exposed_measured = std::max(r.exposed_measured, 0.0) + t.PerStep(tc.exposed_seconds);
    r.exposed_predicted = 0;
    if (!tc.group.empty() && r.groups.find(tc.group) == std::string::npos) {
      r.groups += (r.groups.empty() ? "" : "; ") + tc.group;
    }
  }
  for (auto& [kind, r] : comm) c.rows.push_back(r);
  c.rows.push_back(Row("GPU idle", 0, t.PerStep(t.idle_seconds())));
  c.step_measured = t.PerStep(t.span_seconds);
  return c;
}

void SortRows(Comparison& c) {
  std::stable_sort(c.rows.begin(), c.rows.end(), [&](const CompareRow& a, const CompareRow& b) {
    const double ka = c.has_prediction ? std::fabs(a.gap()) : a.measured;
    const double kb = c.has_prediction ? std::fabs(b.gap()) : b.measured;
    if (ka != kb) return ka > kb;
    return a.what < b.what;
  });
}

}  // namespace

Comparison TraceOnly(const TraceSummary& measured) {
  Comparison c = MeasuredRows(measured);
  c.has_prediction = false;
  SortRows(c);
  return c;
}

Comparison CompareWithTrace(const TimeReport& p, const TraceSummary& measured) {
  Comparison c = MeasuredRows(measured);
  std::map<std::string, std::pair<double, double>> comm;  // kind: seconds, exposed
  for (const CollectiveCall& call : p.collectives) {
    auto& [seconds, exposed] = comm[std::string(CollectiveKindName(call.kind))];
    seconds += call.seconds;
    exposed += call.exposed_seconds;
  }
  for (CompareRow& r : c.rows) {
    if (r.what == "gemm") r.predicted = p.gemm_seconds;
    if (r.what == "attention") r.predicted = p.attention_seconds;
    if (r.what == "memory-bound") r.predicted = p.memory_kernel_seconds;
    if (r.what == "optimizer") r.predicted = p.optimizer_seconds;
    if (r.what == "host copies") r.predicted = p.offload_seconds + p.checkpoint_offload_seconds;
    if (auto it = comm.find(r.what); it != comm.end()) {
      r.predicted = it->second.first;
      r.exposed_predicted = it->second.second;
      comm.erase(it);
    }
  }
  for (const auto& [kind, v] : comm) {  // predicted collectives the trace does not have
    CompareRow r = Row(kind, v.first, 0);
    r.exposed_predicted = v.second;
    r.exposed_measured = 0;
    c.rows.push_back(r);
  }
  // What the model says the GPU waits for: the host issuing kernels (in compute_seconds), the
  // pipeline bubble and stage imbalance, i.e. the step less every kernel it times and the exposed
  // communication.
  double busy = p.compute_seconds - p.host_wait_seconds + p.optimizer_seconds + p.exposed_communication_seconds +
                p.offload_seconds + p.checkpoint_offload_seconds;
  for (CompareRow& r : c.rows) {
    if (r.what == "GPU idle") r.predicted = std::max(0.0, p.step_seconds - busy);
  }
  c.step_predicted = p.step_seconds;
  SortRows(c);
  return c;
}

std::string RenderComparison(const Comparison& c, const std::string& plan_label, const std::string& trace_label) {
  std::ostringstream out;
  const TraceSummary& t = c.trace;
  out << "compare " << (c.has_prediction ? plan_label + " with " : std::string()) << trace_label << "\n";
  out << "  trace    " << (t.gpu.empty() ? "GPU not named" : t.gpu) << ", " << t.kernels << " GPU events, "
      << t.steps << (t.steps == 1 ? " step" : " steps (per-step figures below)") << "\n\n";
  if (c.has_prediction) {
    out << PadCell("class", 16, false) << PadCell("predicted ms", 14, true) << PadCell("measured ms", 14, true)
        << PadCell("gap ms", 11, true) << PadCell("gap", 11, true) << "\n";
  } else {
    out << PadCell("class", 16, false) << PadCell("measured ms", 14, true) << PadCell("share", 10, true) << "\n";
  }
  auto line = [&](const CompareRow& r) {
    if (c.has_prediction) {
      out << PadCell(r.what, 16, false) << PadCell(Ms(r.predicted), 14, true) << PadCell(Ms(r.measured), 14, true)
          << PadCell((r.gap() >= 0 ? "+" : "") + Ms(r.gap()), 11, true) << PadCell(Pct(r.gap(), r.measured), 11, true);
    } else {
      out << PadCell(r.what, 16, false) << PadCell(Ms(r.measured), 14, true)
          << PadCell(Pct(r.measured, c.step_measured).substr(1), 10, true);
    }
    if (r.exposed_measured >= 0) {
      out << "  exposed " << (c.has_prediction ? Ms(r.exposed_predicted) + " / " : std::string())
          << Ms(r.exposed_measured) << " ms";
      if (!r.groups.empty()) out << ", groups " << r.groups;
    }
    out << "\n";
  };
  for (const CompareRow& r : c.rows) {
    // Nothing to show: both sides under 5 us (printed as 0.00 ms).
    if (r.predicted < 5e-6 && r.measured < 5e-6) continue;
    line(r);
  }
  const CompareRow step = Row("step", c.step_predicted, c.step_measured);
  if (c.has_prediction) {
    line(step);
  } else {
    out << PadCell("step", 16, false) << PadCell(Ms(step.measured), 14, true) << "\n";
  }
  out << "\nmeasured: kernel time summed per class (streams that overlap count twice); GPU idle is\n"
         "the span with no GPU event (host launch gaps, synchronisation); step is the GPU span\n";
  return out.str();
}

Json ComparisonToJson(const Comparison& c, const std::string& plan_label, const std::string& trace_label) {
  Json j;
  j["schema_version"] = 1;
  j["plan"] = c.has_prediction ? Json(plan_label) : Json(nullptr);
  j["trace"] = trace_label;
  j["gpu"] = c.trace.gpu;
  j["steps"] = c.trace.steps;
  j["gpu_events"] = c.trace.kernels;
  Json rows = Json::array();
  for (const CompareRow& r : c.rows) {
    Json row;
    row["class"] = r.what;
    row["predicted_seconds"] = c.has_prediction ? Json(r.predicted) : Json(nullptr);
    row["measured_seconds"] = r.measured;
    if (r.exposed_measured >= 0) {
      row["exposed_predicted_seconds"] = c.has_prediction ? Json(r.exposed_predicted) : Json(nullptr);
      row["exposed_measured_seconds"] = r.exposed_measured;
      row["groups"] = r.groups;
    }
    rows.push_back(row);
  }
  j["classes"] = rows;
  j["step"] = {{"predicted_seconds", c.has_prediction ? Json(c.step_predicted) : Json(nullptr)},
               {"measured_seconds", c.step_measured}};
  return j;
}

}  // namespace dsp::sim
