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

double TorchPipelineRecvBytes(const SimInput& in, int rank, double buffer_bytes, double in_flight) {
  const int pp = std::max(in.plan->sizes.pp, 1);
  if (pp <= 1 || !in.engine.framework().torch_pipelining) return 0;
  const int v = InterleavedChunks(in);
  const int64_t last = static_cast<int64_t>(v) * pp - 1;
  const double call = static_cast<double>(ScheduleCallMicroBatches(in));
  const double saved = std::clamp(in_flight, 0.0, call);  // activation buffers the layers hold
  double buffers = 0;
  for (int chunk = 0; chunk < v; ++chunk) {
    const int64_t stage = rank + static_cast<int64_t>(chunk) * pp;
    if (stage != 0) buffers += call - saved;
    if (stage != last) buffers += call;
  }
  return buffers * buffer_bytes;
}

}  // namespace dsp::sim
