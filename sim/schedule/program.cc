// SPDX-License-Identifier: Apache-2.0
#include "sim/schedule/program.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "sim/graph/builder.h"
#include "sim/cost/memory_model.h"
#include "sim/plan/symbols.h"
#include "sim/cost/kernel_time.h"
#include "sim/cost/step_time.h"
#include "sim/cost/offload_time.h"
#include "sim/comm/comm_plan.h"
#include "sim/schedule/op_cost.h"

namespace dsp::sim::schedule {
namespace {

namespace ops = graph::ops;
using graph::Node;

bool IsCompute(const Node& n) {
  return n.op != ops::kPlaceholder && n.op != ops::kOutput && n.op != ops::kRelease &&
         !graph::IsCollective(n.op);
}

bool IsParamGather(const Node& n) {
  return n.op == ops::kAllGather && !n.param.empty() && n.args.empty();
}

bool IsAllToAll(const Node& n) {
  return n.op == ops::kAllToAll || n.op == ops::kDispatch || n.op == ops::kCombine;
}

void AddDeps(std::vector<int>& deps, const std::vector<int>& more) {
  for (int d : more) {
    if (std::find(deps.begin(), deps.end(), d) == deps.end()) deps.push_back(d);
  }
}

// A parameter's gradient path as the ZeRO pass left it in the graph.
struct GradPath {
  const Node* reduce = nullptr;      // reduce_grad_*: op and family group
  const Node* tp_average = nullptr;  // tp_average_grad_* (folding)
  // tp_grad_allreduce_* (AutoTP's grad_allreduce hook): summed over tp every micro-step, in the
  // autograd hook, before accumulation and before the DP reduction.
  const Node* tp_hook = nullptr;
  double elements = 0;
};

// Everything per node the builder needs, computed once.
struct NodeInfo {
  int position = 0;           // in graph order
  int layer = -1;
  int fwd_ordinal = -1;       // among compute nodes, forward order
  int bwd_ordinal = -1;       // among compute nodes, backward order
  double forward_seconds = 0;   // its kernels, priced by sim/cost/kernel_time.h
  double backward_seconds = 0;  // input and weight gradients (FlashAttention: its recomputing backward)
  double activation_bytes = 0;  // saved for backward, freed by its backward
};

class Builder {
 public:
  Builder(const graph::Graph& g, const SimInput& in, const ProgramOptions& o) : g_(g), in_(in), o_(o) {}

  Result<Program> Build() {
    const Plan& plan = *in_.plan;
    if (plan.sizes.pp > 1) {
      return Error{"the schedule of pipeline parallelism (pp > 1) is not simulated yet; "
                   "simulate gives its 1F1B estimate"};
    }
    micro_steps_ = o_.micro_steps > 0 ? o_.micro_steps
                                      : static_cast<int>(std::max<int64_t>(in_.workload.grad_accum, 1));
    bpe_ = in_.workload.bytes_per_param;
    wire_ = WireBytesPerElement(in_);
    memory_ = EstimateMemory(in_);
    // cpu_checkpointing with full recompute: layer inputs copied to the host in forward and back
    // before their recomputation (sim/cost/memory_model.cc has the same keep-last rule).
    pcie_ = CheckpointCopyBytesPerSecond(in_);
    offload_checkpoints_ = in_.workload.recompute == Recompute::kFull &&
                           in_.checkpointing.cpu_checkpointing && pcie_ > 0;
    if (Status s = BindValues(); !s.ok()) return s.error();
    if (Status s = Analyse(); !s.ok()) return s.error();

    program_.micro_steps = micro_steps_;
    // DeepCompile's offload_opt_states keeps part of the states on the host through the passes.
    program_.static_bytes = memory_.parameters_bytes + memory_.gradients_bytes + memory_.optimizer_states_bytes -
                            memory_.offloaded_optimizer_states_bytes;
    const double reduce_bucket_bytes = bpe_ * in_.zero.reduce_bucket_size;
    program_.buffer_bytes = in_.zero.stage == 3 ? reduce_bucket_bytes : memory_.zero_buffers_bytes;

    for (int m = 0; m < micro_steps_; ++m) {
      if (Status s = Forward(m); !s.ok()) return s.error();
      if (Status s = Backward(m); !s.ok()) return s.error();
    }
    Optimizer();
    return std::move(program_);
  }

 private:
  Status BindValues() {
    values_ = PlanSymbolValues(in_);
    const Cluster& c = *in_.cluster;
    rates_ = KernelRatesOf(c, in_.engine.attention);
    if (rates_.matmul_flops_per_second <= 0 || rates_.hbm_bytes_per_second <= 0) {
      return Error{"the cluster has no GPU peak FLOPs or HBM bandwidth"};
    }
    shard_ = ShardShapeOf(in_);
    return Status::Ok();
  }

