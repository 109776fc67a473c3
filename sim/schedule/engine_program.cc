// SPDX-License-Identifier: Apache-2.0
#include "sim/schedule/engine_program.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "sim/comm/comm_plan.h"
#include "sim/cost/flops.h"
#include "sim/cost/kernel_time.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/recompute_policy.h"
#include "sim/cost/step_time.h"

namespace dsp::sim::schedule {
namespace {

struct Kernel {
  std::string name;
  double forward = 0;
  double backward = 0;  // with what recompute re-runs of its forward
};

// The closed form's kernels and prices (sim/cost/step_time.cc TimeOfOps), one entry per operator.
std::vector<Kernel> KernelsOf(const std::vector<OperatorCost>& ops, const KernelRates& rates, Recompute recompute,
                              bool op_sac, bool recomputable) {
  std::vector<Kernel> out;
  RecomputePolicy policy(recompute, op_sac, recomputable);
  for (const OperatorCost& op : ops) {
    Kernel k{std::string(op.name), KernelTimeOf(op, rates, false).seconds, KernelTimeOf(op, rates, true).seconds};
    k.backward += policy.Reruns(op) * k.forward;
    out.push_back(std::move(k));
  }
  return out;
}

// Where a planned collective's calls go.
enum class Placement { kLayerChain, kInsideLayer, kAhead, kAfter, kStepEnd };

// Forward or backward only, by the purpose's name; else both, in proportion to the passes.
enum class Direction { kForward, kBackward, kBoth };
Direction DirectionOf(std::string_view purpose) {
  auto has = [&](std::string_view part) { return purpose.find(part) != std::string_view::npos; };
  if (has("bwd") || has("backward") || has("dkv")) return Direction::kBackward;
  // Routing metadata moves once, in forward (token_dispatcher.py: the counts and the routing map
  // are gathered under no_grad).
  if (has("fwd") || has("split_counts") || has("routing_map")) return Direction::kForward;
  return Direction::kBoth;
}

// Collectives of the MoE layers only (dispatch, combine, the experts' own groups).
bool MoeOnly(std::string_view purpose) {
  return purpose.starts_with("ep_") || purpose.starts_with("moe_") || purpose.starts_with("etp_") ||
         purpose.starts_with("fsdp_expert");
}

bool IsReduction(CollectiveKind kind) {
  return kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kAllReduce;
}

class EngineBuilder {
 public:
  EngineBuilder(const SimInput& in, const ProgramOptions& o) : in_(in), o_(o) {}

  Result<Program> Build() {
    if (in_.plan == nullptr || in_.model == nullptr || in_.cluster == nullptr) {
      return Error{"the schedule needs a plan, a model and a cluster"};
    }
    if (in_.plan->sizes.pp > 1) {
      return Error{"the schedule of pipeline parallelism (pp > 1) is not simulated yet; "
                   "simulate gives its 1F1B estimate"};
    }
    const KernelRates rates = KernelRatesOf(*in_.cluster, in_.engine.attention);
    if (rates.matmul_flops_per_second <= 0 || rates.hbm_bytes_per_second <= 0) {
      return Error{"the cluster has no GPU peak FLOPs or HBM bandwidth"};
    }
    const ModelSpec& m = *in_.model;
    layers_ = static_cast<int>(std::max<int64_t>(m.num_hidden_layers, 1));
    micro_steps_ = o_.micro_steps > 0 ? o_.micro_steps
                                      : static_cast<int>(std::max<int64_t>(in_.workload.grad_accum, 1));
    const ShardShape shard = ShardShapeOf(in_);
    const Recompute rc = in_.workload.recompute;
    const bool op_sac = in_.engine.framework().op_level_sac;
    embedding_ = KernelsOf(EmbeddingForwardOperators(m, shard), rates, rc, op_sac, false);
    head_ = KernelsOf(HeadForwardOperators(m, shard), rates, rc, op_sac, false);
    for (int l = 0; l < layers_; ++l) {
      auto it = by_kind_.find(m.LayerKind(l));
      if (it == by_kind_.end()) {
        it = by_kind_.emplace(m.LayerKind(l), KernelsOf(LayerForwardOperators(m, l, shard), rates, rc, op_sac, true)).first;
      }
      layer_kernels_.push_back(&it->second);
    }
    forward_passes_ = rc == Recompute::kFull ? 2.0 : 1.0;
    for (int l = 0; l < layers_; ++l) {
      moe_ordinal_.push_back(m.IsMoeLayer(l) ? moe_layers_++ : -1);
    }
    const MemoryReport memory = EstimateMemory(in_);
    program_.static_bytes = memory.parameters_bytes + memory.gradients_bytes + memory.optimizer_states_bytes -
                            memory.offloaded_optimizer_states_bytes;
    program_.buffer_bytes = memory.buffers_bytes;
    activation_per_layer_ = memory.activations_bytes / layers_;
    program_.micro_steps = micro_steps_;
    collectives_ = PlanCollectives(in_, {});

    for (int micro = 0; micro < micro_steps_; ++micro) {
      Forward(micro);
      Backward(micro);
    }
    Finish();
    return std::move(program_);
  }

