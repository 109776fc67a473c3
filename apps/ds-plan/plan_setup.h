// SPDX-License-Identifier: Apache-2.0
// Shared by `plan` and `check`: the snapshot of a SimArgs run (same PrepareSimulation as
// simulate, so a snapshot never disagrees with what simulate prints), and the SimArgs a snapshot
// records, so check recomputes with exactly the flags plan was given.
#pragma once

#include <optional>

#include "apps/ds-plan/sim_setup.h"
#include "core/json/document.h"
#include "sim/plan/snapshot.h"

namespace dsp::app {

// The snapshot as JSON; on failure prints the errors and returns nullopt with `exit_code` set
// (1 for config errors, 2 for usage and IO), like PrepareSimulation.
std::optional<Json> ComputeSnapshot(const SimArgs& args, int* exit_code);

// The command line a snapshot was computed from.
SimArgs SimArgsFromInputs(const sim::PlanSnapshotInputs& inputs);

}  // namespace dsp::app
