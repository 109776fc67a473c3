// SPDX-License-Identifier: Apache-2.0
// `ds-plan run`: the executor's public face. Nothing here includes LibTorch, so apps/ can call it
// (and print its reports) without paying for torch headers; RunPlan itself exists only when the
// build found LibTorch (DSP_HAVE_TORCH).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/model/model_spec.h"
#include "core/plan/plan.h"
#include "core/util/result.h"
#include "exec/launch/plan_hash.h"
#include "exec/model/tiny_config.h"

namespace dsp::exec {

enum class Backend { kGloo, kNccl };

// Deliberate contract breaks: each must make the parity check fail, naming the family.
enum class Fault {
  kNone,
  kNoCopyAllreduce,  // copy_to_tp without its backward all-reduce (Megatron "f")
  kSkipTpCancel,     // folded TP x EP: routed-expert gradients keep restore's tp factor
  kSumRouterGrads,   // folded TP x EP: router gradients SUMmed over tp instead of AVERAGEd
  kWrongEpGroup,     // folded TP x EP: EP groups of the non-folded lane-major layout (path B)
  kExpertGradsOverDp,  // ZeRO-3: routed experts partitioned and reduced over dp instead of edp
  kSkipTpShardOnSave,  // --save writes tp rank 0's shards only (DeepSpeed's bug before PR #8168)
  kPpStaleActivation,  // pipeline: the second stage reuses the previous micro-batch's activation
};

// "none", "no-copy-allreduce", "skip-tp-cancel", "sum-router-grads", "wrong-ep-group",
// "expert-grads-over-dp".
std::string FaultName(Fault fault);
// The inverse; false for an unknown name.
bool ParseFault(const std::string& name, Fault* fault);

// What the sharded run and the unsharded reference compute in (parameters, activations, gradients,
// the SGD update and, where the backend has it, communication). bf16 as DeepSpeed's bf16 mode
// keeps it; the cross entropy (log_softmax + nll) runs in fp32 in both (docs/exec.md "bf16").
enum class Dtype { kFp32, kBf16 };

// "fp32", "bf16".
std::string DtypeName(Dtype dtype);
// The inverse; false for an unknown name.
bool ParseDtype(const std::string& name, Dtype* dtype);

// Parity: a family passes when max|sharded - reference| <= atol + rtol * max|reference| for
// its gradients and weights, and the loss when |loss - reference| <= atol + rtol * |reference|.
// Summation order differs between the sharded and the reference run (all-reduce trees, split
// matmuls), so exact equality is not expected; errors from a broken contract are O(1) relative.
// fp32: rtol 1e-4, atol 1e-6. bf16 (8-bit significand: one ulp is 2^-7 of the value at most):
// rtol 2^-7 x 16 = 0.125, atol 1e-3. Measured (docs/exec.md "bf16"): correct plans differ by at
// most 0.046 relative, the mildest fault (no-copy-allreduce) by at least 0.43; 0.125 sits between
// them with a margin of ~3 either way.
struct Tolerances {
  double rtol = 1e-4;
  double atol = 1e-6;
};
Tolerances DefaultTolerances(Dtype dtype);

// --bench: one collective kind on one group kind, sizes and bandwidths as nccl-tests defines them
// (bytes = the "size" column: all_reduce and broadcast the buffer, all_gather the gathered output,
// reduce_scatter the input, all_to_all one rank's send buffer; algbw = bytes / time; busbw = algbw x
// 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, 1 for broadcast).
// Every group of the kind runs at the same time, as in training; time is the slowest member's.
struct BenchResult {
  std::string group_kind;  // "tp", "dp", ...
  std::vector<int> group;  // the group of this kind that contains rank 0
  std::string collective;  // all_reduce, all_gather, reduce_scatter, all_to_all, broadcast
  std::string algorithm;   // what the backend runs
  int64_t bytes = 0;
  double seconds = 0;      // median over iterations of the slowest member's time
  double algbw_bytes_per_second = 0;
  double busbw_bytes_per_second = 0;
};

struct RunReport;
struct StepParity;

// A further model trained in the same process (--model given twice: teacher/student,
// actor/reference, DeepSpeed PR #8241): its own tiny decoder, shards, optimizer state and
// reference, on the same plan, groups and batches.
struct CompanionModel {
  TinyConfig tiny;
  std::string model_label;
};

struct RunOptions {
  Plan plan;
  TinyConfig tiny;
  std::string model_label;  // the --model path, or "built-in tiny llama/qwen3_moe"
  int steps = 3;
  Backend backend = Backend::kGloo;
  uint64_t seed = 1;
  double lr = 0.05;
  double timeout_seconds = 60;
  Fault fault = Fault::kNone;
  Dtype dtype = Dtype::kFp32;
  Tolerances tolerances;  // set with DefaultTolerances(dtype) when dtype changes
  // --recompute full: every decoder layer of the sharded model checkpointed (its input kept, the
  // layer run again in backward); cpu_checkpointing from the config's activation_checkpointing.
  bool recompute = false;
  bool cpu_checkpointing = false;
  // --save DIR: write the shards after the last step; --load DIR: resume from a checkpoint saved
  // on any layout (exec/checkpoint/).
  std::string save_dir, load_dir;
  std::vector<CompanionModel> companions;
  // gradient_accumulation_steps: the micro-batches one pipeline step runs (pp > 1 only).
  int64_t grad_accum = 1;
  PlanFingerprint fingerprint;
  // Called on rank 0 with the finished report before any rank exits (apps/ prints it here): under
  // torchrun a worker that exits non-zero gets every other worker killed.
  std::function<void(const RunReport&)> report_sink;
  // Called on rank 0 as each step's parity is known (apps/ streams a line per step with it).
  std::function<void(const StepParity&, int steps, double seconds)> step_sink;
  bool bench = false;  // measure collectives instead of checking parity
  std::vector<int64_t> bench_bytes = {int64_t{1} << 10, int64_t{1} << 20, int64_t{8} << 20};
  int bench_iterations = 5;
  // Micro-batches per step: gradient_accumulation_steps through the pipeline, one without it.
  int64_t micro_batches() const { return plan.sizes.pp > 1 ? std::max<int64_t>(grad_accum, 1) : 1; }
};

struct FamilyParity {
  std::string family;         // ParamFamilyName
  double grad_max_abs = 0;    // max |sharded grad - reference grad| over the family, all ranks
  double grad_ref_max = 0;    // max |reference grad|
  double weight_max_abs = 0;  // after the optimizer step
  double weight_ref_max = 0;
  bool ok = true;
  double grad_max_rel() const { return grad_ref_max > 0 ? grad_max_abs / grad_ref_max : grad_max_abs; }
  double weight_max_rel() const { return weight_ref_max > 0 ? weight_max_abs / weight_ref_max : weight_max_abs; }
};

struct StepParity {
  int step = 0;
  double loss = 0;      // the sharded run's global loss
  double ref_loss = 0;  // the unsharded reference on the same global batch
  bool loss_ok = true;
  std::vector<FamilyParity> families;  // in ParamFamily order, only families the model has
  bool ok = true;
};

// One model's parity over the run.
struct ModelParity {
  std::string model_label;  // the --model path, or "built-in tiny llama/qwen3_moe"
  TinyConfig tiny;
  std::vector<StepParity> step_reports;
  std::vector<std::string> failing_families;  // sorted, unique, over all steps
  // The root cause: a wrong step-1 update makes every later step differ everywhere, so the first
  // failing step's families are the ones that name the broken contract. 0 / empty when all pass.
  int first_failing_step = 0;
  std::vector<std::string> first_failing_families;
  bool loss_ok = true;
  bool ok = true;
};

struct RunReport {
  int world_size = 0;
  std::string backend;           // "gloo" | "nccl"
  std::string fault;             // FaultName
  std::string mode;              // e.g. "dp2 x tp2, zero-1"
  int64_t tp = 1, dp = 1, sp = 1, ep = 1, pp = 1, zero_stage = 0;
  // pp > 1: micro-batches per step and the TrainSchedule's steps per batch, transfers counted from
  // the instruction streams (core/plan/pipe_schedule.h).
  int64_t micro_batches = 1, schedule_steps = 0, pipe_transfers = 0;
  int steps = 0;
  uint64_t seed = 0;
  std::string plan_hash;
  std::string dtype = "fp32";    // DtypeName
  std::string comm_dtype = "fp32";  // how tensors travel: "fp32", "bf16", or the gloo probe's words
  // "none", "full" or "full, cpu_checkpointing", and what rank 0 counted over the run.
  std::string recompute = "none";
  int recomputed_layers = 0, offloaded_inputs = 0;
  int64_t resumed_from_step = 0;  // --load: the saved step the run continued from
  std::string saved_to;           // --save: the directory
  Tolerances tolerances;
  // The (first) model's parity: its label, tiny decoder and steps (empty with --bench).
  ModelParity main;
  // The companion models (RunOptions::companions), in order.
  std::vector<ModelParity> companions;
  bool ok = true;                  // every model kept parity
  std::vector<BenchResult> bench;  // --bench only
  double seconds_total = 0;      // rank 0, from entering RunPlan to the report
  double seconds_setup = 0;      // store, plan check, process groups
  double seconds_steps = 0;      // sharded + reference steps and parity reductions
};

// Runs the plan on this process's rank and returns the report (every rank computes the same
// report; apps/ prints it on rank 0 only). Errors: launch environment, store, peers that never
// arrive or die (named), plans that differ between ranks (named), unsupported modes.
Result<RunReport> RunPlan(const RunOptions& options);

// Does this build contain RunPlan?
bool HaveTorch();
bool HaveNccl();

// Report rendering (stable key order; numbers in %.3g for text).
std::string RenderRunText(const RunReport& report);
std::string RenderRunJson(const RunReport& report);  // schemas/run-report.schema.json
std::string RenderBenchText(const RunReport& report);
std::string RenderBenchJson(const RunReport& report);  // schemas/bench-report.schema.json

// nccl-tests' bus-bandwidth factor of a collective on n ranks.
double BusBandwidthFactor(const std::string& collective, int n);

}  // namespace dsp::exec