  Status Analyse() {
    int position = 0, ordinal = 0;
    std::map<int, double> layer_weight;  // sum of output elements of a layer's compute nodes
    double output_weight = 0;
    for (const Node* n : g_) {
      NodeInfo& info = info_[n];
      info.position = position++;
      info.layer = graph::LayerOfModule(n->module);
      if (IsCompute(*n)) {
        info.fwd_ordinal = ordinal++;
        compute_order_.push_back(n);
        // The closed form's pricing of the same operator (one kernel-cost function for both).
        Result<std::vector<OperatorCost>> kernels = NodeOperators(*n, values_, *in_.model, shard_);
        if (!kernels.ok()) return kernels.error();
        for (const OperatorCost& op : *kernels) {
          info.forward_seconds += KernelTimeOf(op, rates_, false).seconds;
          info.backward_seconds += KernelTimeOf(op, rates_, true).seconds;
        }
        // --tiled-mlp: TiledMLP's backward runs a dense MLP's forward once more (the operators
        // flops.cc marks `tiled` for the closed form).
        if (shard_.tiled_mlp && info.layer >= 0 && !in_.model->IsMoeLayer(info.layer) &&
            n->module.find(".mlp") != std::string::npos) {
          info.backward_seconds += info.forward_seconds;
        }
        if (info.layer >= 0) {
          layer_seconds_[info.layer] += info.forward_seconds;
          if (!layer_first_.contains(info.layer)) layer_first_[info.layer] = n;
          layer_last_[info.layer] = n;
        }
      }
      if (IsParamGather(*n)) gathers_.push_back(n);
      if (graph::IsGradientReduction(*n)) {
        GradPath& path = grads_[n->param];
        if (n->name.starts_with("tp_average_grad_")) {
          path.tp_average = n;
        } else if (n->name.starts_with("tp_grad_allreduce_")) {
          path.tp_hook = n;
        } else {
          path.reduce = n;
        }
        if (n->param_shape) {
          Result<double> e = Numel(*n->param_shape, values_);
          if (!e.ok()) return e.error();
          path.elements = *e;
        }
      }
    }
    for (size_t i = 0; i < compute_order_.size(); ++i) {
      info_[compute_order_[compute_order_.size() - 1 - i]].bwd_ordinal = static_cast<int>(i);
    }
    // Activations saved for backward, spread over each layer's nodes by output size (Korthikanti
    // counts per layer; the timeline needs them per node). Full recompute keeps only the layer
    // input, i.e. everything at the layer's first node.
    const bool full = in_.workload.recompute == Recompute::kFull;
    for (const Node* n : compute_order_) {
      NodeInfo& info = info_[n];
      Result<double> out = n->shape ? Numel(*n->shape, values_) : Result<double>(0.0);
      const double w = out.ok() ? *out : 0;
      info.activation_bytes = w;  // weight for now
      if (info.layer >= 0) {
        layer_weight[info.layer] += full && n != layer_first_[info.layer] ? 0 : w;
      } else if (info.fwd_ordinal > 0) {
        output_weight += w;  // final norm, lm_head, loss (the embedding saves nothing of note)
      }
    }
    for (const Node* n : compute_order_) {
      NodeInfo& info = info_[n];
      double total = 0, weight = 0;
      if (info.layer >= 0) {
        const size_t l = static_cast<size_t>(info.layer);
        total = l < memory_.layer_activations_bytes.size() ? memory_.layer_activations_bytes[l] : 0;
        weight = layer_weight[info.layer];
        if (full && n != layer_first_[info.layer]) info.activation_bytes = 0;
      } else if (info.fwd_ordinal > 0) {
        total = memory_.output_activations_bytes;
        weight = output_weight;
      }
      info.activation_bytes = weight > 0 ? total * info.activation_bytes / weight : 0;
    }
    return Status::Ok();
  }

  double ParamBytes(const Node& gather) {
    Result<double> e = gather.shape ? Numel(*gather.shape, values_) : Result<double>(0.0);
    return e.ok() ? bpe_ * *e : 0;
  }

  // Readers of a ZeRO-3 gather in graph order (its users but the release).
  std::vector<const Node*> Readers(const Node& gather) {
    std::vector<const Node*> r;
    for (const Node* u : gather.users) {
      if (u->op != ops::kRelease) r.push_back(u);
    }
    std::sort(r.begin(), r.end(), [&](const Node* a, const Node* b) {
      return info_[a].position < info_[b].position;
    });
    return r;
  }

  int Add(Task t) {
    program_.tasks.push_back(std::move(t));
    return static_cast<int>(program_.tasks.size()) - 1;
  }

