// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/pipeline_schedule_memory.h"

#include <algorithm>

#include "sim/frameworks/framework.h"

namespace dsp::sim {

int64_t ScheduleCallMicroBatches(const SimInput& in) {
  const int64_t accum = std::max<int64_t>(in.workload.grad_accum, 1);
  const int64_t n = in.engine.pipeline_schedule_micro_batches;
  return n > 0 ? std::min(n, accum) : accum;
}

int InterleavedChunks(const SimInput& in) {
  return in.engine.framework().interleaved_pipeline ? std::max(in.engine.virtual_stages, 1) : 1;
}

int64_t InterleavedRound(const SimInput& in, int64_t call, int pp) {
  if (!in.engine.framework().torch_pipelining) return pp;
  return call / std::max<int64_t>(1, call / pp);
}

}  // namespace dsp::sim
