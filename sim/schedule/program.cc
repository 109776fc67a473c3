// SPDX-License-Identifier: Apache-2.0
// BuildProgram: the graph's analysis (per-node cost, layers, gradient paths, activations spread
// over nodes) and where eager ZeRO-3 issues each gather; the passes and gradients are
// program_passes.cc and program_gradients.cc.
#include "sim/schedule/program.h"

#include "sim/schedule/program_builder.h"

#include <algorithm>
#include <map>
#include <set>

#include "sim/plan/symbols.h"
#include "sim/schedule/op_cost.h"

namespace dsp::sim::schedule::program_detail {

Result<Program> Builder::Build() {
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

Status Builder::BindValues() {
  values_ = PlanSymbolValues(in_);
  const Cluster& c = *in_.cluster;
  rates_ = KernelRatesOf(c, in_.engine.attention);
  if (rates_.matmul_flops_per_second <= 0 || rates_.hbm_bytes_per_second <= 0) {
    return Error{"the cluster has no GPU peak FLOPs or HBM bandwidth"};
  }
  shard_ = ShardShapeOf(in_);
  return Status::Ok();
}

Status Builder::Analyse() {
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

double Builder::ParamBytes(const Node& gather) {
  Result<double> e = gather.shape ? Numel(*gather.shape, values_) : Result<double>(0.0);
  return e.ok() ? bpe_ * *e : 0;
}

std::vector<const Node*> Builder::Readers(const Node& gather) {
  std::vector<const Node*> r;
  for (const Node* u : gather.users) {
    if (u->op != ops::kRelease) r.push_back(u);
  }
  std::sort(r.begin(), r.end(), [&](const Node* a, const Node* b) {
    return info_[a].position < info_[b].position;
  });
  return r;
}

int Builder::Add(Task t) {
  program_.tasks.push_back(std::move(t));
  return static_cast<int>(program_.tasks.size()) - 1;
}

double Builder::FetchedTensors(const Node& gather) {
  if (gather.param.ends_with("*") && gather.shape && gather.shape->size() == 4) {
    Result<double> a = gather.shape->at(0).EvaluateReal(values_), b = gather.shape->at(1).EvaluateReal(values_);
    if (a.ok() && b.ok() && *a * *b > 0) return *a * *b;
  }
  return 1.0;
}

void Builder::GatherElementsByReader(bool backward, std::map<int, double>& elements,
                                     std::map<int, double>& largest) {
  for (const Node* gth : gathers_) {
    auto readers = Readers(*gth);
    if (readers.empty()) continue;
    const int o = backward ? info_[readers.back()].bwd_ordinal : info_[readers.front()].fwd_ordinal;
    elements[o] += ParamBytes(*gth) / bpe_;
    largest[o] = std::max(largest[o], LargestTensor(*gth));
  }
}

int Builder::IssueOrdinal(int ordinal, const std::map<int, double>& elements_by_reader,
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

const Node* Builder::first_reader_of(const std::string& param) {
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

bool Builder::Offloaded(int layer) const {
  if (!offload_checkpoints_ || layer < 0) return false;
  const int last = layer_first_.empty() ? -1 : layer_first_.rbegin()->first;
  return !(in_.checkpointing.keep_last_on_device() && layer == last);
}

}  // namespace dsp::sim::schedule::program_detail

namespace dsp::sim::schedule {

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
  return program_detail::Builder(graph, input, options).Build();
}

}  // namespace dsp::sim::schedule