  // The compute ordinal after which a gather for a reader at `ordinal` is issued: DeepSpeed's
  // prefetch fetches ahead while the parameters in flight fit stage3_prefetch_bucket_size and the
  // gathered ones max_live_parameters; without prefetch it waits for the previous module.
  // `elements_by_reader` holds, per reader ordinal, the elements gathered for it.
  // Elements of the largest single tensor a gather fetches: the experts glob is E/EP x 3 separate
  // weights, which DeepSpeed fetches module by module.
  double LargestTensor(const Node& gather) { return ParamBytes(gather) / bpe_ / FetchedTensors(gather); }
  double FetchedTensors(const Node& gather) {
    if (gather.param.ends_with("*") && gather.shape && gather.shape->size() == 4) {
      Result<double> a = gather.shape->at(0).EvaluateReal(values_), b = gather.shape->at(1).EvaluateReal(values_);
      if (a.ok() && b.ok() && *a * *b > 0) return *a * *b;
    }
    return 1.0;
  }

  // Releases before 0.6.0 fetch the module about to run with a blocking all-gather
  // (_allgather_param then torch.cuda.synchronize()): no prefetch, on the critical path.
  bool SynchronousFetch() const { return in_.zero.stage == 3 && Zero3SynchronousFetch(in_); }

  int IssueOrdinal(int ordinal, const std::map<int, double>& elements_by_reader,
                   const std::map<int, double>& largest_by_reader) {
    // PartitionedParameterCoordinator: when a module is fetched, the parameters of the modules
    // after it are prefetched in order while fewer than prefetch_bucket_size elements are in
    // flight (so the one that crosses the limit still goes). A gather can therefore be issued at
    // the fetch of module q when the parameters gathered between q and its reader stay below the
    // bucket, and the gathered ones (with its own) within max_live_parameters.
    auto own_it = largest_by_reader.find(ordinal);
    const double own = own_it == largest_by_reader.end() ? 0 : own_it->second;
    double between = 0;
    int start = ordinal;
    for (auto it = elements_by_reader.lower_bound(ordinal); it != elements_by_reader.begin();) {
      --it;
      if (between >= in_.zero.prefetch_bucket_size || between + own > in_.zero.max_live_parameters) break;
      start = it->first;
      between += it->second;
    }
    return start - 1;
  }

  Status Forward(int m) {
    fwd_.clear();
    offload_task_.clear();
    fwd_by_ordinal_.assign(compute_order_.size(), -1);
    std::map<int, double> gather_elements, largest;  // by first reader's forward ordinal
    for (const Node* gth : gathers_) {
      auto readers = Readers(*gth);
      if (readers.empty()) continue;
      const int o = info_[readers.front()].fwd_ordinal;
      gather_elements[o] += ParamBytes(*gth) / bpe_;
      largest[o] = std::max(largest[o], LargestTensor(*gth));
    }
    for (const Node* n : g_) {
      const NodeInfo& info = info_[n];
      std::vector<int> deps;
      for (const Node* a : n->args) AddDeps(deps, fwd_[a]);
      if (IsCompute(*n)) {
        Task t{.name = "fwd " + n->name, .phase = Phase::kForward, .micro = m, .layer = info.layer};
        t.compute_seconds = info.forward_seconds;
        t.deps = deps;
        t.alloc_at_end = info.activation_bytes;
        const bool layer_input = info.layer >= 0 && layer_first_[info.layer] == n;
        // PR #8282's engine holds at most two GPU tensors whose copy is still running
        // (max_fwd_stash_count=2): a layer waits for the copy of the layer two before it.
        if (layer_input && offload_checkpoints_ && in_.checkpointing.async_copy) {
          auto it = offload_task_.find(info.layer - 2);
          if (it != offload_task_.end()) t.deps.push_back(it->second);
        }
        // ZeRO-3: the last reader frees the gathered parameter.
        for (const Node* a : n->args) {
          if (IsParamGather(*a) && Readers(*a).back() == n) t.alloc_at_end -= ParamBytes(*a);
        }
        const int id = Add(std::move(t));
        fwd_[n] = {id};
        fwd_by_ordinal_[static_cast<size_t>(info.fwd_ordinal)] = id;
        if (layer_input && Offloaded(info.layer)) {
          Task c{.name = "offload layer " + std::to_string(info.layer) + " input", .phase = Phase::kForward,
                 .micro = m, .layer = info.layer,
                 .stream = in_.checkpointing.async_copy ? kDeviceToHostStream : kComputeStream};
          c.host_copy = true;
          c.compute_seconds = info.activation_bytes / pcie_;
          c.deps = {id};
          c.alloc_at_end = -info.activation_bytes;  // the device copy is freed once on the host
          offload_task_[info.layer] = Add(std::move(c));
        }
      } else if (IsParamGather(*n)) {
        auto readers = Readers(*n);
        if (readers.empty()) continue;
        const int reader = info_[readers.front()].fwd_ordinal;
        const int issue = SynchronousFetch() ? reader - 1 : IssueOrdinal(reader, gather_elements, largest);
        Result<int> id = AddCollective(*n, false, m, Phase::kForward,
                                       issue >= 0 ? std::vector<int>{fwd_by_ordinal_[issue]} : deps);
        if (!id.ok()) return id.error();
        if (SynchronousFetch()) program_.tasks[*id].stream = kComputeStream;
        program_.tasks[*id].alloc_at_start = ParamBytes(*n);
        fwd_[n] = {*id};
      } else if (graph::IsCollective(n->op) && !graph::IsGradientReduction(*n)) {
        Result<int> id = AddCollective(*n, false, m, Phase::kForward, deps);
        if (!id.ok()) return id.error();
        fwd_[n] = *id >= 0 ? std::vector<int>{*id} : deps;
      } else {
        fwd_[n] = deps;
      }
    }
    return Status::Ok();
  }

