// SPDX-License-Identifier: Apache-2.0
#include "core/plan/pipe_schedule.h"

#include <algorithm>

namespace dsp {
namespace {

bool Even(int64_t v) { return v % 2 == 0; }

// TrainSchedule._step_to_micro_batch: even stages run forward on even steps, odd stages on odd
// steps; the other steps are backward passes, lagging by the stages still ahead.
void StepToMicroBatch(int64_t step, int64_t stages, int64_t stage, int64_t* micro_batch, bool* forward) {
  if (Even(step) && Even(stage)) {
    *micro_batch = step / 2 - stage / 2;
    *forward = true;
  } else if (!Even(step) && !Even(stage)) {
    *micro_batch = (step - 1) / 2 - stage / 2;
    *forward = true;
  } else if (Even(step) && !Even(stage)) {
    *micro_batch = step / 2 - stages + (stage + 1) / 2;
    *forward = false;
  } else {
    *micro_batch = (step - 1) / 2 - stages + 1 + stage / 2;
    *forward = false;
  }
}

}  // namespace

std::string_view PipeOpName(PipeOp op) {
  switch (op) {
    case PipeOp::kLoadMicroBatch: return "LoadMicroBatch";
    case PipeOp::kRecvActivation: return "RecvActivation";
    case PipeOp::kSendActivation: return "SendActivation";
    case PipeOp::kRecvGrad: return "RecvGrad";
    case PipeOp::kSendGrad: return "SendGrad";
    case PipeOp::kForwardPass: return "ForwardPass";
    case PipeOp::kBackwardPass: return "BackwardPass";
    case PipeOp::kReduceTiedGrads: return "ReduceTiedGrads";
    case PipeOp::kReduceGrads: return "ReduceGrads";
    case PipeOp::kOptimizerStep: return "OptimizerStep";
  }
  return "?";
}

int64_t TrainScheduleInFlight(int64_t micro_batches, int64_t stages, int64_t stage_id) {
  return std::max<int64_t>(1, std::min(stages - stage_id, micro_batches));
}

int64_t TrainScheduleBuffers(int64_t micro_batches, int64_t stages, int64_t stage_id) {
  return std::max<int64_t>(2, std::min(stages - stage_id, micro_batches));
}

namespace {

// TrainSchedule.steps: calls emit(step, instruction) for every instruction in order.
template <class Emit>
void Generate(int64_t micro_batches, int64_t stages, int64_t stage_id, Emit&& emit) {
  const int64_t buffers = TrainScheduleBuffers(micro_batches, stages, stage_id);
  auto valid_micro = [&](int64_t m) { return m >= 0 && m < micro_batches; };
  auto valid_stage = [&](int64_t s) { return s >= 0 && s < stages; };
  const int64_t total = 2 * (micro_batches + stages - 1);
  int64_t prev = -1;
  for (int64_t step = 0; step < total; ++step) {
    int64_t micro = 0;
    bool forward = false;
    StepToMicroBatch(step, stages, stage_id, &micro, &forward);
    auto at = [&](PipeOp op, int64_t m) { emit(step, PipeInstruction{op, m, m % buffers}); };
    // Exchange activations and gradients with the neighbours first, as DeepSpeed orders them.
    if (forward) {
      if (valid_micro(prev) && valid_stage(stage_id - 1)) at(PipeOp::kSendGrad, prev);
      if (valid_micro(micro) && valid_stage(stage_id - 1)) at(PipeOp::kRecvActivation, micro);
    } else {
      if (valid_micro(micro) && valid_stage(stage_id + 1)) at(PipeOp::kRecvGrad, micro);
      if (valid_micro(prev) && valid_stage(stage_id + 1)) at(PipeOp::kSendActivation, prev);
    }
    if ((stage_id == 0 || stage_id == stages - 1) && forward && valid_micro(micro)) {
      at(PipeOp::kLoadMicroBatch, micro);
    }
    if (valid_micro(micro)) at(forward ? PipeOp::kForwardPass : PipeOp::kBackwardPass, micro);
    if (step == total - 1) {
      emit(step, PipeInstruction{PipeOp::kReduceTiedGrads, -1, -1});
      emit(step, PipeInstruction{PipeOp::kReduceGrads, -1, -1});
      emit(step, PipeInstruction{PipeOp::kOptimizerStep, -1, -1});
    }
    prev = micro;
  }
}

}  // namespace

std::vector<std::vector<PipeInstruction>> TrainSchedule(int64_t micro_batches, int64_t stages, int64_t stage_id) {
  std::vector<std::vector<PipeInstruction>> steps(static_cast<size_t>(2 * (micro_batches + stages - 1)));
  Generate(micro_batches, stages, stage_id,
           [&](int64_t step, const PipeInstruction& c) { steps[static_cast<size_t>(step)].push_back(c); });
  return steps;
}

std::vector<PipeInstruction> TrainScheduleInstructions(int64_t micro_batches, int64_t stages, int64_t stage_id) {
  std::vector<PipeInstruction> out;
  out.reserve(static_cast<size_t>(6 * micro_batches + 3));
  Generate(micro_batches, stages, stage_id, [&](int64_t, const PipeInstruction& c) { out.push_back(c); });
  return out;
}

}  // namespace dsp
