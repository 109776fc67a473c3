// SPDX-License-Identifier: Apache-2.0
// The collectives a plan implies for one training step, with their message sizes (nccl-tests S),
// groups (from the real rank tables) and how DeepSpeed schedules them relative to compute. Sources:
// Megatron (Narayanan et al. 2021 §3), Ulysses (arXiv 2309.14509 §3) and ZeRO (Rajbhandari et al. 2020
// §7) volumes; DeepSpeed 0.19.6's compile passes (compile/passes/tp_compile.py, sp_compile.py),
// moe/ and engine.py for what AutoTP/AutoSP/AutoEP insert and which group reduces which gradients;
// deepspeed/utils/groups.py for the groups.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/cost/step_time.h"

namespace dsp::sim {

/// When a collective runs and what compute, if any, can hide it.
enum class CommSchedule {
  kCritical,         // every micro-step, on the critical path (TP, Ulysses, EP, folding restore)
  kForwardOverlap,   // every micro-step, prefetched behind forward compute (ZeRO-3 gather)
  kBackwardOverlap,  // every micro-step, behind backward compute (ZeRO-3 gather, ZeRO-2/3
                     // reduction)
  kBoundaryOverlap,  // once per step, behind the last micro-step's backward (ZeRO-1 reduction)
  kStepExposed,      // once per step, nothing to hide behind (ZeRO-0 reduction, post-step gather)
};

/// Which pipeline stages issue a collective: all, or only the first (embedding) or last (lm_head).
enum class StageScope { kAll, kFirst, kLast };

struct PlannedCollective {
  CollectiveCall call;  // seconds = total per step; exposed_seconds left 0 here
  CommSchedule schedule = CommSchedule::kCritical;
  StageScope scope = StageScope::kAll;
  double calls_per_unit = 0;    // per micro-step for the per-micro schedules, else per step
  double seconds_per_unit = 0;  // calls_per_unit x seconds of one call
  // Of seconds_per_unit, the time the link carries bytes (no per-call latency, no kernel or host
  // overhead): what another collective sharing the link contends with (sim/cost/shared_links.h).
  double link_seconds_per_unit = 0;
  double floor_seconds = 0;     // never hidden: the first prefetch / the last reduce bucket
  // kBoundaryOverlap: how many times a step it runs, each unit against its own window (once per
  // call of the pipeline schedule; CollectivePlanner::SetRepeats). call.* counts them all.
  double repeats = 1;
  // On blocks of consecutive ranks (or the ranks at one position of every block, `strided`)
  // rather than the `call.group` tables (CollectivePlanner::AddOnBlocks); 0: the tables.
  int64_t block = 0;
  bool strided = false;
};

/// Bytes per element DeepSpeed puts on the wire, shared by the closed form and the schedule.
struct WireBytes {
  // Gradient reductions: the gradients' dtype (fp32 with an fp32 accumulation buffer), else
  // communication_data_type, else with sequence parallelism seq_parallel_communication_data_type
  // (fp32 unless given: engine.py replaces the engine's communication dtype with it); under
  // torch_autocast the lower_precision_safe_modules' share in the autocast dtype and the rest
  // (embedding, norms) in fp32.
  double gradient = 2;
  // ZeRO-3 parameter gathers: the parameters' dtype (autocast's mix as above), or with qwZ int8
  // values and one fp32 scale per group of at most 8000 (CUDAQuantizer).
  double param_gather = 2;
};
WireBytes WireBytesPerElement(const SimInput& input);

/// qwZ / qgZ quantization kernels around a collective over `elements` values: ~3 bytes of HBM
/// traffic per value (read 16-bit, write 8/4-bit, dequantize into 16-bit) and two launches.
double QuantizationKernelSeconds(const SimInput& input, double elements);

/// Every collective of one step on one rank. Empty when the input lacks a plan, model or cluster.
std::vector<PlannedCollective> PlanCollectives(const SimInput& input,
                                               const StepTimeOptions& options);

/// ZeRO-3 gathers and reduce-scatters of DeepSpeed releases before 0.5.5 go through
/// torch.distributed's list forms, which copy each of the group's n chunks with its own kernel
/// (ProcessGroupNCCL allgather / reduce_scatter); later releases use flat buffers.
bool Zero3ListCollectives(const SimInput& input);
/// Before 0.6.0 the fetch of the module about to run synchronizes the device
/// (`_synchronize_communication`, `torch.cuda.synchronize()` in `_allgather_param`): its gathers
/// sit on the critical path; from 0.6.0 they run on their own stream behind the prefetch.
/// DeepCompile's offload schedules put them back on it (ZeroSettings::deepcompile_gathers_in_place).
bool Zero3SynchronousFetch(const SimInput& input);

}  // namespace dsp::sim