  // A collective task for node `n` in one direction; -1 when it moves nothing that way.
  Result<int> AddCollective(const Node& n, bool backward, int m, Phase phase, std::vector<int> deps) {
    std::optional<GroupKind> kind = GroupKindFromName(n.group);
    if (!kind) return Error{"%" + n.name + ": unknown process group '" + n.group + "'"};
    if (!in_.plan->groups.groups.contains(*kind)) {
      return Error{"%" + n.name + ": the plan has no " + std::string(GroupKindName(*kind)) + " groups"};
    }
    auto cost = NodeCollectiveCost(n, backward, values_, bpe_,
                                   static_cast<int>(GroupSizeOf(*in_.plan, *kind)));
    if (!cost.ok()) return cost.error();
    if (!cost->has_value()) return -1;
    Task t{.name = std::string(backward ? "bwd " : "fwd ") + n.name, .phase = phase, .micro = m,
           .layer = info_[&n].layer};
    t.collective = true;
    t.kind = (*cost)->kind;
    t.group = (*cost)->group;
    t.bytes = (*cost)->bytes;
    if (IsParamGather(n)) {
      const double elements = t.bytes / bpe_;
      t.bytes = elements * wire_.param_gather;
      if (in_.zero.stage == 3) {
        if (in_.zero.quantized_weights) t.compute_seconds = QuantizationKernelSeconds(in_, elements);
        // Releases before 0.5.5 gather through torch.distributed's list form: one copy kernel per
        // group member around each call (comm_plan.h Zero3ListCollectives).
        if (Zero3ListCollectives(in_)) {
          t.compute_seconds += static_cast<double>(GroupSizeOf(*in_.plan, *kind)) * in_.cluster->gpu.kernel_overhead_seconds;
        }
        if (in_.zero.mics_shard_size > 0) {
          t.block = in_.zero.mics_shard_size;  // MiCS gathers inside the shard group
        } else if (in_.zero.hpz_partition_size > 1 && (phase == Phase::kBackward || m > 0)) {
          t.block = in_.zero.hpz_partition_size;  // hpZ: the secondary partition, after the first forward
        }
      }
    }
    t.stream = StreamOf(t.group);
    t.deps = std::move(deps);
    // Eager ZeRO-3's hooks: the host's work per fetched module holds the gather stream before the
    // gather goes (cluster host.zero3_fetch_seconds; zero_gather_comm.cc prices it the same way).
    const double fetch_host = in_.cluster->host.zero3_fetch_seconds;
    if (IsParamGather(n) && in_.zero.stage == 3 && !in_.zero.deepcompile && fetch_host > 0) {
      Task h{.name = "host fetch " + n.name, .phase = phase, .micro = m, .layer = t.layer, .stream = t.stream};
      h.compute_seconds = fetch_host * FetchedTensors(n);
      h.deps = std::move(t.deps);
      t.deps = {Add(std::move(h))};
    }
    if (IsAllToAll(n)) {  // send and receive buffers live for the call
      t.alloc_at_start = memory_.all_to_all_bytes;
      t.alloc_at_end = -memory_.all_to_all_bytes;
    }
    return Add(std::move(t));
  }

  struct Bucket {
    double elements = 0;
    std::vector<int> deps;
    int count = 0;
  };

  bool ReducesIn(int m) const { return in_.zero.stage >= 2 || m == micro_steps_ - 1; }
  // ZeRO-0 (engine all-reduce) and ZeRO-1 without overlap_comm reduce after backward; ZeRO-2/3 and
  // ZeRO-1 with overlap_comm as buckets fill during backward.
  // DeepCompile's ZeRO-1 reduces inside the boundary micro-step's backward graph whatever
  // overlap_comm says (reduce_grad after each gradient, z1.cpp).
  bool ReducesDuringBackward() const {
    return in_.zero.stage >= 2 || (in_.zero.stage == 1 && (in_.zero.overlap_comm || in_.zero.deepcompile));
  }

