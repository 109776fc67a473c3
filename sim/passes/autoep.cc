// SPDX-License-Identifier: Apache-2.0
#include "sim/passes/autoep.h"

#include "sim/passes/pipeline.h"

#include <string>
#include <vector>

namespace dsp::sim::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::Shape;
using graph::SymExpr;

// layers_3_mlp_experts -> layers_3_mlp_<suffix>
std::string BlockName(const std::string& experts_name, const std::string& suffix) {
  std::string base = experts_name;
  if (base.ends_with("_experts")) base.resize(base.size() - 8);
  return base + "_" + suffix;
}

}  // namespace

AutoEpOptions AutoEpOptions::ForModel(const ModelSpec& spec, int64_t ep_size, int64_t tp_size,
                                      const autoep::DetectionKeys& keys) {
  AutoEpOptions o;
  o.ep_size = ep_size;
  o.tp_size = tp_size;
  o.num_experts = spec.num_experts;
  // A dense model has no experts node; Run says so itself.
  if (spec.is_moe()) o.detection = autoep::Detect(spec, keys);
  return o;
}

std::string_view AutoEpPass::description() const { return PassDescription(name()); }

Result<bool> AutoEpPass::Run(Graph& g) {
  const int64_t ep = options_.ep_size;
  const int64_t tp = options_.tp_size < 1 ? 1 : options_.tp_size;
  if (ep < 1) return Error{"autoep_size must be >= 1, got " + std::to_string(ep)};
  const bool folded = tp > 1;
  if (folded && ep == 1) {
    return Error{"AutoEP+AutoTP folding requires autoep_size > 1 (autotp_size is " +
                 std::to_string(tp) + ")"};
  }
  std::vector<Node*> experts;
  for (Node* n : g) {
    if (n->op == graph::ops::kExperts) experts.push_back(n);
  }
  if (experts.empty()) {
    return Error{"AutoEP found no MoE layer: the graph has no experts node (is this a dense "
                 "model?)"};
  }
  if (options_.detection == autoep::Detection::kAmbiguous) {
    return Error{"AutoEP detection is ambiguous: no preset lists this model_type, so all five are "
                 "tried and each matches every MoE block (DeepSpeed raises ValueError); set "
                 "expert_parallel.preset_model or moe_layer_pattern"};
  }
  if (options_.detection == autoep::Detection::kPresetMatchesNone) {
    return Error{"AutoEP: preset_model matches no MoE block of this model (DeepSpeed raises "
                 "ValueError \"AutoEP: no MoE layers detected\"); give moe_layer_pattern and "
                 "router_pattern"};
  }
  if (ep == 1 || options_.detection == autoep::Detection::kNotFound) return false;
  const int64_t e = options_.num_experts;
  const std::string eps = std::to_string(ep);
  if (e <= 0 || ep > e || e % ep != 0) {
    return Error{"num_experts (" + std::to_string(e) + ") not divisible by autoep_size " + eps +
                 ": every EP rank holds E/EP whole experts"};
  }
  for (Node* n : experts) {
    if (n->args.size() != 2 || !n->args[0]->shape || n->args[0]->shape->size() != 3) {
      return Error{"%" + n->name + ": experts needs (x [B, S, H], top_k) operands"};
    }
  }

  const SymExpr x_ep = SymExpr::Symbol(options_.symbol);
  const SymExpr t = SymExpr::Symbol(options_.tp_symbol);
  const SymExpr sym_e = SymExpr::Symbol("E");
  const SymExpr k = SymExpr::Symbol("K");
  for (Node* n : experts) {
    Node* x = n->args[0];
    Node* topk = n->args[1];
    const Shape& in = *x->shape;  // [B, S, H] (S/P after AutoSP)
    const std::string block = graph::ModuleParent(n->module);
    const SymExpr tokens = in[0] * in[1];  // B*S
    SymExpr rows = tokens * k * x_ep / sym_e;  // expected rows per local expert
    if (folded) rows = rows / t;
    const Shape routed{sym_e / x_ep, rows, in[2]};
    Node* dispatch = g.InsertBefore(n, {.name = BlockName(n->name, "dispatch"),
                                        .op = std::string(graph::ops::kDispatch),
                                        .args = {x, topk},
                                        .module = block,
                                        .shape = routed,
                                        .group = "ep"});
    g.SetArgs(n, {dispatch});
    n->shape = routed;
    if (n->param_shape && !n->param_shape->empty()) {
      n->param_shape->front() = n->param_shape->front() / x_ep;
    }
    // The combine all-to-all reverses the dispatch splits: it returns the routed rows, one per
    // (token, choice), not tokens (auto_ep_layer.py AutoEPMoELayer.forward: _AllToAllV.apply(
    // self.ep_group, expert_output, plan.output_splits, plan.input_splits)). Folded, each TP peer
    // holds its 1/T of the assignments (ep_tp_dispatch.py partition_assignments).
    const SymExpr routed_rows = tokens * k;
    Node* combine = g.InsertAfter(n, {.name = BlockName(n->name, "combine"),
                                      .op = std::string(graph::ops::kCombine),
                                      .args = {n, topk},
                                      .module = block,
                                      .shape = Shape{folded ? routed_rows / t : routed_rows, in[2]},
                                      .group = "ep"});
    g.ReplaceAllUsesWith(n, combine);
    Node* gathered = combine;
    if (folded) {
      // restore_combined (ep_tp_dispatch.py) all-gathers every TP peer's expert rows, so each
      // rank holds all B*S*K of them before the weighted sum; its backward all-reduces the
      // gathered gradient over tp (_AllGatherVariableRows.backward).
      gathered = g.InsertAfter(combine, {.name = BlockName(n->name, "restore"),
                                     .op = std::string(graph::ops::kAllGather),
                                     .args = {combine},
                                     .module = block,
                                     .shape = Shape{routed_rows, in[2]},
                                     .group = "tp"});
      g.ReplaceAllUsesWith(combine, gathered);
    }
    // The weighted sum over the K choices runs after the exchange (auto_ep_layer.py
    // combine_from_routed: [T*K, H] -> [T, K, H] x top_scores, summed over K; restore_combined
    // does the same with index_add_ when folded): [B*S*K, H] -> [B, S, H].
    Node* weighted = g.InsertAfter(gathered, {.name = BlockName(n->name, "weighted_sum"),
                                              .op = std::string(graph::ops::kMul),
                                              .args = {gathered, topk},
                                          .module = block,
                                          .shape = in});
    g.ReplaceAllUsesWith(gathered, weighted);
  }
  return true;
}

}  // namespace dsp::sim::passes
