// SPDX-License-Identifier: Apache-2.0
// The values of the graph IR's shape symbols for one simulated plan: the model's dimensions
// (graph::ModelSymbolValues) at the workload's micro-batch and sequence length, the parallel
// sizes (T, P, EP), tp rank 0's heads (N0, G0, QKV0) and the ZeRO partition groups (DP, SDP, EDP).
// The schedule prices the rewritten graph with them; the DeepCompile passes size gathers with them.
#pragma once

#include "sim/graph/symbolic.h"
#include "sim/cost/sim_input.h"

namespace dsp::sim {

graph::SymbolValues PlanSymbolValues(const SimInput& in);

}  // namespace dsp::sim