  // ZeRO-3 of releases before 0.5.5: one list-form reduce_scatter per gradient, its n input
  // copies on top (torch.distributed's reduce_scatter over a list).
  bool ListReduceScatter(CollectiveKind kind) const {
    return in_.zero.stage == 3 && kind == CollectiveKind::kReduceScatter && Zero3ListCollectives(in_) &&
           !in_.zero.quantized_gradients && in_.zero.mics_shard_size <= 0;
  }

  void FlushBucket(const std::string& key, GroupKind group, CollectiveKind kind, int stream, int m,
                   std::vector<int> extra_deps = {}) {
    Bucket& b = buckets_[key];
    if (b.elements <= 0) return;
    Task t{.name = std::string(CollectiveKindName(kind)) + " " + std::string(GroupKindName(group)) +
                   " grad bucket " + std::to_string(b.count++),
           .phase = Phase::kBackward, .micro = m, .stream = stream};
    t.collective = true;
    t.kind = kind;
    t.group = group;
    t.bytes = (group == GroupKind::kTp ? bpe_ : wire_.gradient) * b.elements;
    t.deps = b.deps;
    AddDeps(t.deps, extra_deps);
    if (ListReduceScatter(kind)) {
      t.compute_seconds = static_cast<double>(GroupSizeOf(*in_.plan, group)) * in_.cluster->gpu.kernel_overhead_seconds;
    }
    const int64_t gpn = std::max(in_.cluster->gpus_per_node, 1);
    const bool zero3_scatter = in_.zero.stage == 3 && kind == CollectiveKind::kReduceScatter;
    if (zero3_scatter && in_.zero.quantized_gradients && in_.plan->sizes.world > gpn) {
      // qgZ: int4 all-to-all inside the node, then across nodes (all_to_all_quant_reduce).
      const double elements = b.elements;
      Task inter = t;
      t.name = "qgz intra-node all_to_all grad bucket " + std::to_string(b.count - 1);
      t.kind = inter.kind = CollectiveKind::kAllToAll;
      t.block = gpn;
      t.bytes = 0.5 * elements;
      t.compute_seconds = QuantizationKernelSeconds(in_, elements);
      const int first = Add(std::move(t));
      inter.name = "qgz inter-node all_to_all grad bucket " + std::to_string(b.count - 1);
      inter.block = gpn;
      inter.strided = true;
      inter.bytes = 0.5 * elements / static_cast<double>(std::min<int64_t>(gpn, in_.plan->sizes.world));
      inter.deps = {first};
      reductions_.push_back(Add(std::move(inter)));
    } else if (zero3_scatter && in_.zero.mics_shard_size > 0) {
      // MiCS: reduce-scatter in the shard group; at the boundary the shard all-reduced across
      // the replicas (mics.py allreduce_mics_shard_grads).
      t.block = in_.zero.mics_shard_size;
      Task replicas = t;
      const int scatter = Add(std::move(t));
      reductions_.push_back(scatter);
      if (m == micro_steps_ - 1) {
        replicas.name = "all_reduce mics replicas grad bucket " + std::to_string(b.count - 1);
        replicas.kind = CollectiveKind::kAllReduce;
        replicas.strided = true;
        replicas.bytes /= static_cast<double>(in_.zero.mics_shard_size);
        replicas.deps = {scatter};
        reductions_.push_back(Add(std::move(replicas)));
      }
    } else {
      reductions_.push_back(Add(std::move(t)));
    }
    b.elements = 0;
    b.deps.clear();
  }