 private:
  int Add(Task t) {
    program_.tasks.push_back(std::move(t));
    return static_cast<int>(program_.tasks.size()) - 1;
  }

  // A compute task after the last one: the compute stream runs them in order.
  int Compute(const std::string& name, Phase phase, int micro, int layer, double seconds, std::vector<int> deps) {
    Task t{.name = name, .phase = phase, .micro = micro, .layer = layer};
    t.compute_seconds = seconds;
    t.deps = std::move(deps);
    if (last_compute_ >= 0) t.deps.push_back(last_compute_);
    last_compute_ = Add(std::move(t));
    return last_compute_;
  }

  int Collective(const PlannedCollective& p, const std::string& name, Phase phase, int micro, int layer,
                 int stream, std::vector<int> deps) {
    Task t{.name = name, .phase = phase, .micro = micro, .layer = layer, .stream = stream};
    t.collective = true;
    t.kind = p.call.kind;
    t.group = p.call.group;
    t.block = p.block;
    t.strided = p.strided;
    t.bytes = p.call.bytes_per_call;
    t.deps = std::move(deps);
    return Add(std::move(t));
  }

  Placement PlacementOf(const PlannedCollective& p, bool backward) const {
    // Context parallelism's KV ring, and TransformerEngine's userbuffers TP overlap (the all-gather
    // and reduce-scatter pipelined with the GEMMs beside them), run inside their layer.
    const bool inside = p.call.purpose.starts_with("cp_kv_p2p") || p.call.purpose.starts_with("tp_sp_");
    switch (p.schedule) {
      case CommSchedule::kCritical: return Placement::kLayerChain;
      case CommSchedule::kForwardOverlap:
      case CommSchedule::kBackwardOverlap:
        if (inside) return Placement::kInsideLayer;
        return backward && IsReduction(p.call.kind) ? Placement::kAfter : Placement::kAhead;
      case CommSchedule::kBoundaryOverlap: return IsReduction(p.call.kind) ? Placement::kAfter : Placement::kAhead;
      case CommSchedule::kStepExposed: return Placement::kStepEnd;
    }
    return Placement::kLayerChain;
  }

  // How many of a collective's calls run in this pass of this micro-step (spread over the layers).
  double CallsIn(const PlannedCollective& p, bool backward, int micro) const {
    const bool once = p.schedule == CommSchedule::kBoundaryOverlap || p.schedule == CommSchedule::kStepExposed;
    if (once) {
      if (p.schedule == CommSchedule::kStepExposed) return 0;  // Finish() issues them
      // Reductions behind the last micro-step's backward; parameter gathers ahead of the first forward.
      const bool reduction = IsReduction(p.call.kind);
      if (reduction) return backward && micro == micro_steps_ - 1 ? p.calls_per_unit : 0;
      return !backward && micro == 0 ? p.calls_per_unit : 0;
    }
    if (p.schedule == CommSchedule::kForwardOverlap) {
      // A forward-overlapped exchange inside the layer runs again in the forward recompute re-runs
      // inside backward; a gather ahead of the layer is the forward's alone.
      if (PlacementOf(p, false) != Placement::kInsideLayer) return backward ? 0 : p.calls_per_unit;
      const double forward = std::round(p.calls_per_unit / forward_passes_);
      return backward ? p.calls_per_unit - forward : forward;
    }
    if (p.schedule == CommSchedule::kBackwardOverlap) return backward ? p.calls_per_unit : 0;
    switch (DirectionOf(p.call.purpose)) {
      case Direction::kForward: return backward ? 0 : p.calls_per_unit;
      case Direction::kBackward: return backward ? p.calls_per_unit : 0;
      case Direction::kBoth: break;
    }
    const double forward = std::round(p.calls_per_unit * forward_passes_ / (forward_passes_ + 1.0));
    return backward ? p.calls_per_unit - forward : forward;
  }

