// SPDX-License-Identifier: Apache-2.0
#include "sim/passes/autosp.h"

#include "sim/passes/pipeline.h"

#include <deque>
#include <string>
#include <unordered_set>
#include <vector>

#include "sim/passes/shape_util.h"

namespace dsp::sim::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::Shape;
using graph::SymExpr;

// Placeholders whose sequence dimension AutoSP shards (prepare_autosp_inputs tags these); the
// attention mask is deliberately absent: every rank needs the full [S, S] mask rows for its heads.
constexpr const char* kSeqInputs[] = {"input_ids", "labels", "position_ids"};

Shape DivideSeq(const Shape& shape, const SymExpr& p) {
  Shape out;
  for (const SymExpr& d : shape) out.push_back(DivideSymbol(d, "S", p));
  return out;
}

// Scatter heads, gather sequence: [B, N, S/P, D] -> [B, N/P, S, D]. v reaches sdpa unreshaped as
// [B, S/P, G*D]; its consumer sees [B, G/P, S, D], with D taken from q.
Shape ScatterHeads(const Shape& in, const SymExpr& p, const SymExpr& head_dim) {
  if (in.size() == 4) return {in[0], in[1] / p, in[2] * p, in[3]};
  if (in.size() == 3) return {in[0], in[2] / head_dim / p, in[1] * p, head_dim};
  return in;
}

// 3. pass_insert_attention_all_to_all around the i-th sdpa, then 4. pass_propagate_shapes for
// the sdpa itself: q, k and v scatter heads and gather the sequence; the output does the reverse.
void WrapSdpa(Graph& g, Node* s, size_t i, const SymExpr& p, bool replicate_kv, bool repeat_to_all_heads) {
  const std::string idx = std::to_string(i);
  const SymExpr head_dim = s->args[0]->shape->back();
  const char* names[] = {"a2a_q_", "a2a_k_", "a2a_v_"};
  for (size_t j = 0; j < 3; ++j) {
    Node* x = s->args[j];
    if (j > 0 && (replicate_kv || repeat_to_all_heads) && x->shape &&
        (x->shape->size() == 4 || x->shape->size() == 3)) {
      const SymExpr heads = repeat_to_all_heads ? SymExpr::Symbol("N") : p;
      // [B, G, S/P, D] -> [B, P, S/P, D] (v unreshaped: [B, S/P, G*D] -> [B, S/P, P*D]): each
      // k/v head repeated sp/G times before the all-to-all, so every rank receives one
      // (ulysses_sp.py: repeat_interleave(kv_replication_factor) on the head dimension).
      graph::Shape repeated = *x->shape;
      if (repeated.size() == 4) {
        repeated[1] = heads;
      } else {
        repeated[2] = heads * head_dim;
      }
      x = g.InsertAfter(x, {.name = std::string(j == 1 ? "repeat_k_" : "repeat_v_") + idx,
                            .op = "repeat_kv",
                            .args = {x},
                            .module = s->module,
                            .shape = repeated});
    }
    Node* a2a = g.InsertAfter(x, {.name = names[j] + idx,
                                  .op = std::string(graph::ops::kAllToAll),
                                  .args = {x},
                                  .module = s->module,
                                  .shape = ScatterHeads(x->shape.value_or(Shape{}), p, head_dim),
                                  .group = "sp"});
    g.SetArg(s, j, a2a);
  }
  // The output all-to-all restores the sharded-sequence layout step 1 gave the sdpa.
  const Shape seq_sharded = s->shape.value_or(Shape{});
  s->shape = s->args[0]->shape;
  Node* a2a_o = g.InsertAfter(s, {.name = "a2a_o_" + idx,
                                  .op = std::string(graph::ops::kAllToAll),
                                  .args = {s},
                                  .module = s->module,
                                  .shape = seq_sharded,
                                  .group = "sp"});
  g.ReplaceAllUsesWith(s, a2a_o);
}

}  // namespace

AutoSpOptions AutoSpOptions::ForModel(const ModelSpec& spec, int64_t sp_size,
                                      std::optional<int64_t> seq_len) {
  AutoSpOptions o;
  o.sp_size = sp_size;
  o.num_heads = spec.num_attention_heads;
  o.num_kv_heads = spec.num_key_value_heads;
  o.seq_len = seq_len;
  return o;
}

std::string_view AutoSpPass::description() const { return PassDescription(name()); }

