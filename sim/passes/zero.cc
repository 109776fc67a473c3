// SPDX-License-Identifier: Apache-2.0
#include "sim/passes/zero.h"

#include "sim/passes/pipeline.h"

#include <map>
#include <string>
#include <vector>

#include "sim/passes/shape_util.h"

namespace dsp::sim::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::Shape;
using graph::SymExpr;

// "model.layers.0.self_attn.q_proj.weight" -> "layers_0_self_attn_q_proj_weight", the way the
// builder names nodes; the experts glob "....experts.*" -> "..._experts".
// The parameter's path named as the builder names its nodes (graph::NodeNameOfPath), so the
// gathers of transformer.h.0.attn.c_attn.weight sit next to %h_0_attn_c_attn.
std::string ParamTag(std::string_view param) {
  std::string out;
  for (char c : graph::NodeNameOfPath(param)) {
    if (c != '*') out += c;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

SymExpr Numel(const Shape& shape) {
  SymExpr n(1);
  for (const SymExpr& d : shape) n = n * d;
  return n;
}

bool Mentions(const Shape& shape, std::string_view symbol) {
  for (const SymExpr& d : shape) {
    if (SymbolExponent(d, symbol) != 0) return true;
  }
  return false;
}

bool ReadsParam(const Node& n) {
  return !n.param.empty() && !graph::IsCollective(n.op) && n.op != graph::ops::kRelease;
}

struct Param {
  std::string name;
  std::vector<Node*> readers;  // in graph order
};

}  // namespace

std::string_view ZeroPass::description() const { return PassDescription(name()); }

Result<bool> ZeroPass::Run(Graph& g) {
  const int stage = options_.stage;
  if (stage < 0 || stage > 3) {
    return Error{"zero_optimization.stage must be 0, 1, 2 or 3, got " + std::to_string(stage)};
  }
  std::vector<Param> params;
  std::map<std::string, size_t> index;
  for (Node* n : g) {
    if (!ReadsParam(*n)) continue;
    if (!n->param_shape) return Error{"%" + n->name + ": reads " + n->param + " but has no param_shape"};
    for (const Node* a : n->args) {
      if (a->op == graph::ops::kAllGather && a->param == n->param) {
        return Error{"%" + n->name + " already reads the gathered %" + a->name +
                     ": the zero pass ran twice"};
      }
    }
    auto [it, added] = index.emplace(n->param, params.size());
    if (added) params.push_back(Param{n->param, {}});
    params[it->second].readers.push_back(n);
  }
  auto family_of = [&](const Node* reader) -> const ZeroGroup& {
    const bool routed = reader->op == graph::ops::kExperts && !reader->args.empty() &&
                        reader->args[0]->op == graph::ops::kDispatch;
    return routed && options_.experts ? *options_.experts : options_.dense;
  };
  const bool folding = options_.fold_tp > 1;
  bool any = folding;
  for (const Param& p : params) any = any || family_of(p.readers.front()).size != 1;
  if (!any) return false;

  for (const Param& p : params) {
    Node* first = p.readers.front();
    Node* last = p.readers.back();
    const ZeroGroup& family = family_of(first);
    const Shape local = *first->param_shape;
    const SymExpr numel = Numel(local);
    const Shape partition{numel / SymExpr::Symbol(family.symbol)};
    const std::string tag = ParamTag(p.name);
    const bool partitioned = family.size != 1;

    bool persistent = false;
    if (options_.persistence_threshold > 0) {
      Result<int64_t> count = numel.Evaluate(options_.values);
      persistent = count.ok() && *count < options_.persistence_threshold;
    }
    if (stage == 3 && partitioned && !persistent) {
      Node* gather = g.InsertBefore(first, {.name = "allgather_" + tag,
                                            .op = std::string(graph::ops::kAllGather),
                                            .module = first->module,
                                            .param = p.name,
                                            .param_shape = partition,
                                            .shape = local,
                                            .group = family.name});
      for (Node* r : p.readers) {
        std::vector<Node*> args = r->args;
        args.push_back(gather);
        g.SetArgs(r, std::move(args));
      }
      g.InsertAfter(last, {.name = "release_" + tag,
                           .op = std::string(graph::ops::kRelease),
                           .args = {gather},
                           .module = last->module,
                           .param = p.name,
                           .shape = Shape{}});
    }

    Node* grad = first;
    Node* after = first;
    // AutoTP's grad_allreduce hook sums the gradient over tp before it is accumulated: the DP
    // reduction reads its result.
    for (Node* u : first->users) {
      if (graph::IsGradientReduction(*u) && u->param == p.name) grad = after = u;
    }
    const bool routed = &family != &options_.dense;
    if (folding && !routed && !Mentions(local, options_.tp_symbol)) {
      grad = g.InsertAfter(after, {.name = "tp_average_grad_" + tag,
                                   .op = std::string(graph::ops::kAllReduce),
                                   .args = {grad},
                                   .module = first->module,
                                   .param = p.name,
                                   .param_shape = local,
                                   .shape = local,
                                   .group = "tp"});
      after = grad;
    }
    if (partitioned) {
      const bool scatter = stage == 3 || (stage == 2 && !options_.deepcompile);
      g.InsertAfter(after, {.name = "reduce_grad_" + tag,
                            .op = std::string(scatter ? graph::ops::kReduceScatter
                                                      : graph::ops::kAllReduce),
                            .args = {grad},
                            .module = first->module,
                            .param = p.name,
                            .param_shape = local,
                            .shape = scatter ? partition : local,
                            .group = family.name});
    }
  }
  return true;
}

}  // namespace dsp::sim::passes
