// SPDX-License-Identifier: Apache-2.0
// Gathered ZeRO-3 weights that autograd keeps past their module's release, until the module's
// backward: what DeepSpeed's release cannot free when a weight reaches its matmul through a view.
#pragma once

#include "sim/cost/memory_model.h"
#include "sim/cost/sim_input.h"

namespace dsp::sim {

// Bytes of the rank's gathered routed-expert weights held at the turn from forward to backward,
// given `routed_params`: the stage's routed expert parameters on this rank (after expert and tensor
// parallelism, before ZeRO partitioning). 0 where the mechanism does not apply (see the .cc).
double Zero3SavedExpertWeightBytes(const SimInput& in, double routed_params);

// Adds them to the report: zero3_saved_weights_bytes, and in the activations at the step's peak
// and, on the last stage, at the loss's (both at the turn from forward to backward).
void AddZero3SavedWeights(const SimInput& in, double routed_params, bool last_stage, MemoryReport& r);

}  // namespace dsp::sim
