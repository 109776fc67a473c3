// SPDX-License-Identifier: Apache-2.0
// What DeepCompile's profile-driven ZeRO-3 passes read, from ds-plan's estimate instead of a
// profile: the GPU's memory, the rank's predicted peak with every parameter gathered on demand,
// and the all-gather time over the dense partition group (dp, or dp x sp with Ulysses) on the
// cluster's links, the comm predictor's role.
#pragma once

#include "sim/cost/memory_model.h"
#include "sim/passes/deepcompile_z3.h"
#include "sim/cost/sim_input.h"

namespace dsp::sim::passes {

DeepCompileBudget DeepCompileBudgetFor(const SimInput& in, const MemoryReport& memory);

}  // namespace dsp::sim::passes
