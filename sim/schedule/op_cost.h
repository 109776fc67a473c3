// SPDX-License-Identifier: Apache-2.0
// The forward work of one graph node on one rank, from its symbolic shapes bound to numbers: the
// FLOPs and HBM bytes a roofline turns into time, or the bytes a collective moves (nccl-tests S).
// The same conventions as sim/cost/flops.h (2mkn per matmul, FlashAttention-style attention touching
// only q, k, v and o, top-k experts only), read off the rewritten graph instead of the model.
#pragma once

#include <optional>
#include <vector>

#include "core/layout/groups.h"
#include "core/util/result.h"
#include "core/model/model_spec.h"
#include "sim/comm/collectives.h"
#include "sim/cost/flops.h"
#include "sim/graph/graph.h"
#include "sim/graph/symbolic.h"

namespace dsp::sim::schedule {

struct ComputeCost {
  double flops = 0;
  double bytes = 0;
};

// FLOPs and bytes of a compute node's forward; zero for placeholders, the output and release.
// Errors: a shape that does not evaluate with `values` (an unbound symbol, an inexact division).
Result<ComputeCost> NodeComputeCost(const graph::Node& node, const graph::SymbolValues& values,
                                    double bytes_per_element);

// The kernels of a compute node's forward as the closed form prices them (sim/cost/flops.h's
// OperatorCost, priced by sim/cost/kernel_time.h): GEMMs with their output tile, the fused
// attention kernel executing the causal half (or, materialized, QK^T, softmax, dropout and AV),
// the embedding lookup, and memory-bound kernels with the bytes and launches of the modules the
// framework trains (EagerBytes: transformers' RMSNorm, rotary and loss). Empty for placeholders,
// the output, release and collectives. Errors as NodeComputeCost's.
Result<std::vector<OperatorCost>> NodeOperators(const graph::Node& node, const graph::SymbolValues& values,
                                                const ModelSpec& model, const ShardShape& shard);

// A collective as it runs: kind, group and nccl-tests S. Forward and backward differ: copy_to_tp
// is free forward and an all-reduce backward, reduce_from_tp the reverse (gather_from_tp is an
// all-gather forward and free backward), all-to-alls run both
// ways, the folded restore all-gather all-reduces in backward (ep_tp_dispatch.py).
struct CollectiveCost {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  GroupKind group = GroupKind::kTp;
  double bytes = 0;  // S: the full buffer (all-gather: gathered output; reduce-scatter: input)
};

// The node's collective in the forward (`backward` false) or backward pass; nullopt when it moves
// nothing in that direction. `group_size` is the size of the node's group (reduce-scatter S).
Result<std::optional<CollectiveCost>> NodeCollectiveCost(const graph::Node& node, bool backward,
                                                         const graph::SymbolValues& values,
                                                         double bytes_per_element, int group_size);

// "tp" -> kTp, "sp" -> kSp, "ep" -> kEp, "dp" -> kDp, "sp_dp" -> kSpDp, "edp" -> kEdp.
std::optional<GroupKind> GroupKindFromName(std::string_view name);

// Elements of a shape with `values` bound.
Result<double> Numel(const graph::Shape& shape, const graph::SymbolValues& values);

}  // namespace dsp::sim::schedule
