// SPDX-License-Identifier: Apache-2.0
// Renders the result of `ds-plan simulate`: a text report for people (memory per rank with a
// FITS / DOES NOT FIT verdict, step time, breakdown, collectives) and JSON following
// schemas/simulate-report.schema.json for tools. It lives in sim/ rather than core/report/ because
// core must not depend on sim.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json/document.h"
#include "core/model/model_spec.h"
#include "core/validate/layout_summary.h"
#include "sim/cost/cluster.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/sim_input.h"
#include "sim/cost/step_time.h"
#include "sim/cost/workload.h"

namespace dsp::sim {

/// Everything one simulate run produced, plus the context the text report names.
struct SimulateResult {
  std::string config_path;
  std::string model_path;
  std::string model_type;          // ModelSpec::model_type
  std::vector<std::string> model_left_out;  // ModelSpec::left_out: parts of the checkpoint not planned
  const Cluster* cluster = nullptr;
  int64_t world_size = 0;
  int64_t gpus_per_node = 0;
  LayoutSummary layout;            // as validate reports it
  Workload workload;
  ZeroSettings zero;
  EngineSettings engine;
  int64_t samples_per_step = 0;    // distinct samples per optimizer step (micro x accum x dp)
  ParamCounts params;
  MemoryReport memory;
  TimeReport time;
  std::vector<std::string> notes;  // assumptions the estimate made, printed under the header
};

/// Exposed communication per collective kind, every kind present ("all_reduce", ... in
/// CollectiveKind order), summed from the collectives' exposed seconds.
std::vector<std::pair<std::string, double>> ExposedByKind(const TimeReport& time);

/// The human-readable report.
std::string RenderSimulateText(const SimulateResult& result);

/// The machine-readable report (schemas/simulate-report.schema.json, schema_version 2).
Json SimulateToJson(const SimulateResult& result);

/// "none", "selective", "full"; "zero-paper", "deepspeed".

}  // namespace dsp::sim
