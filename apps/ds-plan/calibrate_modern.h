// SPDX-License-Identifier: Apache-2.0
// `ds-plan calibrate` on a modern-runs table (samples/runs/modern-runs.tsv's columns): the rows of
// one machine (--hardware) become calibration runs predicted as `ds-plan simulate` predicts them
// (sim/session/reference_runs.h), with the rows --hold-out names kept out of the fit.
#pragma once

#include <string>
#include <vector>

#include "core/util/result.h"
#include "sim/calibrate/calibrate.h"
#include "sim/cost/cluster.h"
#include "sim/session/reference_runs.h"

namespace dsp::app {

struct ModernCalibration {
  std::vector<sim::CalibrationRun> runs;  // each predictor owns its model and plan
};

// `groups` (--group), when not empty, keeps only the rows of those groups (the table's group
// column). Errors: a table mixing machines without --hardware, a --hardware, --group or --hold-out
// that matches no row, a model file not found (looked up beside TABLE, under its modern/ folder, then among the
// bundled models by name), a row that does not parse.
Result<ModernCalibration> ModernCalibrationRuns(const std::vector<sim::TsvRecord>& rows, const std::string& table,
                                                const std::string& hardware, const std::vector<std::string>& hold_out,
                                                const std::vector<std::string>& groups = {});

}  // namespace dsp::app
