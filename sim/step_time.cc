// EstimateStepTime: per-operator roofline compute, the plan's collectives (comm_plan.h) and
// DeepSpeed's overlap of gradient reduction and ZeRO-3 prefetch with compute.
#include "sim/step_time.h"

#include "sim/offload_time.h"

#include <algorithm>

#include "sim/comm_plan.h"
#include "sim/flops.h"

namespace dsp::sim {
namespace {

// Achieved rates. An unset (<= 0) efficiency means "datasheet peak", so a hand-filled Cluster
// still gives finite times.
struct Rates {
  double flops_per_second = 0;
  double hbm_bytes_per_second = 0;
};

Rates AchievedRates(const Cluster& cluster) {
  const double mm = cluster.efficiency.matmul > 0 ? cluster.efficiency.matmul : 1.0;
  const double mem = cluster.efficiency.memory > 0 ? cluster.efficiency.memory : 1.0;
  return {cluster.gpu.peak_bf16_flops_per_second * mm, cluster.gpu.hbm_bytes_per_second * mem};
}

// Roofline: an operator below the ridge point (flops/bytes < rate ratio) is bound by HBM.
struct OpTime {
  double seconds = 0;
  double memory_bound_seconds = 0;
};

OpTime Roofline(const std::vector<OperatorCost>& ops, const Rates& r) {
  OpTime t;
  for (const OperatorCost& op : ops) {
    const double compute = op.flops / r.flops_per_second;
    const double memory = op.bytes / r.hbm_bytes_per_second;
    t.seconds += std::max(compute, memory);
    if (memory > compute) t.memory_bound_seconds += memory;
  }
  return t;
}

// Compute of one micro-step on one rank (the pipeline stage with the head).
struct MicroCompute {
  double forward = 0;
  double backward = 0;        // 2 x forward, plus recomputed forward work
  double memory_bound = 0;    // of forward + backward
  double hardware_flops = 0;  // forward + backward + recompute, this rank
};

MicroCompute ComputeMicroStep(const SimInput& in) {
  const Plan& plan = *in.plan;
  ShardShape shard;
  shard.micro_batch = in.workload.micro_batch;
  shard.seq_len = in.workload.seq_len;
  shard.tp = plan.sizes.tp;
  shard.sp = plan.sizes.sp;
  shard.ep = plan.sizes.ep;
  shard.expert_parallel = plan.sizes.expert_parallel;
  shard.bytes_per_element = in.workload.bytes_per_param;
  const Rates rates = AchievedRates(*in.cluster);

  OpTime layers, recompute;
  double layer_flops = 0, recompute_flops = 0;
  // Layers differ only in being MoE or dense, so one of each is costed and counted.
  const int64_t moe_layers = in.model->NumMoeLayers();
  const int64_t dense_layers = in.model->num_hidden_layers - moe_layers;
  for (const auto& [is_moe, count] : {std::pair{false, dense_layers}, std::pair{true, moe_layers}}) {
    if (count <= 0) continue;
    int64_t index = 0;
    while (index < in.model->num_hidden_layers && in.model->IsMoeLayer(index) != is_moe) ++index;
    const double n = static_cast<double>(count);
    const std::vector<OperatorCost> ops = LayerForwardOperators(*in.model, index, shard);
    const OpTime t = Roofline(ops, rates);
    layers.seconds += n * t.seconds;
    layers.memory_bound_seconds += n * t.memory_bound_seconds;
    layer_flops += n * SumFlops(ops);
    // Selective recompute re-runs the attention core only (Korthikanti et al.); full, the layer.
    std::vector<OperatorCost> again;
    for (const OperatorCost& op : ops) {
      if (in.workload.recompute == Recompute::kFull ||
          (in.workload.recompute == Recompute::kSelective && op.name == "attention")) {
        again.push_back(op);
      }
    }
    const OpTime r = Roofline(again, rates);
    recompute.seconds += n * r.seconds;
    recompute.memory_bound_seconds += n * r.memory_bound_seconds;
    recompute_flops += n * SumFlops(again);
  }
  // Each pipeline stage runs 1/pp of the layers; the head sits on the last stage.
  const double pp = plan.sizes.pp;
  const std::vector<OperatorCost> head_ops = HeadForwardOperators(*in.model, shard);
  const OpTime head = Roofline(head_ops, rates);
  MicroCompute c;
  c.forward = layers.seconds / pp + head.seconds;
  const double recompute_seconds = recompute.seconds / pp;
  c.backward = kBackwardFlopsPerForward * c.forward + recompute_seconds;
  c.memory_bound = (1.0 + kBackwardFlopsPerForward) *
                       (layers.memory_bound_seconds / pp + head.memory_bound_seconds) +
                   recompute.memory_bound_seconds / pp;
  c.hardware_flops = (1.0 + kBackwardFlopsPerForward) * (layer_flops / pp + SumFlops(head_ops)) +
                     recompute_flops / pp;
  return c;
}

// Hides `comm` behind what is left of a compute window, never below its unhideable floor, and
// takes the hidden part out of the window (collectives on one stream share it in issue order).
double ExposeAgainst(double comm, double floor, double& window) {
  const double exposed = std::max(comm - window, std::min(floor, comm));
  window = std::max(0.0, window - (comm - exposed));
  return exposed;
}

}  // namespace

TimeReport EstimateStepTime(const SimInput& input) {
  return EstimateStepTime(input, StepTimeOptions{});
}

TimeReport EstimateStepTime(const SimInput& input, const StepTimeOptions& options) {
  TimeReport report;
  if (input.plan == nullptr || input.model == nullptr || input.cluster == nullptr) return report;
  const Plan& plan = *input.plan;
  const double grad_accum = static_cast<double>(std::max<int64_t>(input.workload.grad_accum, 1));
  const MicroCompute micro = ComputeMicroStep(input);
  std::vector<PlannedCollective> planned = PlanCollectives(input, options);

  // Per micro-step: critical-path collectives are exposed unless asked otherwise; ZeRO-3 forward
  // gathers hide behind forward compute; backward gathers then per-micro reductions behind
  // backward compute (gathers first: backward of a layer needs its parameters).
  double fwd_window = micro.forward;
  double bwd_window = micro.backward;
  double micro_exposed = 0;
  auto expose_per_micro = [&](PlannedCollective& p) {
    double exposed = p.seconds_per_unit;
    if (p.schedule == CommSchedule::kCritical && options.overlap_critical_path_comm) {
      exposed = ExposeAgainst(p.seconds_per_unit, 0.0, bwd_window);
    } else if (p.schedule == CommSchedule::kForwardOverlap) {
      exposed = ExposeAgainst(p.seconds_per_unit, p.floor_seconds, fwd_window);
    } else if (p.schedule == CommSchedule::kBackwardOverlap) {
      exposed = ExposeAgainst(p.seconds_per_unit, p.floor_seconds, bwd_window);
    }
    p.call.exposed_seconds = exposed * grad_accum;
    micro_exposed += exposed;
  };
  for (PlannedCollective& p : planned) {
    if (p.schedule == CommSchedule::kCritical || p.schedule == CommSchedule::kForwardOverlap)
      expose_per_micro(p);
  }
  for (const bool gathers : {true, false}) {
    for (PlannedCollective& p : planned) {
      const bool is_gather = p.call.purpose == "zero3_all_gather_bwd";
      if (p.schedule == CommSchedule::kBackwardOverlap && is_gather == gathers) expose_per_micro(p);
    }
  }
  // Once per step: ZeRO-1 reductions overlap the last micro-step's backward (what the per-micro
  // collectives left of it); the rest (ZeRO-0 reduction, post-step gathers) is exposed.
  double step_exposed = 0;
  for (PlannedCollective& p : planned) {
    if (p.schedule == CommSchedule::kBoundaryOverlap) {
      p.call.exposed_seconds = ExposeAgainst(p.seconds_per_unit, p.floor_seconds, bwd_window);
    } else if (p.schedule == CommSchedule::kStepExposed) {
      p.call.exposed_seconds = p.seconds_per_unit;
    } else {
      continue;
    }
    step_exposed += p.call.exposed_seconds;
  }

  // 1F1B: m micro-steps through pp stages take m + pp - 1 micro-step slots.
  const double micro_seconds = micro.forward + micro.backward + micro_exposed;
  const double bubble_slots = static_cast<double>(plan.sizes.pp - 1);
  report.compute_seconds = grad_accum * (micro.forward + micro.backward);
  report.forward_seconds_per_micro_step = micro.forward;
  report.backward_seconds_per_micro_step = micro.backward;
  report.memory_bound_seconds = grad_accum * micro.memory_bound;
  report.pipeline_bubble_seconds = bubble_slots * micro_seconds;
  const OffloadTime offload = EstimateOffloadTime(input, micro.forward, micro.backward);
  report.offload_seconds = offload.total_seconds();
  report.step_seconds = (grad_accum + bubble_slots) * micro_seconds + step_exposed + report.offload_seconds;

  for (const PlannedCollective& p : planned) {
    report.exposed_seconds_by_purpose[p.call.purpose] += p.call.exposed_seconds;
    report.exposed_communication_seconds += p.call.exposed_seconds;
    report.collectives.push_back(p.call);
  }

  // Throughput counts distinct samples: TP and SP ranks share theirs, so only dp replicas add.
  const double world = plan.sizes.world;
  const double samples =
      static_cast<double>(input.workload.micro_batch) * grad_accum * plan.derived.dp;
  report.model_flops_per_step =
      ModelTrainingFlops(*input.model, 1, input.workload.seq_len) * samples;
  report.hardware_flops_per_step = micro.hardware_flops * grad_accum * world;
  if (report.step_seconds > 0) {
    const double peak = input.cluster->gpu.peak_bf16_flops_per_second;
    report.tokens_per_second =
        samples * static_cast<double>(input.workload.seq_len) / report.step_seconds;
    report.mfu = report.model_flops_per_step / (peak * report.step_seconds * world);
    report.hfu = report.hardware_flops_per_step / (peak * report.step_seconds * world);
  }
  return report;
}

}  // namespace dsp::sim
