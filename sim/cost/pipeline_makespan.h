// SPDX-License-Identifier: Apache-2.0
// How long one batch takes through DeepSpeed's pipeline engine: every stage executes the
// instruction stream of runtime/pipe/schedule.py TrainSchedule (core/plan/pipe_schedule.h) in
// order, a forward or backward pass taking that stage's seconds per micro-batch, and every
// activation or gradient transfer a rendezvous of the two neighbours (NCCL send/recv hold both
// streams until the peer arrives; DeepSpeed 0.19.6 runtime/pipe/p2p.py sends synchronously).
//
// With equal stages this is (m + p - 1) x (F + B), the textbook 1F1B time. With unequal ones it is
// what DeepSpeed's order of instructions gives: usually (m - 1) x max + sum when the last stage is
// the slowest and less when an earlier one is, but neither in general (PipelineMakespanTest).
#pragma once

#include <cstdint>
#include <vector>

namespace dsp::sim {

// forward[s], backward[s]: seconds per micro-batch on stage s (equal sizes, at least one stage);
// transfer_seconds: each transfer's duration. Returns seconds from the first instruction to the
// last on any stage.
double TrainScheduleMakespan(const std::vector<double>& forward, const std::vector<double>& backward,
                             int64_t micro_batches, double transfer_seconds = 0);

}  // namespace dsp::sim
