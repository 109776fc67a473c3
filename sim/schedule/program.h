// SPDX-License-Identifier: Apache-2.0
// One training step as the list of tasks every rank issues, in issue order: forward and backward
// of every graph node for each micro-step, the collectives the passes inserted (both directions),
// ZeRO-3 gathers with DeepSpeed's prefetch window, gradient reductions in buckets, the optimizer
// and the ZeRO-1/2 parameter all-gather. Every rank of a plan runs the same program (pp = 1);
// only how long a collective takes depends on where a rank's groups sit, which the simulator
// decides (sim/schedule/simulator.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/layout/groups.h"
#include "core/util/result.h"
#include "sim/comm/collectives.h"
#include "sim/graph/graph.h"
#include "sim/cost/sim_input.h"

namespace dsp::sim::schedule {

enum class Phase { kForward, kBackward, kOptimizer };

// Stream 0 is the compute stream; every process-group kind has its own communication stream
// (NCCL serialises the calls of one communicator), numbered by StreamOf, and gradient reductions
// have their own (ReduceStreamOf): DeepSpeed reduces on a side stream of its own
// (stage3's reduce_and_partition_stream, stage 1/2's reduction stream), so a bucket waiting for
// its gradients never holds up the next parameter gather.
inline constexpr int kComputeStream = 0;
inline constexpr int kGroupKinds = 7;
inline int StreamOf(GroupKind kind) { return 1 + static_cast<int>(kind); }
inline int ReduceStreamOf(GroupKind kind) { return 1 + kGroupKinds + static_cast<int>(kind); }
// Host copies of cpu_checkpointing: PR #8282's offload engine copies on a side stream (one copy
// engine each way); the blocking paths before it copy on the compute stream.
inline constexpr int kDeviceToHostStream = 1 + 2 * kGroupKinds;
inline constexpr int kHostToDeviceStream = 2 + 2 * kGroupKinds;
std::string StreamName(int stream);  // "compute", "comm tp", "comm dp", "reduce dp", "copy d2h", ...

struct Task {
  std::string name = {};  // "fwd layers_0_self_attn_q_proj", "bwd a2a_q_0", "reduce_scatter dp bucket 3"
  Phase phase = Phase::kForward;
  int micro = 0;      // micro-step, 0-based (the optimizer tasks carry the last one)
  int layer = -1;     // decoder layer, -1 outside the layers
  int stream = kComputeStream;
  bool collective = false;
  bool host_copy = false;  // a PCIe copy of checkpointed activations (cpu_checkpointing)
  // Compute or host copy: seconds on one rank. Collective: what it moves; the simulator prices it
  // on the issuing rank's group, plus compute_seconds of kernels around it (ZeRO++ quantization).
  double compute_seconds = 0;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  GroupKind group = GroupKind::kTp;
  // A collective on groups DeepSpeed carves out of the global ranks (hpZ, MiCS, qgZ): blocks of
  // `block` consecutive ranks, or with `strided` the ranks at one position of every block
  // (group_links.h DescribeRankBlocks). 0: the plan's `group` tables.
  int64_t block = 0;
  bool strided = false;
  double bytes = 0;
  std::vector<int> deps = {};  // earlier tasks that must finish first
  // Memory effects: added when the task starts / when it ends (negative frees).
  double alloc_at_start = 0;
  double alloc_at_end = 0;
};

struct Program {
  std::vector<Task> tasks;
  double static_bytes = 0;      // parameters, gradients, optimizer states: resident all step
  double buffer_bytes = 0;      // fixed communication buffers (reduce buckets)
  int micro_steps = 1;
};

struct ProgramOptions {
  int micro_steps = 0;  // 0 = the workload's gradient accumulation steps
};

// Builds the program of `graph` (already rewritten by the passes the config implies) for the plan
// and workload of `input`. Errors: pp > 1 (the pipeline schedule is not simulated), a shape that
// does not evaluate, a collective on a group kind the plan lacks.
Result<Program> BuildProgram(const graph::Graph& graph, const SimInput& input,
                             const ProgramOptions& options = {});

}  // namespace dsp::sim::schedule
