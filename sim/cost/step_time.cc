// SPDX-License-Identifier: Apache-2.0
// EstimateStepTime: per-kernel compute (GEMMs with wave quantization, fused or materialized
// attention, memory-bound kernels at HBM bandwidth, a fixed cost per kernel), the plan's
// collectives (comm_plan.h) with DeepSpeed's or Megatron's overlap, pipeline stages with their
// own compute (embedding on the first, lm_head and loss on the last) under 1F1B or interleaved
// 1F1B, and the optimizer step. docs/cost-model.md "Step time" states each formula's source.
#include "sim/cost/step_time.h"

#include <algorithm>
#include <map>

#include "sim/comm/comm_plan.h"
#include "sim/cost/flops.h"
#include "sim/cost/kernel_time.h"
#include "sim/cost/offload_time.h"
#include "sim/cost/param_sharding.h"
#include "sim/cost/pipeline_makespan.h"
#include "sim/cost/recompute_policy.h"
#include "sim/cost/shared_links.h"

namespace dsp::sim {
namespace {

// The mixed-precision optimizer step over a rank's partition: the 16-bit gradient cast to fp32,
// fused Adam reading the fp32 master weights, both moments and the gradient and writing the three
// back, then the masters copied to the 16-bit weights: about 40 bytes per parameter.
constexpr double kOptimizerBytesPerParam = 40;

// One micro-batch through a group of kernels: forward, backward (with what recompute re-runs).
struct PassTime {
  double forward = 0;
  double backward = 0;
  double memory_bound = 0;
  double hardware_flops = 0;
  // forward + backward (+ recompute) seconds by the kind of kernel, as a profiler trace splits them
  double by_kind[3] = {0, 0, 0};  // KernelKind: matmul, attention, memory
  // Kernels the host issues: forward, backward, and the forward that recompute re-runs in backward.
  double forward_launches = 0, backward_launches = 0, recompute_launches = 0;
  double host_wait = 0;  // what WaitForHost added: the GPU idle while the host issues kernels
  void Add(const PassTime& o, double n) {
    forward += n * o.forward;
    backward += n * o.backward;
    memory_bound += n * o.memory_bound;
    hardware_flops += n * o.hardware_flops;
    for (int k = 0; k < 3; ++k) by_kind[k] += n * o.by_kind[k];
    forward_launches += n * o.forward_launches;
    backward_launches += n * o.backward_launches;
    recompute_launches += n * o.recompute_launches;
  }
};

// An eager step issues its kernels from the host one at a time; the GPU cannot run ahead of the
// host, so a phase takes at least the time the host needs to issue it. Forward and a recompute
// run the modules' Python code; backward is autograd's C++ engine. (The kernels of one phase are
// issued and run as a pipeline: the longer of the two sets the phase's time.)
void WaitForHost(PassTime& t, const HostLaunch& host) {
  const double forward = t.forward_launches * host.forward_seconds_per_kernel;
  const double backward = t.backward_launches * host.backward_seconds_per_kernel +
                          t.recompute_launches * host.forward_seconds_per_kernel;
  t.host_wait = std::max(0.0, forward - t.forward) + std::max(0.0, backward - t.backward);
  t.forward = std::max(t.forward, forward);
  t.backward = std::max(t.backward, backward);
}

PassTime TimeOfOps(const std::vector<OperatorCost>& ops, const KernelRates& r, Recompute recompute,
                   bool op_sac, bool recomputable) {
  PassTime p;
  RecomputePolicy policy(recompute, op_sac, recomputable);
  for (const OperatorCost& op : ops) {
    const KernelTime f = KernelTimeOf(op, r, false), b = KernelTimeOf(op, r, true);
    p.forward += f.seconds;
    p.backward += b.seconds;
    p.forward_launches += f.launches;
    p.backward_launches += b.launches;
    p.memory_bound += f.memory_bound_seconds + b.memory_bound_seconds;
    p.hardware_flops += (1.0 + kBackwardFlopsPerForward) * op.flops;
    double& kind = p.by_kind[static_cast<int>(op.kind)];
    kind += f.seconds + b.seconds;
    // Full recompute re-runs the layer's forward; selective the attention core (Korthikanti et
    // al.) or, under op-level AC, the operators whose outputs are not kept (recompute_policy.h).
    // DeepSpeed's TiledMLP runs its operators' forward once more in backward.
    if (const int n = policy.Reruns(op); n > 0) {
      kind += n * f.seconds;
      p.backward += n * f.seconds;
      p.recompute_launches += n * f.launches;
      p.memory_bound += n * f.memory_bound_seconds;
      p.hardware_flops += n * op.flops;
    }
  }
  return p;
}

// Compute of one micro-batch on each pipeline stage.
std::vector<PassTime> StageCompute(const SimInput& in) {
  const ModelSpec& m = *in.model;
  const ShardShape shard = ShardShapeOf(in);
  const KernelRates rates = KernelRatesOf(*in.cluster, in.engine.attention);
  const Recompute rc = in.workload.recompute;
  const bool op_sac = in.engine.framework().op_level_sac;

  // Layers of one kind (MoE or dense, attention kind) cost the same: cost one of each, once.
  std::map<int, PassTime> by_kind;
  auto layer_time = [&](int64_t representative) -> const PassTime& {
    const int kind = m.LayerKind(representative);
    auto it = by_kind.find(kind);
    if (it == by_kind.end()) {
      it = by_kind.emplace(kind, TimeOfOps(LayerForwardOperators(m, representative, shard), rates,
                                           rc, op_sac, true)).first;
    }
    return it->second;
  };
  const PassTime embedding = TimeOfOps(EmbeddingForwardOperators(m, shard), rates, rc, op_sac, false);
  const PassTime head = TimeOfOps(HeadForwardOperators(m, shard), rates, rc, op_sac, false);

  const int pp = std::max(in.plan->sizes.pp, 1);
  const int64_t layers = m.num_hidden_layers;
  std::vector<PassTime> stages(static_cast<size_t>(pp));
  // Uniform split; the first layers % pp stages take one extra layer (memory_model.cc too).
  const int64_t base = layers / pp, extra = layers % pp;
  for (int s = 0; s < pp; ++s) {
    const int64_t first = s * base + std::min<int64_t>(s, extra);
    const int64_t end = first + base + (s < extra ? 1 : 0);
    PassTime& t = stages[static_cast<size_t>(s)];
    for (const ModelSpec::LayerRun& run : m.LayerKinds(first, end)) {
      t.Add(layer_time(run.representative), static_cast<double>(run.count));
    }
    if (s == 0) t.Add(embedding, 1.0);
    if (s == pp - 1) t.Add(head, 1.0);
    WaitForHost(t, in.cluster->host);
  }
  return stages;
}

bool InScope(StageScope scope, int stage, int pp) {
  return scope == StageScope::kAll || (scope == StageScope::kFirst && stage == 0) ||
         (scope == StageScope::kLast && stage == pp - 1);
}

// Hides `comm` behind what is left of a compute window, never below its unhideable floor, and
// takes the hidden part out of the window (collectives on one stream share it in issue order).
double ExposeAgainst(double comm, double floor, double& window) {
  const double exposed = std::max(comm - window, std::min(floor, comm));
  window = std::max(0.0, window - (comm - exposed));
  return exposed;
}

// Parameters in the optimizer partition of one rank of the most loaded stage.
double OptimizerPartitionParams(const SimInput& in) {
  const ParamCounts c = ModelParamCounts(in);
  const ParallelSizes& sizes = in.plan->sizes;
  double dense = 0, routed = 0;
  for (const auto& [family, count] : c.by_family) {
    const double share =
        static_cast<double>(count) / ShardDivisorOf(family, in);
    (family == ParamFamily::kRoutedExperts && sizes.expert_parallel ? routed : dense) += share;
  }
  const double pp = std::max(sizes.pp, 1);
  if (in.zero.stage >= 1) {
    dense /= std::max<int64_t>(in.plan->derived.dp * sizes.sp, 1);
    routed /= std::max<int64_t>(in.plan->derived.edp, 1);
  }
  return (dense + routed) / pp;
}

}  // namespace

ShardShape ShardShapeOf(const SimInput& in) {
  const Plan& plan = *in.plan;
  ShardShape shard;
  shard.micro_batch = in.workload.micro_batch;
  shard.seq_len = in.workload.seq_len;
  shard.tp = plan.sizes.tp;
  shard.sp = SequenceShards(in);
  const ContextParallel cp_kind = in.engine.context_parallel();
  if (cp_kind == ContextParallel::kRingP2p || cp_kind == ContextParallel::kAllGatherKv) {
    shard.attention_key_split = shard.sp;
    shard.torch_ring_attention = cp_kind == ContextParallel::kAllGatherKv;
  }
  shard.ep = plan.sizes.ep;
  shard.expert_parallel = plan.sizes.expert_parallel;
  const FrameworkProfile& fw = in.engine.framework();
  shard.megatron_experts = plan.sizes.expert_parallel && fw.megatron_moe_options;
  shard.etp = shard.megatron_experts ? static_cast<int>(std::max<int64_t>(plan.sizes.etp, 1)) : 1;
  shard.grouped_experts = in.engine.hf_eager() || fw.grouped_gemm_experts || in.engine.moe_grouped_gemm;
  shard.bytes_per_element = in.workload.bytes_per_param;
  shard.megatron_sp = in.engine.megatron_sp;
  shard.vocab_parallel = in.engine.framework().megatron_tp();
  shard.lm_head_split = VocabSplitOf(in) == VocabSplit::kLmHeadColumns;
  shard.flash_attention = in.engine.flash_attention();
  shard.fused_loss = in.engine.fused_loss;
  shard.tiled_mlp = in.engine.tiled_mlp;
  shard.hf_eager = in.engine.hf_eager();  // DeepSpeed trains transformers' modules
  shard.bf16_loss = in.engine.bf16_loss;
  shard.te_modules = in.engine.te_modules;
  shard.torch_compile = in.engine.torch_compile;
  shard.compiled_loss = in.engine.compiled_loss();
  shard.attention_tp = AttentionTpDivisor(in);
  if (in.engine.fp8) shard.fp8 = in.engine.framework().fp8;
  return shard;
}

double CheckpointCopyBytesPerSecond(const SimInput& input) {
  return input.checkpointing.async_copy ? input.cluster->host_to_device_bytes_per_second
                                        : input.cluster->PageableCopyBytesPerSecond();
}

double GpuOptimizerStepSeconds(const SimInput& input) {
  // kOptimizerBytesPerParam for Adam's K = 12; in general the K bytes of master weights and
  // states read and written, the fp32 gradient the update reads (4), the 16-bit gradient cast to
  // it (2 + 4) and the master weights copied back to the 16-bit ones (4 + 2): 2K + 16. Measured on
  // an H200 (docs/validation.md "One GPU, measured"): the cast, torch's fused AdamW and the copy
  // back of a bf16 model with fp32 masters are these kernels, about 40 bytes per parameter.
  // bf16_master_weights_and_grads (PR #7700) steps on the 16-bit gradients and weights in place: no
  // cast, no copy back, 2K + 8 (the gradient read and the norm and overflow checks); so does
  // torch's Adam on FSDP2's bf16 shards (--bf16-params).
  const double k = input.workload.optimizer_state_bytes_per_param;
  const double extra = input.precision.low_precision_master || input.engine.bf16_params ? 8 : 16;
  const double bytes = k > 0 ? 2 * k + extra : kOptimizerBytesPerParam;
  return OptimizerPartitionParams(input) * bytes / KernelRatesOf(*input.cluster).hbm_bytes_per_second;
}

TimeReport EstimateStepTime(const SimInput& input) {
  return EstimateStepTime(input, StepTimeOptions{});
}

namespace {

// What the plan's collectives add to a step once overlap has hidden what it can.
struct Exposure {
  std::vector<double> critical;    // per stage, per micro-step: critical-path collectives
  double overlapped = 0;           // per micro-step, every stage: what overlap could not hide
  double step = 0;                 // once per step: boundary reductions, post-step gathers
  double pipe_transfer_seconds = 0;           // one activation or gradient between stages
  PlannedCollective* pipe_transfers = nullptr;  // DeepSpeed's PipelineEngine sends, priced by the schedule
};

// Per micro-step: critical-path collectives are exposed unless asked otherwise; ZeRO-3 forward
// gathers hide behind forward compute; backward gathers then per-micro reductions behind backward
// compute (gathers first: backward of a layer needs its parameters). Once per step: ZeRO-1 and
// DDP reductions overlap the last micro-step's backward (what the per-micro collectives left of
// it); the rest (ZeRO-0 reduction, post-step gathers) is exposed.
Exposure ExposeCollectives(const SimInput& input, const StepTimeOptions& options, const PassTime& micro,
                           size_t stages, std::vector<PlannedCollective>& planned) {
  const int pp = static_cast<int>(stages);
  const double grad_accum = static_cast<double>(std::max<int64_t>(input.workload.grad_accum, 1));
  Exposure e;
  e.critical.assign(stages, 0.0);
  double fwd_window = micro.forward;
  double bwd_window = micro.backward;
  // Critical collectives on a link that overlapped ones share take longer (shared_links.h); the
  // overlapped traffic that rode along then needs that much less of the compute windows.
  const SharedLinks shared = options.overlap_critical_path_comm ? SharedLinks{std::vector<double>(planned.size())}
                                                                : PriceSharedLinks(planned, micro.forward, micro.backward);
  fwd_window += shared.forward_credit;
  bwd_window += shared.backward_credit;
  // DeepSpeed's PipelineEngine sends activations and gradients with blocking send/recv in its
  // schedule's order: each transfer holds both neighbours, which the schedule's time models
  // (TrainScheduleMakespan's transfer_seconds) instead of adding it to every stage's micro-step.
  const bool deepspeed_pipeline =
      pp > 1 && input.engine.framework().pipeline == PipelineRuntime::kDeepSpeedPipelineEngine;
  auto expose_per_micro = [&](PlannedCollective& p) {
    double exposed = p.seconds_per_unit + shared.extra_seconds[static_cast<size_t>(&p - planned.data())];
    if (p.schedule == CommSchedule::kCritical && options.overlap_critical_path_comm) {
      exposed = ExposeAgainst(p.seconds_per_unit, 0.0, bwd_window);
    } else if (p.schedule == CommSchedule::kForwardOverlap) {
      exposed = ExposeAgainst(p.seconds_per_unit, p.floor_seconds, fwd_window);
    } else if (p.schedule == CommSchedule::kBackwardOverlap) {
      exposed = ExposeAgainst(p.seconds_per_unit, p.floor_seconds, bwd_window);
    }
    p.call.exposed_seconds = exposed * grad_accum;
    if (deepspeed_pipeline && p.call.purpose == "pp_send_recv" && p.calls_per_unit > 0) {
      e.pipe_transfer_seconds = exposed / p.calls_per_unit;
      e.pipe_transfers = &p;
      return;
    }
    if (p.schedule == CommSchedule::kCritical) {
      for (int s = 0; s < pp; ++s) {
        if (InScope(p.scope, s, pp)) e.critical[static_cast<size_t>(s)] += exposed;
      }
    } else {
      e.overlapped += exposed;
    }
  };
  for (PlannedCollective& p : planned) {
    if (p.schedule == CommSchedule::kCritical || p.schedule == CommSchedule::kForwardOverlap) expose_per_micro(p);
  }
  for (const bool gathers : {true, false}) {
    for (PlannedCollective& p : planned) {
      const bool is_gather = p.call.purpose.ends_with("all_gather_bwd");  // zero3_, hpz_
      if (p.schedule == CommSchedule::kBackwardOverlap && is_gather == gathers) expose_per_micro(p);
    }
  }
  for (PlannedCollective& p : planned) {
    if (p.schedule == CommSchedule::kBoundaryOverlap) {
      p.call.exposed_seconds = p.repeats * ExposeAgainst(p.seconds_per_unit, p.floor_seconds, bwd_window);
    } else if (p.schedule == CommSchedule::kStepExposed) {
      p.call.exposed_seconds = p.seconds_per_unit;
    } else {
      continue;
    }
    e.step += p.call.exposed_seconds;
  }
  return e;
}

// cpu_checkpointing: every micro-step copies the stage's checkpointed layer inputs but the last to
// the host in forward and back in backward over PCIe. Blocking before 0.19.6 (and with
// partition_activations): the copies add to the step; async: they hide behind compute. Returns
// the exposed seconds per micro-step and fills the report's copy totals.
double CheckpointCopySeconds(const SimInput& input, const PassTime& micro, TimeReport& report) {
  if (input.workload.recompute != Recompute::kFull || !input.checkpointing.cpu_checkpointing ||
      input.cluster->host_to_device_bytes_per_second <= 0) {
    return 0;
  }
  const Plan& plan = *input.plan;
  const int pp = std::max(plan.sizes.pp, 1);
  const double grad_accum = static_cast<double>(std::max<int64_t>(input.workload.grad_accum, 1));
  const double tokens =
      static_cast<double>(input.workload.micro_batch * input.workload.seq_len) / SequenceShards(input);
  // One layer's checkpointed input: T x h 16-bit values (Korthikanti's 2sbh bytes).
  double per_layer = tokens * static_cast<double>(input.model->hidden_size) * input.workload.bytes_per_param;
  if (input.checkpointing.partition_activations || input.engine.megatron_sp) {
    per_layer /= std::max(plan.sizes.tp, 1);
  }
  // PR #8282's engine keeps the stage's last layer input on the GPU; older paths move all.
  const double layers = std::ceil(static_cast<double>(input.model->num_hidden_layers) / pp) -
                        (input.checkpointing.keep_last_on_device() ? 1.0 : 0.0);
  const double rate = CheckpointCopyBytesPerSecond(input);
  const double one_way = std::max(layers, 0.0) * per_layer / rate;
  report.checkpoint_copy_bytes = 2.0 * std::max(layers, 0.0) * per_layer * grad_accum;
  report.checkpoint_copy_seconds = 2.0 * one_way * grad_accum;
  return input.checkpointing.async_copy
             ? std::max(0.0, one_way - micro.forward) + std::max(0.0, one_way - micro.backward)
             : 2.0 * one_way;
}

struct PipelineTime {
  double bubble = 0;
  double transfer_exposed = 0;  // DeepSpeed's PipelineEngine: what its blocking sends add
};

// 1F1B over stages with micro-step times t_s. DeepSpeed's PipelineEngine: the time of its
// TrainSchedule streams run with these times (sim/cost/pipeline_makespan.h): (m + p - 1) t for
// equal stages, usually (m - 1) max t + sum t when the last stage is the slowest and less when an
// earlier one is, but neither in general. Megatron-LM: the pipeline fills and drains through
// every stage once and runs the slowest m times, T = (m - 1) max t + sum t; interleaving v model
// chunks per stage divides the fill and drain by v (Narayanan et al. 2021 §2.2.2: bubble
// (p - 1) / (v m)) when m >= p. A step run as c calls of the schedule of m / c micro-batches each
// (fsdp2's --pp-schedule-micro-batches) fills and drains c times.
PipelineTime PipelineBubble(const SimInput& input, const std::vector<PassTime>& stages,
                            const std::vector<double>& stage_seconds, Exposure& exposure) {
  PipelineTime t;
  const size_t pp = stages.size();
  if (pp <= 1) return t;
  const double grad_accum = static_cast<double>(std::max<int64_t>(input.workload.grad_accum, 1));
  double slowest = 0, sum = 0;
  for (double s : stage_seconds) {
    slowest = std::max(slowest, s);
    sum += s;
  }
  if (input.engine.framework().pipeline == PipelineRuntime::kMegatronSchedules) {
    // Each call of the schedule fills and drains the pipeline once (EngineSettings::
    // pipeline_schedule_micro_batches: torchtitan and NeMo AutoModel call it once per local batch).
    const int64_t calls = input.engine.pipeline_schedule_calls(input.workload.grad_accum);
    const double per_call = grad_accum / static_cast<double>(calls);
    const double v = std::max(input.engine.virtual_stages, 1);
    double call = (sum - slowest) / v;
    // Interleaving hides the fill only when a call has a micro-batch for every stage: with r < p
    // each chunk's micro-batches wait for the previous chunk's round trip through all p stages
    // (torch's ScheduleInterleaved1F1B: rounds of max(1, r / p)), so a call takes p t + (r - 1) t / v
    // instead of r t + (p - 1) t / v for equal stages.
    const double stages_count = static_cast<double>(pp);
    if (v > 1 && per_call < stages_count) call += (stages_count - per_call) * slowest * (1 - 1 / v);
    t.bubble = static_cast<double>(calls) * call;
    return t;
  }
  // Each stage's exposed communication and copies split between its forward and backward in the
  // ratio of its compute.
  std::vector<double> forward(pp), backward(pp);
  for (size_t s = 0; s < pp; ++s) {
    const double compute = stages[s].forward + stages[s].backward;
    const double share = compute > 0 ? stages[s].forward / compute : 0.5;
    forward[s] = stage_seconds[s] * share;
    backward[s] = stage_seconds[s] - forward[s];
  }
  // The bubble is the schedule's idle time without transfers; what the transfers add on top (they
  // hold both neighbours) is pp_send_recv's exposed time.
  const auto m = static_cast<int64_t>(grad_accum);
  const double free = TrainScheduleMakespan(forward, backward, m);
  t.bubble = std::max(0.0, free - grad_accum * slowest);
  if (exposure.pipe_transfers != nullptr) {
    t.transfer_exposed =
        std::max(0.0, TrainScheduleMakespan(forward, backward, m, exposure.pipe_transfer_seconds) - free);
    exposure.pipe_transfers->call.exposed_seconds = t.transfer_exposed;
  }
  return t;
}

// Throughput counts distinct samples: TP and SP ranks share theirs, so only dp replicas add.
void FillThroughput(const SimInput& input, const std::vector<PassTime>& stages, TimeReport& report) {
  const Plan& plan = *input.plan;
  const int pp = std::max(plan.sizes.pp, 1);
  const double grad_accum = static_cast<double>(std::max<int64_t>(input.workload.grad_accum, 1));
  const double world = plan.sizes.world;
  const double samples = static_cast<double>(input.workload.micro_batch) * grad_accum * plan.derived.dp;
  report.model_flops_per_step = ModelTrainingFlops(*input.model, 1, input.workload.seq_len) * samples;
  double stage_flops = 0;
  for (const PassTime& s : stages) stage_flops += s.hardware_flops;
  report.hardware_flops_per_step = stage_flops / pp * grad_accum * world;
  if (report.step_seconds > 0) {
    // With --fp8 MFU is against the FP8 peak, as NeMo reports it (NVIDIA/dgxc-benchmarking
    // llama3.1 README: "MFU against the FP8 peak 1979").
    const double peak = input.engine.fp8 ? input.cluster->gpu.Fp8PeakFlops() : input.cluster->gpu.peak_bf16_flops_per_second;
    report.tokens_per_second = samples * static_cast<double>(input.workload.seq_len) / report.step_seconds;
    report.mfu = report.model_flops_per_step / (peak * report.step_seconds * world);
    report.hfu = report.hardware_flops_per_step / (peak * report.step_seconds * world);
  }
}

}  // namespace

TimeReport EstimateStepTime(const SimInput& input, const StepTimeOptions& options) {
  TimeReport report;
  if (input.plan == nullptr || input.model == nullptr || input.cluster == nullptr) return report;
  const double grad_accum = static_cast<double>(std::max<int64_t>(input.workload.grad_accum, 1));
  const std::vector<PassTime> stages = StageCompute(input);
  std::vector<PlannedCollective> planned = PlanCollectives(input, options);

  // The stage that sets the pace: the most compute (ties: the first).
  size_t slow = 0;
  for (size_t s = 1; s < stages.size(); ++s) {
    if (stages[s].forward + stages[s].backward > stages[slow].forward + stages[slow].backward) slow = s;
  }
  const PassTime& micro = stages[slow];
  Exposure exposure = ExposeCollectives(input, options, micro, stages.size(), planned);
  const double checkpoint_copy = CheckpointCopySeconds(input, micro, report);
  report.checkpoint_offload_seconds = checkpoint_copy * grad_accum;

  std::vector<double> stage_seconds(stages.size());
  double slowest = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    stage_seconds[s] = stages[s].forward + stages[s].backward + exposure.critical[s] + exposure.overlapped +
                       checkpoint_copy;
    slowest = std::max(slowest, stage_seconds[s]);
  }
  const PipelineTime pipeline = PipelineBubble(input, stages, stage_seconds, exposure);