  void GradientReady(const std::string& param, int task, int m) {
    auto it = grads_.find(param);
    if (it == grads_.end()) return;
    const GradPath& path = it->second;
    if (path.tp_hook != nullptr) {
      // dist.all_reduce inside the hook: the compute stream waits for it (auto_tp.py
      // register_replicated_grad_hooks), every micro-step.
      Task t{.name = "all_reduce tp grad_allreduce hook " + path.tp_hook->name, .phase = Phase::kBackward,
             .micro = m, .stream = kComputeStream};
      t.collective = true;
      t.kind = CollectiveKind::kAllReduce;
      t.group = GroupKind::kTp;
      t.bytes = bpe_ * path.elements;
      t.deps = {task};
      Add(std::move(t));
    }
    if (!ReducesIn(m)) return;
    if (path.tp_average != nullptr && m == micro_steps_ - 1) {
      Bucket& b = buckets_["tp_average"];
      b.elements += path.elements;
      b.deps.push_back(task);
    }
    if (path.reduce == nullptr) return;
    std::optional<GroupKind> group = GroupKindFromName(path.reduce->group);
    if (!group) return;
    const CollectiveKind kind =
        path.reduce->op == ops::kReduceScatter ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
    const std::string key = path.reduce->group;
    Bucket& b = buckets_[key];
    b.elements += path.elements;
    if (!ReducesDuringBackward()) return;  // reduced after the backward pass
    b.deps.push_back(task);
    // Releases before 0.5.5 reduce-scatter each ZeRO-3 gradient on its own through the list form
    // (comm_plan.h Zero3ListCollectives), not in reduce_bucket_size buckets.
    const bool per_parameter = ListReduceScatter(kind);
    if (b.elements >= in_.zero.reduce_bucket_size || per_parameter) {
      // ZeRO-2 without overlap_comm reduces inside the backward hook, on the compute stream.
      const int stream = in_.zero.overlap_comm || in_.zero.stage == 1 || in_.zero.deepcompile ? ReduceStreamOf(*group)
                                                                                           : kComputeStream;
      FlushBucket(key, *group, kind, stream, m);
    }
    reduce_kind_[key] = {*group, kind};
  }

  // Recompute before the first backward op of a layer (full) or of attention (selective): the
  // recompute task (after the host reload of an offloaded input) becomes the backward op's
  // dependency. Returns the deps the backward op then waits on.
  std::vector<int> RecomputeBefore(const Node* n, const NodeInfo& info, std::vector<int> deps, int m,
                                   std::map<int, int>& recompute_task) {
    const Recompute rc = in_.workload.recompute;
    if (rc == Recompute::kFull && info.layer >= 0 && layer_last_[info.layer] == n) {
      std::vector<int> recompute_deps = deps;
      if (Offloaded(info.layer)) {
        // The input comes back before the layer is recomputed: async, prefetched while the
        // layer above is recomputed; blocking, on the compute stream just before.
        const double bytes = info_[layer_first_[info.layer]].activation_bytes;
        const bool async = in_.checkpointing.async_copy;
        Task c{.name = "reload layer " + std::to_string(info.layer) + " input", .phase = Phase::kBackward,
               .micro = m, .layer = info.layer, .stream = async ? kHostToDeviceStream : kComputeStream};
        c.host_copy = true;
        c.compute_seconds = bytes / pcie_;
        c.alloc_at_start = bytes;
        auto above = recompute_task.find(info.layer + 1);
        c.deps = async && above != recompute_task.end() ? std::vector<int>{above->second} : deps;
        recompute_deps.push_back(Add(std::move(c)));
      }
      Task r{.name = "recompute layer " + std::to_string(info.layer), .phase = Phase::kBackward,
             .micro = m, .layer = info.layer};
      r.compute_seconds = layer_seconds_[info.layer];
      r.deps = recompute_deps;
      r.alloc_at_start = memory_.recompute_working_bytes;
      recompute_task[info.layer] = Add(std::move(r));
      deps = {recompute_task[info.layer]};
    } else if (rc == Recompute::kSelective && n->op == ops::kSdpa) {
      Task r{.name = "recompute " + n->name, .phase = Phase::kBackward, .micro = m, .layer = info.layer};
      r.compute_seconds = info.forward_seconds;
      r.deps = deps;
      deps = {Add(std::move(r))};
    }
    return deps;
  }

  // The buckets still open at the end of backward; ZeRO-0/1 without overlap reduce everything now.
  void FlushOpenBuckets(int m, int last) {
    if (ReducesIn(m)) {
      for (auto& [key, b] : buckets_) {
        if (key == "tp_average") continue;
        auto k = reduce_kind_.find(key);
        std::optional<GroupKind> group = GroupKindFromName(key);
        if (!group) continue;
        const CollectiveKind kind = k != reduce_kind_.end() ? k->second.second
                                    : in_.zero.stage >= 2 ? CollectiveKind::kReduceScatter
                                                          : CollectiveKind::kAllReduce;
        const int stream = in_.zero.overlap_comm || in_.zero.stage <= 1 ? ReduceStreamOf(*group) : kComputeStream;
        if (!ReducesDuringBackward()) {
          // One engine all-reduce pass after backward, in reduce_bucket_size pieces.
          const double total = b.elements;
          b.elements = 0;
          for (double left = total; left > 0; left -= in_.zero.reduce_bucket_size) {
            b.elements = std::min(left, in_.zero.reduce_bucket_size);
            FlushBucket(key, *group, kind, stream, m, {last});
          }
        } else {
          FlushBucket(key, *group, kind, stream, m, {last});
        }
      }
      if (m == micro_steps_ - 1 && buckets_["tp_average"].elements > 0) {
        // AutoEP folding: replicated gradients AVERAGEd over tp at the boundary (auto_ep_folding.py).
        Bucket& b = buckets_["tp_average"];
        const double total = b.elements;
        b.elements = 0;
        for (double left = total; left > 0; left -= in_.zero.reduce_bucket_size) {
          b.elements = std::min(left, in_.zero.reduce_bucket_size);
          FlushBucket("tp_average", GroupKind::kTp, CollectiveKind::kAllReduce, ReduceStreamOf(GroupKind::kTp), m,
                      {last});
        }
      }
    }
  }