  // Calls of `total` that land on `layer`: an even spread over the layers (over the MoE layers for
  // the experts' collectives).
  int CallsAt(const PlannedCollective& p, double total, int layer) const {
    int i = layer, n = layers_;
    if (MoeOnly(p.call.purpose)) {
      i = moe_ordinal_[static_cast<size_t>(layer)];
      n = moe_layers_;
      if (i < 0 || n <= 0) return 0;
    }
    const auto at = [&](int k) { return static_cast<int>(std::floor(total * k / n + 1e-9)); };
    return at(i + 1) - at(i);
  }

  void Forward(int micro) { Pass(micro, false); }
  void Backward(int micro) { Pass(micro, true); }

  // One pass over the layers (forward 0..L-1 with the embedding first and the head last; backward
  // the reverse), with each collective placed as the header says.
  void Pass(int micro, bool backward) {
    const Phase phase = backward ? Phase::kBackward : Phase::kForward;
    const std::string dir = backward ? "bwd " : "fwd ";
    if (!backward) {
      for (const Kernel& k : embedding_) Compute(dir + k.name, phase, micro, -1, k.forward, {});
    } else {
      for (auto it = head_.rbegin(); it != head_.rend(); ++it) Compute(dir + it->name, phase, micro, -1, it->backward, {});
    }
    std::vector<std::vector<int>> ahead(static_cast<size_t>(layers_));  // gathers each layer waits for
    // Issue the gathers of the layer `visit` steps ahead once the compute before it is queued.
    auto issue_ahead = [&](int visit) {
      if (visit >= layers_) return;
      const int layer = backward ? layers_ - 1 - visit : visit;
      for (const PlannedCollective& p : collectives_) {
        if (PlacementOf(p, backward) != Placement::kAhead) continue;
        for (int c = CallsAt(p, CallsIn(p, backward, micro), layer); c > 0; --c) {
          std::vector<int> deps;
          if (last_compute_ >= 0) deps.push_back(last_compute_);
          ahead[static_cast<size_t>(layer)].push_back(Collective(
              p, std::string(p.call.purpose) + " layer " + std::to_string(layer), phase, micro, layer,
              StreamOf(p.call.group), deps));
        }
      }
    };
    issue_ahead(0);
    for (int visit = 0; visit < layers_; ++visit) {
      const int layer = backward ? layers_ - 1 - visit : visit;
      issue_ahead(visit + 1);  // one layer of prefetch, queued behind this layer's start
      Layer(micro, backward, visit, layer, ahead[static_cast<size_t>(layer)]);
    }
    if (!backward) {
      for (const Kernel& k : head_) Compute(dir + k.name, phase, micro, -1, k.forward, {});
    } else {
      for (auto it = embedding_.rbegin(); it != embedding_.rend(); ++it) {
        Compute(dir + it->name, phase, micro, -1, it->backward, {});
      }
    }
  }

