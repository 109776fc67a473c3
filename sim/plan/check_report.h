// SPDX-License-Identifier: Apache-2.0
// Renders the result of `ds-plan check`: which inputs changed since the snapshot (hash and config
// keys), then every difference of the recomputed plan, failures first, as readable text or JSON
// (schemas/plan-check-report.schema.json). Lives in sim/ next to the snapshot it describes.
#pragma once

#include <string>
#include <vector>

#include "core/json/document.h"
#include "sim/plan/diff.h"

namespace dsp::sim {

struct InputChange {
  std::string input;  // "config", "model", "cluster"
  std::string path;
  std::string old_sha256;
  std::string new_sha256;
};

struct PlanCheckResult {
  std::string plan_path;
  double tolerance_percent = 1.0;
  std::vector<InputChange> changed_inputs;  // notes: only the plan decides the verdict
  std::vector<ValueChange> config_changes;  // recorded config content versus the file today
  std::string recorded_version;             // ds-plan version that wrote the snapshot
  std::string current_version;
  // False when the recorded inputs no longer give a plan (the config has errors now, or an input
  // became unusable): there is nothing to compare, and the check fails.
  bool recomputed = true;
  PlanComparison comparison;
  bool ok() const { return recomputed && comparison.failures() == 0; }
};

std::string RenderPlanCheckText(const PlanCheckResult& result);
Json PlanCheckToJson(const PlanCheckResult& result);

/// How the text report prints one value of `field`: bytes, seconds and MFU with units.
std::string FormatPlanValue(const std::string& field, const Json& value);

}  // namespace dsp::sim