  Status Backward(int m) {
    bwd_.clear();
    std::vector<int> bwd_by_ordinal(compute_order_.size(), -1);
    std::map<const Node*, int> bwd_gather;
    std::map<int, double> gather_elements, largest;  // by first backward reader's backward ordinal
    for (const Node* gth : gathers_) {
      auto readers = Readers(*gth);
      if (readers.empty()) continue;
      const int o = info_[readers.back()].bwd_ordinal;
      gather_elements[o] += ParamBytes(*gth) / bpe_;
      largest[o] = std::max(largest[o], LargestTensor(*gth));
    }
    std::map<int, int> recompute_task;  // layer -> task
    int last = -1;
    for (Node* n = g_.back(); n != nullptr; n = n->prev()) {
      const NodeInfo& info = info_[n];
      std::vector<int> deps;
      bool loss = false;
      for (const Node* u : n->users) {
        if (u->op == ops::kOutput) loss = true;
        if (u->op == ops::kRelease || graph::IsGradientReduction(*u)) continue;
        AddDeps(deps, bwd_[u]);
      }
      if (loss) AddDeps(deps, fwd_[n]);
      if (IsCompute(*n)) {
        deps = RecomputeBefore(n, info, std::move(deps), m, recompute_task);
        // ZeRO-3: gather again before the first backward use, prefetched like forward.
        for (const Node* a : n->args) {
          if (!IsParamGather(*a)) continue;
          auto readers = Readers(*a);
          if (!bwd_gather.contains(a)) {
            const int reader = info_[readers.back()].bwd_ordinal;
            const int issue =
                SynchronousFetch() ? reader - 1 : IssueOrdinal(reader, gather_elements, largest);
            Result<int> id = AddCollective(*a, false, m, Phase::kBackward,
                                           issue >= 0 ? std::vector<int>{bwd_by_ordinal[issue]} : deps);
            if (!id.ok()) return id.error();
            program_.tasks[*id].name = "bwd " + a->name;
            if (SynchronousFetch()) program_.tasks[*id].stream = kComputeStream;
            program_.tasks[*id].alloc_at_start = ParamBytes(*a);
            bwd_gather[a] = *id;
          }
          deps.push_back(bwd_gather[a]);
        }
        Task t{.name = "bwd " + n->name, .phase = Phase::kBackward, .micro = m, .layer = info.layer};
        t.compute_seconds = info.backward_seconds;
        t.deps = deps;
        t.alloc_at_end = -info.activation_bytes;
        if (in_.workload.recompute == Recompute::kFull && info.layer >= 0 && layer_first_[info.layer] == n) {
          t.alloc_at_end -= memory_.recompute_working_bytes;
        }
        for (const Node* a : n->args) {
          if (IsParamGather(*a) && Readers(*a).front() == n) t.alloc_at_end -= ParamBytes(*a);
        }
        const int id = Add(std::move(t));
        bwd_[n] = {id};
        bwd_by_ordinal[static_cast<size_t>(info.bwd_ordinal)] = id;
        last = id;
        // The first forward reader of a parameter is the last to add to its gradient.
        if (!n->param.empty() && first_reader_of(n->param) == n) GradientReady(n->param, id, m);
      } else if (graph::IsCollective(n->op) && !IsParamGather(*n) && !graph::IsGradientReduction(*n)) {
        Result<int> id = AddCollective(*n, true, m, Phase::kBackward, deps);
        if (!id.ok()) return id.error();
        bwd_[n] = *id >= 0 ? std::vector<int>{*id} : deps;
      } else {
        bwd_[n] = deps;
      }
    }
    FlushOpenBuckets(m, last);
    last_backward_ = last;
    return Status::Ok();
  }

  const Node* first_reader_of(const std::string& param) {
    auto it = first_reader_.find(param);
    if (it != first_reader_.end()) return it->second;
    const Node* first = nullptr;
    for (const Node* n : compute_order_) {
      if (n->param == param) {
        first = n;
        break;
      }
    }
    first_reader_[param] = first;
    return first;
  }

