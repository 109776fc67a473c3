// SPDX-License-Identifier: Apache-2.0
// Step time: FLOPs per operator, compute time from peak x efficiency with a roofline for
// memory-bound operators, every collective the plan implies (costed on its real group, intra- or
// inter-node from the rank lists), and DeepSpeed's overlap of gradient reduction and ZeRO-3
// prefetch. Formulas, sources and limits: docs/cost-model.md "Step time".
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/layout/groups.h"
#include "sim/comm/collectives.h"
#include "sim/cost/flops.h"  // CollectiveKind, CollectiveKindName: one source of truth per collective
#include "sim/cost/sim_input.h"

namespace dsp::sim {

struct CollectiveCall {
  std::string_view purpose;  // a string literal (comm_plan.cc names them)  // "tp_all_reduce", "ulysses_all_to_all", "ep_dispatch", "ep_combine",
                        // "fold_restore_all_gather", "dp_grad_reduce", "edp_grad_reduce",
                        // "zero3_all_gather_fwd", "zero3_all_gather_bwd", "zero_param_all_gather";
                        // also "tp_sp_all_gather", "tp_sp_reduce_scatter" (Megatron-style
                        // sequence parallelism), "fold_restore_backward_all_reduce" and
                        // "fold_tp_grad_all_reduce" (AutoEP folding, auto_ep_folding.py)
  CollectiveKind kind = CollectiveKind::kAllReduce;
  GroupKind group = GroupKind::kDp;
  int group_size = 1;
  double bytes_per_call = 0;  // nccl-tests "S": the full buffer size
  double calls_per_step = 0;
  bool inter_node = false;     // decided from the real rank lists
  double seconds = 0;          // total per step (all calls)
  double exposed_seconds = 0;  // not hidden behind compute
};

struct TimeReport {
  double compute_seconds = 0;
  std::map<std::string_view, double> exposed_seconds_by_purpose;  // keys: CollectiveCall::purpose
  double exposed_communication_seconds = 0;
  double offload_seconds = 0;   // CPU offload: PCIe copies and the CPU optimizer (sim/cost/offload_time.h)
  double step_seconds = 0;
  double tokens_per_second = 0;
  double mfu = 0;  // model FLOPs (6 x active params x tokens + attention) / (peak x step x world);
                   // the bf16 peak, the FP8 one with --fp8 (NeMo's convention)
  double model_flops_per_step = 0;
  std::vector<CollectiveCall> collectives;

  // Additions (the fields above are the stable contract).
  double forward_seconds_per_micro_step = 0;   // compute only, one rank
  double backward_seconds_per_micro_step = 0;  // compute only, including recompute
  double memory_bound_seconds = 0;             // part of compute_seconds spent in operators below
                                               // the ridge point (costed bytes / HBM bandwidth)
  double pipeline_bubble_seconds = 0;          // 1F1B fill and drain: DeepSpeed's TrainSchedule
                                               // time - m x the slowest stage; Megatron-LM: (sum of
                                               // stage micro-step times - the slowest) / virtual stages
  double optimizer_seconds = 0;                // the optimizer step over the rank's partition
  double checkpoint_offload_seconds = 0;       // cpu_checkpointing copies not hidden by compute
  double checkpoint_copy_bytes = 0;            // cpu_checkpointing: bytes over PCIe per step, both ways
  double checkpoint_copy_seconds = 0;          // ... and the time they take on the link, hidden or not
  double hardware_flops_per_step = 0;          // all ranks, including recompute
  double hfu = 0;                              // hardware FLOPs / (peak x step x world)
  // compute_seconds by the kind of kernel (sim/cost/flops.h KernelKind), forward, backward and
  // recompute, the slowest stage: what a profiler trace's GEMM, attention and memory-bound
  // kernels are compared with (ds-plan compare).
  double gemm_seconds = 0;
  double attention_seconds = 0;
  double memory_kernel_seconds = 0;
  double host_wait_seconds = 0;  // GPU idle while the host issues kernels (Cluster::host); in compute_seconds
  // Kernels one micro-step of the slowest stage issues: forward, backward, recompute's forward.
  double forward_launches = 0, backward_launches = 0, recompute_launches = 0;
};

/// Choices DeepSpeed's config does not carry; the defaults describe DeepSpeed as shipped.
struct StepTimeOptions {
  // Megatron-style sequence parallelism inside TP: each TP all-reduce becomes an all-gather plus a
  // reduce-scatter of the same S. DeepSpeed AutoTP has no such mode; for comparisons.
  bool tp_sequence_parallel = false;
  // Hide TP/Ulysses/EP collectives behind compute (DeepSpeed does not by default:
  // tensor_parallel.tp_overlap_comm is rejected by the compile pass, compile/passes/tp_compile.py).
  bool overlap_critical_path_comm = false;
};

/// How one rank's share of the model is cut for the operator counts (sim/cost/flops.h): micro-batch,
/// sequence, tp/sp/ep, the framework's vocabulary split and modules, attention kind.
ShardShape ShardShapeOf(const SimInput& input);

/// Seconds of the fused GPU optimizer step over the rank's optimizer partition (the most loaded
/// pipeline stage's): about 40 bytes per parameter (2K + 16 for K bytes of optimizer state) through HBM. What the closed form and the
/// schedule both charge when the optimizer is not offloaded.
double GpuOptimizerStepSeconds(const SimInput& input);

/// Bytes per second of cpu_checkpointing's layer-input copies: PR #8282's engine copies to pinned
/// buffers (the cluster's PCIe rate); the blocking paths (copy_to_device's `.to('cpu')`, the
/// partition path's unpinned buffers) go through pageable memory. The closed form and the
/// schedule both use it.
double CheckpointCopyBytesPerSecond(const SimInput& input);

TimeReport EstimateStepTime(const SimInput& input);
TimeReport EstimateStepTime(const SimInput& input, const StepTimeOptions& options);

}  // namespace dsp::sim
