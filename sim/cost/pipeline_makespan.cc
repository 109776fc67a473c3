// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/pipeline_makespan.h"

#include <algorithm>
#include <map>
#include <utility>
#include <stdexcept>

#include "core/plan/pipe_schedule.h"

namespace dsp::sim {
namespace {

bool IsTransfer(PipeOp op) {
  return op == PipeOp::kSendActivation || op == PipeOp::kRecvActivation || op == PipeOp::kSendGrad ||
         op == PipeOp::kRecvGrad;
}

// The instruction the neighbour must be at for `op` to complete, and which neighbour.
PipeOp Counterpart(PipeOp op, int* direction) {
  switch (op) {
    case PipeOp::kSendActivation: *direction = 1; return PipeOp::kRecvActivation;
    case PipeOp::kRecvGrad: *direction = 1; return PipeOp::kSendGrad;
    case PipeOp::kRecvActivation: *direction = -1; return PipeOp::kSendActivation;
    default: *direction = -1; return PipeOp::kRecvGrad;  // kSendGrad
  }
}

// The streams of every stage for (micro_batches, stages). tune times thousands of plans with a
// few dozen such pairs: the streams depend on nothing else, so each thread keeps the recent ones.
const std::vector<std::vector<PipeInstruction>>& Streams(int64_t micro_batches, int64_t stages) {
  thread_local std::map<std::pair<int64_t, int64_t>, std::vector<std::vector<PipeInstruction>>> cache;
  const auto key = std::make_pair(micro_batches, stages);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();
  std::vector<std::vector<PipeInstruction>> streams(static_cast<size_t>(stages));
  for (int64_t s = 0; s < stages; ++s) {
    for (const PipeInstruction& c : TrainScheduleInstructions(micro_batches, stages, s)) {
      if (c.op == PipeOp::kForwardPass || c.op == PipeOp::kBackwardPass || IsTransfer(c.op)) {
        streams[static_cast<size_t>(s)].push_back(c);
      }
    }
  }
  return cache.emplace(key, std::move(streams)).first->second;
}

}  // namespace

double TrainScheduleMakespan(const std::vector<double>& forward, const std::vector<double>& backward,
                             int64_t micro_batches, double transfer_seconds) {
  const int64_t stages = static_cast<int64_t>(forward.size());
  if (stages == 0 || backward.size() != forward.size() || micro_batches < 1) {
    throw std::invalid_argument("TrainScheduleMakespan: one forward and one backward time per stage, and micro-batches");
  }
  const std::vector<std::vector<PipeInstruction>>& streams = Streams(micro_batches, stages);
  std::vector<size_t> next(static_cast<size_t>(stages), 0);
  std::vector<double> clock(static_cast<size_t>(stages), 0.0);
  // Run every stage until it waits on a neighbour that has not reached the matching transfer;
  // sweep until nothing moves. The stream pairs neighbours in one order (PipeScheduleTest), so
  // every stage runs to its end.
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t s = 0; s < streams.size(); ++s) {
      while (next[s] < streams[s].size()) {
        const PipeInstruction& c = streams[s][next[s]];
        if (c.op == PipeOp::kForwardPass) {
          clock[s] += forward[s];
        } else if (c.op == PipeOp::kBackwardPass) {
          clock[s] += backward[s];
        } else if (IsTransfer(c.op)) {
          int direction = 0;
          const PipeOp wanted = Counterpart(c.op, &direction);
          const size_t peer = static_cast<size_t>(static_cast<int64_t>(s) + direction);
          if (next[peer] >= streams[peer].size()) break;
          const PipeInstruction& other = streams[peer][next[peer]];
          if (other.op != wanted || other.micro_batch != c.micro_batch) break;
          clock[s] = clock[peer] = std::max(clock[s], clock[peer]) + transfer_seconds;
          ++next[peer];
        }
        ++next[s];
        moved = true;
      }
    }
  }
  for (size_t s = 0; s < streams.size(); ++s) {
    if (next[s] != streams[s].size()) throw std::logic_error("TrainScheduleMakespan: the stages deadlocked");
  }
  return *std::max_element(clock.begin(), clock.end());
}

}  // namespace dsp::sim