  void Optimizer() {
    const int m = micro_steps_ - 1;
    std::vector<int> deps = reductions_;
    if (last_backward_ >= 0) deps.push_back(last_backward_);
    Task t{.name = "optimizer step", .phase = Phase::kOptimizer, .micro = m};
    double fwd = 0;
    for (const auto& [layer, s] : layer_seconds_) fwd += s;
    const OffloadTime offload = EstimateOffloadTime(in_, fwd, 2 * fwd);
    if (in_.zero.offload_optimizer) {
      // CPU Adam and the PCIe copies (sim/cost/offload_time.h), on the host while the GPU waits.
      t.name = "optimizer step (CPU offload)";
      t.compute_seconds = offload.total_seconds();
    } else {
      // The fused GPU optimizer streams the rank's partition (the closed form's figure), after
      // DeepCompile's offload_opt_states brought the states back (what its copies left exposed).
      t.compute_seconds = GpuOptimizerStepSeconds(in_) + offload.optimizer_states_copy_seconds;
    }
    t.deps = deps;
    // The gradients the step flattens and casts to fp32 (memory_model.cc).
    t.alloc_at_start = memory_.optimizer_step_transient_bytes;
    t.alloc_at_end = -memory_.optimizer_step_transient_bytes;
    const int opt = Add(std::move(t));
    if (in_.zero.stage == 1 || in_.zero.stage == 2) {
      // Each rank stepped its partition; the updated 16-bit parameters are all-gathered.
      std::map<std::string, double> elements;  // family group -> local parameter elements
      for (const auto& [param, path] : grads_) {
        if (path.reduce != nullptr) elements[path.reduce->group] += path.elements;
      }
      for (const auto& [group_name, total] : elements) {
        std::optional<GroupKind> group = GroupKindFromName(group_name);
        if (!group) continue;
        int count = 0;
        for (double left = total; left > 0; left -= in_.zero.allgather_bucket_size) {
          Task g{.name = "all_gather " + group_name + " params bucket " + std::to_string(count++),
                 .phase = Phase::kOptimizer, .micro = m, .stream = StreamOf(*group)};
          g.collective = true;
          g.kind = CollectiveKind::kAllGather;
          g.group = *group;
          g.bytes = bpe_ * std::min(left, in_.zero.allgather_bucket_size);
          g.deps = {opt};
          Add(std::move(g));
        }
      }
    }
  }

  const graph::Graph& g_;
  const SimInput& in_;
  const ProgramOptions& o_;
  Program program_;
  int micro_steps_ = 1;
  double bpe_ = 2;
  WireBytes wire_;
  double pcie_ = 0;
  bool offload_checkpoints_ = false;
  std::map<int, int> offload_task_;  // layer -> its input's copy to the host, this micro-step
  // Whether a layer's checkpointed input goes to the host: all of them, but the last with PR
  // #8282's keep-last.
  bool Offloaded(int layer) const {
    if (!offload_checkpoints_ || layer < 0) return false;
    const int last = layer_first_.empty() ? -1 : layer_first_.rbegin()->first;
    return !(in_.checkpointing.keep_last_on_device() && layer == last);
  }
  KernelRates rates_;
  ShardShape shard_;
  MemoryReport memory_;
  graph::SymbolValues values_;
  std::unordered_map<const Node*, NodeInfo> info_;
  std::vector<const Node*> compute_order_;
  std::vector<const Node*> gathers_;
  std::map<int, double> layer_seconds_;
  std::map<int, const Node*> layer_first_, layer_last_;
  std::map<std::string, GradPath> grads_;
  std::map<std::string, const Node*> first_reader_;
  std::unordered_map<const Node*, std::vector<int>> fwd_, bwd_;
  std::vector<int> fwd_by_ordinal_;
  std::map<std::string, Bucket> buckets_;
  std::map<std::string, std::pair<GroupKind, CollectiveKind>> reduce_kind_;
  std::vector<int> reductions_;
  int last_backward_ = -1;
};

}  // namespace

std::string StreamName(int stream) {
  if (stream == kComputeStream) return "compute";
  if (stream == kDeviceToHostStream) return "copy d2h";
  if (stream == kHostToDeviceStream) return "copy h2d";
  if (stream > kGroupKinds) return "reduce " + std::string(GroupKindName(static_cast<GroupKind>(stream - 1 - kGroupKinds)));
  return "comm " + std::string(GroupKindName(static_cast<GroupKind>(stream - 1)));
}

Result<Program> BuildProgram(const graph::Graph& graph, const SimInput& input, const ProgramOptions& options) {
  if (input.plan == nullptr || input.model == nullptr || input.cluster == nullptr) {
    return Error{"the schedule needs a plan, a model and a cluster"};
  }
  return Builder(graph, input, options).Build();
}

}  // namespace dsp::sim::schedule
