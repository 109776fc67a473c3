// SPDX-License-Identifier: Apache-2.0
#include "sim/session/snapshot_of.h"

#include "sim/report/error_band.h"

namespace dsp::sim {

PlanSnapshot SnapshotOf(const Evaluation& e, PlanSnapshotInputs inputs) {
  PlanSnapshot snap;
  snap.inputs = std::move(inputs);
  snap.plan = &e.plan;
  snap.layout = e.report.layout;
  snap.world_size = e.world_size;
  snap.gpus_per_node = e.gpus_per_node;
  snap.seq_len = e.input.workload.seq_len;
  snap.micro_batch = e.micro_batch;
  snap.grad_accum = e.grad_accum;
  snap.samples_per_step = e.samples_per_step();
  snap.memory = e.memory;
  snap.time = e.time;
  snap.accuracy = AccuracyToJson(AccuracyFor(e.input.engine.engine, e.cluster.gpu));
  return snap;
}

}  // namespace dsp::sim