Result<bool> AutoSpPass::Run(Graph& g) {
  const int64_t sp = options_.sp_size;
  if (sp < 1) return Error{"sequence_parallel_size must be >= 1, got " + std::to_string(sp)};
  if (sp == 1) return false;

  // Every check before the first mutation: a rejected plan leaves the graph as it was.
  std::vector<Node*> sdpas;
  for (Node* n : g) {
    if (n->op == graph::ops::kSdpa) sdpas.push_back(n);
  }
  if (sdpas.empty()) {
    return Error{"AutoSP currently supports torch.nn.functional.scaled_dot_product_attention "
                 "only: the graph has no sdpa node"};
  }
  const std::string sps = std::to_string(sp);
  if (options_.num_heads <= 0 || options_.num_heads % sp != 0) {
    return Error{"attention heads (" + std::to_string(options_.num_heads) +
                 ") not divisible by sequence_parallel_size " + sps +
                 ": the all-to-all scatters heads over the sp group"};
  }
  const int64_t kv = options_.num_kv_heads;
  // Eager Ulysses repeats k/v heads when sp is a multiple of them (ulysses_sp.py:
  // kv_replication_factor = world_size // kv_head_count) and otherwise needs them to divide.
  const bool replicate_kv = !options_.compiled && kv > 0 && kv < sp && sp % kv == 0;
  // The compile pass moves whatever heads reach SDPA: with an attention mask transformers' sdpa
  // path repeats K/V to all N heads first (validate: sp-autosp-kv-heads), the only way KV heads
  // that do not divide sp get through the reshape.
  const bool repeat_to_all_heads = options_.compiled && kv > 0 && kv % sp != 0;
  if (kv <= 0 || (kv % sp != 0 && !replicate_kv && !repeat_to_all_heads)) {
    return Error{"key/value heads (" + std::to_string(kv) + ") not divisible by sequence_parallel_size " + sps +
                 (options_.compiled
                      ? ": the AutoSP all-to-all reshapes the k and v heads reaching SDPA into sp groups "
                        "(custom_ops/all_to_all.py)"
                      : std::string(": DeepSpeed's Ulysses needs the KV heads to divide sp or sp to divide them "
                                    "(ulysses_sp.py UlyssesSPAttentionHF raises ValueError)"))};
  }
  if (options_.seq_len && *options_.seq_len % sp != 0) {
    return Error{"sequence length " + std::to_string(*options_.seq_len) +
                 " not divisible by sequence_parallel_size " + sps +
                 ": every rank keeps S/P tokens"};
  }
  std::vector<Node*> inputs;
  for (const char* name : kSeqInputs) {
    Node* n = g.Find(name);
    if (n != nullptr && n->op == graph::ops::kPlaceholder) inputs.push_back(n);
  }
  if (inputs.empty() || inputs.front()->name != "input_ids") {
    return Error{"AutoSP needs an input_ids placeholder to find the sequence dimension"};
  }
  for (Node* s : sdpas) {
    if (s->args.size() < 3 || !s->args[0]->shape || s->args[0]->shape->size() != 4) {
      return Error{"%" + s->name + ": sdpa needs q [B, N, S, D], k and v operands"};
    }
  }
  const SymExpr p = SymExpr::Symbol(options_.symbol);

  // 1. pass_shard_seq_dim: S -> S/P in every transitive consumer of the sequence inputs.
  std::unordered_set<Node*> seen;
  std::deque<Node*> work;
  for (Node* in : inputs) {
    for (Node* u : in->users) work.push_back(u);
  }
  while (!work.empty()) {
    Node* n = work.front();
    work.pop_front();
    if (!seen.insert(n).second) continue;
    if (n->shape) n->shape = DivideSeq(*n->shape, p);
    for (Node* u : n->users) work.push_back(u);
  }

  // 2. pass_shard_input_ids/label_ids/position_ids: x[:, r*S/P:(r+1)*S/P] read by every user.
  for (Node* in : inputs) {
    Node* slice = g.InsertAfter(in, {.name = "slice_" + in->name,
                                     .op = "slice_seq",
                                     .args = {in},
                                     .shape = DivideSeq(in->shape.value_or(Shape{}), p)});
    g.ReplaceAllUsesWith(in, slice);
  }

  // 3. pass_insert_attention_all_to_all, then 4. pass_propagate_shapes for the sdpa itself.
  for (size_t i = 0; i < sdpas.size(); ++i) WrapSdpa(g, sdpas[i], i, p, replicate_kv, repeat_to_all_heads);

  // 5. pass_canonicalize.
  g.EliminateDeadCode();
  return true;
}

}  // namespace dsp::sim::passes