  void Layer(int micro, bool backward, int visit, int layer, const std::vector<int>& gathers) {
    const Phase phase = backward ? Phase::kBackward : Phase::kForward;
    const std::string prefix = (backward ? "bwd layers_" : "fwd layers_") + std::to_string(layer) + "_";
    const std::vector<Kernel>& kernels = *layer_kernels_[static_cast<size_t>(layer)];
    const int before = last_compute_;
    // Context parallelism's KV ring runs beside the layer's attention: issued at its start, the
    // layer's last kernel waits for it.
    std::vector<int> inside;
    for (const PlannedCollective& p : collectives_) {
      if (PlacementOf(p, backward) != Placement::kInsideLayer) continue;
      for (int c = CallsAt(p, CallsIn(p, backward, micro), layer); c > 0; --c) {
        std::vector<int> deps;
        if (before >= 0) deps.push_back(before);
        inside.push_back(Collective(p, std::string(p.call.purpose) + " layer " + std::to_string(layer), phase, micro,
                                    layer, StreamOf(p.call.group), deps));
      }
    }
    const size_t n = kernels.size();
    for (size_t i = 0; i < n; ++i) {
      const Kernel& k = backward ? kernels[n - 1 - i] : kernels[i];
      std::vector<int> deps = i == 0 ? gathers : std::vector<int>{};
      if (i + 1 == n) deps.insert(deps.end(), inside.begin(), inside.end());
      const int task = Compute(prefix + k.name, phase, micro, layer, backward ? k.backward : k.forward, deps);
      if (i + 1 == n) {
        // Saved activations: held from the layer's forward to its backward.
        program_.tasks[static_cast<size_t>(task)].alloc_at_end = backward ? -activation_per_layer_ : activation_per_layer_;
      }
    }
    // Critical collectives on the chain after the layer's kernels: the next layer waits for them.
    for (const PlannedCollective& p : collectives_) {
      if (PlacementOf(p, backward) != Placement::kLayerChain) continue;
      for (int c = CallsAt(p, CallsIn(p, backward, micro), layer); c > 0; --c) {
        const int task = Collective(p, std::string(p.call.purpose) + " layer " + std::to_string(layer), phase, micro,
                                    layer, StreamOf(p.call.group), {last_compute_});
        // The compute stream waits: an empty marker keeps the chain in order.
        last_compute_ = Compute(prefix + "wait " + std::string(p.call.purpose), phase, micro, layer, 0, {task});
      }
    }
    // Reductions after the layer's backward, on their own stream; nothing waits for them but the step.
    for (const PlannedCollective& p : collectives_) {
      if (PlacementOf(p, backward) != Placement::kAfter) continue;
      for (int c = CallsAt(p, CallsIn(p, backward, micro), layer); c > 0; --c) {
        reductions_.push_back(Collective(p, std::string(p.call.purpose) + " layer " + std::to_string(layer), phase,
                                         micro, layer, ReduceStreamOf(p.call.group), {last_compute_}));
      }
    }
  }

  // Once-per-step collectives with nothing to hide behind, then the optimizer.
  void Finish() {
    const int micro = micro_steps_ - 1;
    std::vector<int> deps = reductions_;
    if (last_compute_ >= 0) deps.push_back(last_compute_);
    for (const PlannedCollective& p : collectives_) {
      if (p.schedule != CommSchedule::kStepExposed) continue;
      for (int c = 0; c < static_cast<int>(std::round(p.calls_per_unit)); ++c) {
        const int task = Collective(p, std::string(p.call.purpose), Phase::kOptimizer, micro, -1,
                                    StreamOf(p.call.group), deps);
        deps = {task};
      }
    }
    Task t{.name = "optimizer step", .phase = Phase::kOptimizer, .micro = micro};
    t.compute_seconds = GpuOptimizerStepSeconds(in_);
    t.deps = deps;
    Add(std::move(t));
  }

  const SimInput& in_;
  const ProgramOptions& o_;
  Program program_;
  int layers_ = 1;
  int moe_layers_ = 0;
  std::vector<int> moe_ordinal_;  // per layer: its index among the MoE layers, -1 for a dense one
  int micro_steps_ = 1;
  double forward_passes_ = 1;
  double activation_per_layer_ = 0;
  std::vector<Kernel> embedding_, head_;
  std::map<int, std::vector<Kernel>> by_kind_;  // one layer of each kind (ModelSpec::LayerKind)
  std::vector<const std::vector<Kernel>*> layer_kernels_;
  std::vector<PlannedCollective> collectives_;
  std::vector<int> reductions_;
  int last_compute_ = -1;
};

}  // namespace

Result<Program> BuildEngineProgram(const SimInput& input, const ProgramOptions& options) {
  return EngineBuilder(input, options).Build();
}

}  // namespace dsp::sim::schedule
