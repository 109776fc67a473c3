// SPDX-License-Identifier: Apache-2.0
// What the memory model reads of a pipeline schedule: the micro-batches of one call, the model
// chunks per rank and the interleaved schedule's round (torch.distributed.pipelining's or
// Megatron-LM's), shared by the activation count and FSDP2's gradient buffers (memory_model.cc).
#pragma once

#include <cstdint>

#include "sim/cost/sim_input.h"

namespace dsp::sim {

// Micro-batches one call of the pipeline schedule runs: --pp-schedule-micro-batches where the
// training loop calls it once per local batch (torchtitan, NeMo AutoModel), else the step's.
int64_t ScheduleCallMicroBatches(const SimInput& in);

// Model chunks per pipeline rank: --virtual-stages under an interleaved schedule, else 1.
int InterleavedChunks(const SimInput& in);

// Micro-batches of one round of the interleaved schedule, the block a chunk runs before the next
// chunk's turn: m / max(1, m / p) under torch (schedules.py microbatches_per_round), p under
// Megatron-LM (microbatch_group_size_per_vp_stage's default).
int64_t InterleavedRound(const SimInput& in, int64_t call, int pp);

// torch.distributed.pipelining's receive buffers on pipeline rank `rank`: each of its stages
// (stage ids rank, rank + pp, ... under an interleaved schedule) holds one `buffer_bytes` tensor per
// micro-batch of the schedule call for the activation it receives (all but the first stage) and one
// for the gradient it receives (all but the last), allocated when the schedule sets the stage up
// and kept for the run (stage.py _prepare_forward_infra / _prepare_backward_infra, each RecvInfo's
// buffer from _make_tensor_from_meta). A received activation is the stage's input, which its first
// layer saves: for the `in_flight` micro-batches a stage holds at the peak those buffers are counted
// with the activations already, so only the rest are added here.
double TorchPipelineRecvBytes(const SimInput& in, int rank, double buffer_bytes, double in_flight);

}  // namespace dsp::sim