  report.compute_seconds = grad_accum * (micro.forward + micro.backward);
  report.forward_seconds_per_micro_step = micro.forward;
  report.backward_seconds_per_micro_step = micro.backward;
  report.memory_bound_seconds = grad_accum * micro.memory_bound;
  report.gemm_seconds = grad_accum * micro.by_kind[static_cast<int>(KernelKind::kMatmul)];
  report.attention_seconds = grad_accum * micro.by_kind[static_cast<int>(KernelKind::kAttention)];
  report.memory_kernel_seconds = grad_accum * micro.by_kind[static_cast<int>(KernelKind::kMemory)];
  report.host_wait_seconds = grad_accum * micro.host_wait;
  report.forward_launches = micro.forward_launches;
  report.backward_launches = micro.backward_launches;
  report.recompute_launches = micro.recompute_launches;
  report.pipeline_bubble_seconds = pipeline.bubble;
  const OffloadTime offload = EstimateOffloadTime(input, micro.forward, micro.backward);
  report.offload_seconds = offload.total_seconds();
  if (!input.zero.offload_optimizer) report.optimizer_seconds = GpuOptimizerStepSeconds(input);
  report.step_seconds = grad_accum * slowest + pipeline.bubble + pipeline.transfer_exposed + exposure.step +
                        report.offload_seconds + report.optimizer_seconds;

  for (const PlannedCollective& p : planned) {
    report.exposed_seconds_by_purpose[p.call.purpose] += p.call.exposed_seconds;
    report.exposed_communication_seconds += p.call.exposed_seconds;
    report.collectives.push_back(p.call);
  }
  FillThroughput(input, stages, report);
  return report;
}

}  // namespace dsp::sim
