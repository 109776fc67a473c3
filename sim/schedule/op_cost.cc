// SPDX-License-Identifier: Apache-2.0
#include "sim/schedule/op_cost.h"

#include <algorithm>
#include <string>

namespace dsp::sim::schedule {
namespace {

namespace ops = graph::ops;

// Real-valued: an expected size (rows per expert under uniform routing) may be fractional.
Result<double> Dim(const graph::SymExpr& e, const graph::SymbolValues& values) {
  return e.EvaluateReal(values);
}

Result<double> NumelOf(const graph::Node& n, const graph::SymbolValues& values) {
  if (!n.shape) return 0.0;
  return Numel(*n.shape, values);
}

Error Blame(const graph::Node& n, const Error& e) { return Error{"%" + n.name + ": " + e.message}; }

}  // namespace

Result<double> Numel(const graph::Shape& shape, const graph::SymbolValues& values) {
  double n = 1;
  for (const graph::SymExpr& d : shape) {
    Result<double> v = Dim(d, values);
    if (!v.ok()) return v.error();
    n *= *v;
  }
  return n;
}

std::optional<GroupKind> GroupKindFromName(std::string_view name) {
  if (name == "tp") return GroupKind::kTp;
  if (name == "sp") return GroupKind::kSp;
  if (name == "ep") return GroupKind::kEp;
  if (name == "dp") return GroupKind::kDp;
  if (name == "sp_dp") return GroupKind::kSpDp;
  if (name == "edp") return GroupKind::kEdp;
  return std::nullopt;
}

Result<ComputeCost> NodeComputeCost(const graph::Node& n, const graph::SymbolValues& values,
                                    double bpe) {
  if (n.op == ops::kPlaceholder || n.op == ops::kOutput || n.op == ops::kRelease ||
      graph::IsCollective(n.op)) {
    return ComputeCost{};
  }
  Result<double> out = NumelOf(n, values);
  if (!out.ok()) return Blame(n, out.error());
  double param = 0;
  if (n.param_shape) {
    Result<double> p = Numel(*n.param_shape, values);
    if (!p.ok()) return Blame(n, p.error());
    param = *p;
  }
  double in = 0;
  for (const graph::Node* a : n.args) {
    if (a->op == ops::kAllGather && !a->param.empty()) continue;  // the weight, counted as param
    Result<double> v = NumelOf(*a, values);
    if (!v.ok()) return Blame(n, v.error());
    in += *v;
  }
  ComputeCost c;
  c.bytes = bpe * (in + param + *out);
  if ((n.op == ops::kLinear || n.op == ops::kRouter) && n.param_shape && n.param_shape->size() == 2) {
    Result<double> in_features = Dim((*n.param_shape)[1], values);
    if (!in_features.ok()) return Blame(n, in_features.error());
    c.flops = 2 * *out * *in_features;
  } else if (n.op == ops::kExperts && n.param_shape && n.param_shape->size() == 4) {
    // [E_local, 3, FE, H]: each routed row goes through three FE x H matrices.
    Result<double> width = Dim((*n.param_shape)[2], values);
    if (!width.ok()) return Blame(n, width.error());
    const bool dispatched = !n.args.empty() && n.args[0]->op == ops::kDispatch;
    double rows_times_h = *out;  // [E/EP, rows, H] after dispatch: every row is one assignment
    if (!dispatched) {
      // [B, S, H] without AutoEP: each token visits K experts.
      auto k = values.find("K");
      rows_times_h *= k == values.end() ? 1.0 : static_cast<double>(k->second);
    }
    c.flops = 2 * rows_times_h * 3 * *width;
  } else if (n.op == ops::kSdpa && n.args.size() >= 2 && n.args[0]->shape &&
             n.args[0]->shape->size() == 4 && n.args[1]->shape && n.args[1]->shape->size() == 4 &&
             n.shape && !n.shape->empty()) {
    // QK^T over Dq and AV over Dv per head, in the full (non-causal) square convention:
    // 2 x Sq x Sk x (Dq + Dv) per head (MLA: Dq 192, Dv 128). A sliding window w is charged
    // 2w - w^2/Sk keys per query, a chunk c is charged c (the causal half of a chunk's square),
    // as sim/cost/flops.cc charges them.
    Result<double> q = Numel(*n.args[0]->shape, values);
    Result<double> sk = Dim((*n.args[1]->shape)[2], values);
    Result<double> dq = Dim(n.args[0]->shape->back(), values);
    Result<double> dv = Dim(n.shape->back(), values);
    for (const Result<double>* r : {&q, &sk, &dq, &dv}) {
      if (!r->ok()) return Blame(n, r->error());
    }
    double keys = *sk;
    if (n.window > 0 && static_cast<double>(n.window) < keys) {
      const double w = static_cast<double>(n.window);
      keys = 2 * w - w * w / keys;
    } else if (n.chunk > 0) {
      keys = std::min(keys, static_cast<double>(n.chunk));
    }
    c.flops = 2 * (*q / *dq) * keys * (*dq + *dv);
    // FlashAttention reads q, k, v and writes o; the mask is not materialised per head.
    double qkvo = *out;
    for (size_t i = 0; i < 3 && i < n.args.size(); ++i) {
      Result<double> v = NumelOf(*n.args[i], values);
      if (v.ok()) qkvo += *v;
    }
    c.bytes = bpe * qkvo;
  } else if (n.op == ops::kGatedDeltaRule) {
    // flash-linear-attention's chunked gated delta rule, chunks of C = 64, per value head and
    // token: 2C(2 dk + dv) for the intra-chunk products, 6 dk dv for the state (as sim/cost/flops.cc).
    constexpr double kChunk = 64;
    auto dk = values.find("LKD");
    auto dv = values.find("LVD");
    if (dk == values.end() || dv == values.end() || dv->second <= 0) {
      return Blame(n, Error{"gated_delta_rule needs the LKD and LVD symbols"});
    }
    const double k = static_cast<double>(dk->second), v = static_cast<double>(dv->second);
    c.flops = (*out / v) * (2 * kChunk * (2 * k + v) + 6 * k * v);
  } else if (n.op == ops::kConv1d && n.param_shape && !n.param_shape->empty()) {
    Result<double> kernel = Dim(n.param_shape->back(), values);
    if (!kernel.ok()) return Blame(n, kernel.error());
    c.flops = 2 * *out * *kernel;  // depthwise: one multiply-add per tap and channel
  } else {
    c.flops = *out;  // elementwise: about one operation per output element
  }
  return c;
}

namespace {

// Evaluates the last dimension of a shape (a GEMM's output columns).
Result<double> LastDim(const graph::Shape& shape, const graph::SymbolValues& values) {
  if (shape.empty()) return 1.0;
  return Dim(shape.back(), values);
}

// The attention core of an sdpa node: q [B, Nr, S, Dq] and k [B, Gr, Sk, Dq] give the heads this
// rank holds; the window or chunk the layer's kind.
Result<std::vector<OperatorCost>> SdpaOperators(const graph::Node& n, const graph::SymbolValues& values,
                                                const ModelSpec& model, const ShardShape& shard, const ComputeCost& c) {
  const AttentionKind kind = n.window > 0  ? AttentionKind::kSliding
                             : n.chunk > 0 ? AttentionKind::kChunked
                                           : AttentionKind::kFull;
  Result<double> q_heads = Dim((*n.args[0]->shape)[1], values);
  if (!q_heads.ok()) return Blame(n, q_heads.error());
  if (shard.flash_attention) {
    Result<double> batch = Dim((*n.args[0]->shape)[0], values);
    Result<double> seq = Dim((*n.args[0]->shape)[2], values);
    if (!batch.ok()) return Blame(n, batch.error());
    if (!seq.ok()) return Blame(n, seq.error());
    OperatorCost attn{"attention", c.flops, c.bytes};
    attn.kind = KernelKind::kAttention;
    attn.attention_core = true;
    attn.executed = 0.5;  // the causal half, as sim/cost/flops.cc charges a fused kernel
    attn.attention_shape = FusedAttentionShape(model, kind, shard, *batch, *seq, *q_heads);
    return std::vector<OperatorCost>{attn};
  }
  Result<double> kv_heads = Dim((*n.args[1]->shape)[1], values);
  if (!kv_heads.ok()) return Blame(n, kv_heads.error());
  return AttentionCoreForward(model, kind, shard, *q_heads, *kv_heads);
}

OperatorCost MemoryKernels(std::string_view name, double bytes, double kernels) {
  OperatorCost op{name, 0, bytes};
  op.kind = KernelKind::kMemory;
  op.kernels = kernels;
  return op;
}

}  // namespace

Result<std::vector<OperatorCost>> NodeOperators(const graph::Node& n, const graph::SymbolValues& values,
                                                const ModelSpec& model, const ShardShape& shard) {
  if (n.op == ops::kPlaceholder || n.op == ops::kOutput || n.op == ops::kRelease || graph::IsCollective(n.op)) {
    return std::vector<OperatorCost>{};
  }
  const double bpe = shard.bytes_per_element;
  Result<ComputeCost> c = NodeComputeCost(n, values, bpe);
  if (!c.ok()) return c.error();
  Result<double> out = NumelOf(n, values);
  if (!out.ok()) return Blame(n, out.error());
  const EagerBytes eager = EagerBytesPerElement(model, shard);
  if (n.op == ops::kLinear || n.op == ops::kRouter) {
    Result<double> cols = LastDim(n.shape.value_or(graph::Shape{}), values);
    if (!cols.ok()) return Blame(n, cols.error());
    OperatorCost mm{"linear", c->flops, c->bytes};
    mm.cols = *cols;
    mm.rows = *cols > 0 ? *out / *cols : 0;
    return std::vector<OperatorCost>{mm};
  }
  if (n.op == ops::kExperts && n.param_shape && n.param_shape->size() == 4) {
    // Three GEMMs per local expert ([E_local, 3, FE, H]), each of the expert's rows x H output;
    // transformers 5's grouped_mm runs each projection over every local expert in one kernel.
    Result<double> local = Dim((*n.param_shape)[0], values);
    Result<double> width = Dim((*n.param_shape)[2], values);
    Result<double> h = Dim((*n.param_shape)[3], values);
    for (const Result<double>* r : {&local, &width, &h}) {
      if (!r->ok()) return Blame(n, r->error());
    }
    // NodeComputeCost's 2 x rows x H x 3 x FE gives the rows (assignments) this rank computes.
    const double rows = *width > 0 && *h > 0 ? c->flops / (6.0 * *width * *h) : 0;
    OperatorCost experts{"experts", c->flops, c->bytes};
    experts.cols = *h;
    experts.kernels = shard.hf_eager ? 3 : 3 * *local;
    experts.rows = shard.hf_eager ? rows : rows / std::max(*local, 1.0);
    // act_fn(gate) * up over the rows' expert width and the rows' permutation, as flops.cc's
    // experts_activation and moe_permute.
    return std::vector<OperatorCost>{
        experts, MemoryKernels("experts_activation", rows * *width * eager.activation, eager.activation_kernels),
        MoePermute(rows, *h, *width, shard)};
  }
  if (n.op == ops::kSdpa) {
    if (n.args.size() < 2 || !n.args[0]->shape || !n.args[1]->shape || n.args[0]->shape->size() != 4 ||
        n.args[1]->shape->size() != 4) {
      return Blame(n, Error{"sdpa needs q [B, N, S, D] and k operands"});
    }
    return SdpaOperators(n, values, model, shard, *c);
  }
  if (n.op == ops::kGatedDeltaRule || n.op == ops::kConv1d) {
    OperatorCost op{n.op == ops::kConv1d ? "conv1d" : "linear_attention", c->flops, c->bytes};
    op.kind = n.op == ops::kConv1d ? KernelKind::kMemory : KernelKind::kAttention;
    op.attention_core = n.op == ops::kGatedDeltaRule;
    return std::vector<OperatorCost>{op};
  }
  // Memory-bound kernels: the module's bytes per element where the framework's modules decide them.
  if (n.op == ops::kRmsNorm || n.op == ops::kLayerNorm) {
    // A norm outside the decoder layers (the final one) is outside torch.compile's blocks.
    ShardShape outside_blocks = shard;
    outside_blocks.torch_compile = false;
    const EagerBytes e =
        graph::LayerOfModule(n.module) < 0 ? EagerBytesPerElement(model, outside_blocks) : eager;
    return std::vector<OperatorCost>{MemoryKernels("norm", *out * e.norm, e.norm_kernels)};
  }
  if (n.op == ops::kRotary) {
    // flops.cc's rotary operator covers q and k together: each of the two nodes is half of it.
    return std::vector<OperatorCost>{MemoryKernels("rotary", *out * eager.rotary, eager.rotary_kernels / 2)};
  }
  if (n.op == ops::kCrossEntropy && !n.args.empty()) {
    Result<double> logits = NumelOf(*n.args[0], values);
    if (!logits.ok()) return Blame(n, logits.error());
    return std::vector<OperatorCost>{MemoryKernels("cross_entropy", *logits * eager.loss, eager.loss_kernels)};
  }
  if (n.op == ops::kEmbedding) {
    // A lookup reads the rows it gathers and writes them: not the whole table.
    return std::vector<OperatorCost>{MemoryKernels("embedding", 2.0 * *out * bpe, 1)};
  }
  return std::vector<OperatorCost>{MemoryKernels("elementwise", c->bytes, 1)};
}

Result<std::optional<CollectiveCost>> NodeCollectiveCost(const graph::Node& n, bool backward,
                                                         const graph::SymbolValues& values,
                                                         double bpe, int group_size) {
  if (!graph::IsCollective(n.op)) return std::optional<CollectiveCost>{};
  std::optional<GroupKind> group = GroupKindFromName(n.group);
  if (!group) return Error{"%" + n.name + ": unknown process group '" + n.group + "'"};
  Result<double> out = NumelOf(n, values);
  if (!out.ok()) return Blame(n, out.error());
  CollectiveCost c;
  c.group = *group;
  c.bytes = bpe * *out;
  const bool gradient = graph::IsGradientReduction(n);
  if (gradient) {
    // Runs once, in backward, on the gradient: S is the whole gradient for both kinds (the
    // reduce-scatter input; the node's shape is the output partition).
    if (!backward) return std::optional<CollectiveCost>{};
    double grad = *out;
    if (n.param_shape) {
      Result<double> p = Numel(*n.param_shape, values);
      if (!p.ok()) return Blame(n, p.error());
      grad = *p;
    }
    c.kind = n.op == ops::kReduceScatter ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
    c.bytes = bpe * grad;
    return std::optional<CollectiveCost>{c};
  }
  if (n.op == ops::kCopyToTp) {
    if (!backward) return std::optional<CollectiveCost>{};
    c.kind = CollectiveKind::kAllReduce;
  } else if (n.op == ops::kReduceFromTp) {
    if (backward) return std::optional<CollectiveCost>{};
    c.kind = CollectiveKind::kAllReduce;
  } else if (n.op == ops::kGatherFromTp) {
    if (backward) return std::optional<CollectiveCost>{};  // each rank keeps its slice
    c.kind = CollectiveKind::kAllGather;
  } else if (n.op == ops::kAllToAll || n.op == ops::kDispatch || n.op == ops::kCombine) {
    c.kind = CollectiveKind::kAllToAll;
  } else if (n.op == ops::kAllGather) {
    // A ZeRO-3 parameter gather runs again before backward; the folded restore's backward is an
    // all-reduce of the gathered gradient.
    c.kind = backward && n.param.empty() ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather;
  } else if (n.op == ops::kReduceScatter) {
    c.kind = backward ? CollectiveKind::kAllGather : CollectiveKind::kReduceScatter;
    c.bytes *= group_size;  // S is the input: the output partition times the group
  } else if (n.op == ops::kAllReduce) {
    c.kind = CollectiveKind::kAllReduce;
  }
  return std::optional<CollectiveCost>{c};
}

}  // namespace dsp::sim::schedule
