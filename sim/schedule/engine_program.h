// SPDX-License-Identifier: Apache-2.0
// One training step of an engine the graph passes do not model (megatron-lm, fsdp2) as a task
// program for the event simulator: the closed form's kernels of every layer (sim/cost/flops.h,
// FP8 casts included) forward and, reversed, backward, and the collectives its planners issue
// (sim/comm, PlanCollectives) placed where the engine runs them. Every task the closed form
// prices appears here at the same price; what the simulation adds is which of them wait for which.
//
// Placement, by the planner's CommSchedule:
// - critical (TP, CP all-to-all, EP dispatch): on the layer's compute chain, forward and backward
//   in proportion to the passes (a full recompute runs the forward twice);
// - context parallelism's KV ring (cp_kv_p2p_*): inside its layer, beside the attention it feeds
//   (TransformerEngine's AttnFuncWithCPAndKVP2P sends the next chunk while the current one computes);
// - forward-overlapped gathers (FSDP2's per-block all-gather): one layer ahead, the layer waits;
// - backward gathers one layer ahead of the layer's backward; reductions after the layer's backward,
//   on their own stream (FSDP2's reduce-scatter stream, Megatron's bucket hooks);
// - once per step behind the last backward (Megatron's distributed optimizer, DDP): reductions
//   after the last micro-step's layers, parameter all-gathers ahead of the first micro-step's
//   layers (overlap_param_gather runs them under the next step's forward);
// - step-exposed ones after the last backward, before the optimizer.
// A purpose's calls are spread evenly over the layers they belong to.
#pragma once

#include "core/util/result.h"
#include "sim/cost/sim_input.h"
#include "sim/schedule/program.h"

namespace dsp::sim::schedule {

// Errors: pp > 1 (the pipeline schedule is not simulated), a plan or model missing.
Result<Program> BuildEngineProgram(const SimInput& input, const ProgramOptions& options = {});

}  // namespace dsp::sim::schedule
