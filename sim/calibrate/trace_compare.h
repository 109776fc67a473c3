// SPDX-License-Identifier: Apache-2.0
// Predicted against measured, class by class: the step-time model's GEMM, attention,
// memory-bound, optimizer, host-copy and per-collective seconds beside what a profiler trace of
// the same step measured (sim/calibrate/kineto_trace.h), largest gap first. `ds-plan compare` prints
// it; `calibrate --trace` fits the cluster's efficiencies to close the compute gaps.
#pragma once

#include <string>
#include <vector>

#include "core/json/document.h"
#include "sim/calibrate/kineto_trace.h"
#include "sim/cost/step_time.h"

namespace dsp::sim {

struct CompareRow {
  std::string what;       // "gemm", "attention", "memory-bound", "optimizer", "host copies",
                          // "all_reduce" (one row per collective kind), "GPU idle"
  double predicted = 0;   // seconds per step
  double measured = 0;    // seconds per step (kernel time summed; idle: span - busy)
  double exposed_predicted = -1, exposed_measured = -1;  // collectives only (else -1)
  std::string groups;     // collectives: the trace's process groups, "; "-separated
  double gap() const { return predicted - measured; }
};

struct Comparison {
  std::vector<CompareRow> rows;  // largest |gap| first; ties by name
  double step_predicted = 0, step_measured = 0;  // measured: the GPU span per step
  bool has_prediction = true;  // false: the trace alone, predicted columns empty
  TraceSummary trace;
};

Comparison CompareWithTrace(const TimeReport& predicted, const TraceSummary& measured);
// The trace alone: every row's measured side, sorted by measured time.
Comparison TraceOnly(const TraceSummary& measured);

// Text table (milliseconds) and the JSON of schemas/compare-report.schema.json.
std::string RenderComparison(const Comparison& c, const std::string& plan_label, const std::string& trace_label);
Json ComparisonToJson(const Comparison& c, const std::string& plan_label, const std::string& trace_label);

}  // namespace dsp::sim
