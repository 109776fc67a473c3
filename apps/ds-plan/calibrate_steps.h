// SPDX-License-Identifier: Apache-2.0
// `ds-plan calibrate CONFIG --steps STEPS.tsv`: a cluster fitted to a sweep of measured one-GPU
// steps (scripts/gpu-ground-truth.py's steps.tsv and its traces). Each row is simulated as
// simulate would with CONFIG, the row's model, micro-batch, sequence, recompute and attention, and
// the plan flags given; sim::CalibrateFromSteps fits the efficiencies to all traces at once and the
// host's per-kernel issue times to the rows' host columns.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "apps/ds-plan/sim_setup.h"

namespace dsp::app {

struct StepsFit {
  std::string report;  // every step's error before and after, then the fitted figures
  std::vector<std::pair<std::string, double>> fitted;
};

// `flags` carries CONFIG (config), --cluster (cluster_path) and the plan flags; the rows set the
// rest. A row's config and trace are found as written (relative to the working directory, as the
// script writes them from the repository root), else beside STEPS.tsv, else in its traces/.
// Returns false after printing the error, with `exit_code` set (1: CONFIG is invalid, 2: usage/IO).
bool FitSteps(const SimArgs& flags, const std::string& steps_path, StepsFit* out, int* exit_code);

}  // namespace dsp::app
