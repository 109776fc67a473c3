// SPDX-License-Identifier: Apache-2.0
// The plan snapshot (`ds-plan plan`, read back by `check`) of an evaluation with numbers, so plan
// and explore's `plan PATH` write the same file for the same plan.
#pragma once

#include "sim/plan/snapshot.h"
#include "sim/session/evaluation.h"

namespace dsp::sim {

// `evaluation` must have numbers and outlive the snapshot (it points at the evaluation's plan).
PlanSnapshot SnapshotOf(const Evaluation& evaluation, PlanSnapshotInputs inputs);

}  // namespace dsp::sim
