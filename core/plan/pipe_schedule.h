// SPDX-License-Identifier: Apache-2.0
// The instruction stream of DeepSpeed's pipeline training schedule (runtime/pipe/schedule.py
// TrainSchedule, DeepSpeed 0.19.6): for one stage, the steps of one batch of micro-batches, each
// step a short list of sends, receives, loads and passes. Steps are "atomic" as DeepSpeed puts it:
// in every step the stages that exchange tensors form disjoint adjacent pairs, and the two sides
// of a pair issue their transfers in the same order, so blocking transfers never deadlock and a
// barrier may sit between two steps. `ds-plan run --pp N` executes this stream as it is.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace dsp {

enum class PipeOp {
  kLoadMicroBatch,   // first stage: the inputs; last stage: the labels
  kRecvActivation,   // from stage - 1
  kSendActivation,   // to stage + 1
  kRecvGrad,         // from stage + 1: the gradient of this stage's output
  kSendGrad,         // to stage - 1: the gradient of this stage's input
  kForwardPass,
  kBackwardPass,
  kReduceTiedGrads,  // the batch's last step: tied weights, data-parallel gradients, optimizer
  kReduceGrads,
  kOptimizerStep,
};

std::string_view PipeOpName(PipeOp op);  // DeepSpeed's class name, e.g. "RecvActivation"

struct PipeInstruction {
  PipeOp op = PipeOp::kForwardPass;
  int64_t micro_batch = -1;  // the micro-batch the instruction moves or computes; -1 for the last three
  int64_t buffer = -1;       // DeepSpeed's pipe buffer: micro_batch % TrainScheduleBuffers(...)
};

// The most micro-batches whose forward pass has run and backward not yet on `stage_id`: the
// activations it holds at its peak, min(stages - stage_id, micro_batches) (checked against the
// stream in PipeScheduleTest; the memory model uses it).
int64_t TrainScheduleInFlight(int64_t micro_batches, int64_t stages, int64_t stage_id);

// Pipe buffers one stage allocates: the most forward passes it has in flight, at least 2
// (TrainSchedule.num_pipe_buffers).
int64_t TrainScheduleBuffers(int64_t micro_batches, int64_t stages, int64_t stage_id);

// 2 * (micro_batches + stages - 1) steps for `stage_id` of `stages` (TrainSchedule.steps). Callers
// check 1 <= micro_batches, 1 <= stages and 0 <= stage_id < stages.
std::vector<std::vector<PipeInstruction>> TrainSchedule(int64_t micro_batches, int64_t stages, int64_t stage_id);
// The same instructions in one list, without the step boundaries (for the cost model's loops).
std::vector<PipeInstruction> TrainScheduleInstructions(int64_t micro_batches, int64_t stages, int64_t stage_id);

}  // namespace dsp
