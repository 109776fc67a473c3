// SPDX-License-Identifier: Apache-2.0
#include "sim/passes/autotp.h"

#include "sim/passes/pipeline.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/rules/python_regex.h"
#include "core/rules/tensor_parallel_internal.h"
#include "sim/passes/shape_util.h"

namespace dsp::sim::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::SymExpr;

// kGathered: a column linear whose output is all-gathered over tp (gather_output): its weight is
// split but its readers see whole features.
enum class Role { kReplicated, kColumn, kGathered, kRow, kExperts, kUnsupported };

struct CompiledSpec {
  TpPartition partition;
  bool gather_output = false;
  std::vector<PythonRegex> regexes;
  std::optional<std::vector<std::string>> model_types;
};

// The symbols of head counts and MLP widths: what a column linear splits and what stays split
// until its row partner.
constexpr const char* kShardedSymbols[] = {"N", "G", "F", "FS", "FE", "QKV"};

class Classifier {
 public:
  explicit Classifier(const AutoTpOptions& o) : model_type_(o.model_type) {
    for (const TpLayerSpec& s : o.layer_specs) {
      CompiledSpec c{s.partition, s.gather_output, {}, s.model_types};
      for (const std::string& p : s.patterns) c.regexes.push_back(CompilePythonRegex(p));
      specs_.push_back(std::move(c));
    }
    if (o.use_default_specs && !o.preset.empty()) {
      for (const autotp::LayerSpec& s : autotp::PresetSpecs(o.preset, "")) {
        CompiledSpec c{s.kind == autotp::PartitionKind::kColumn ? TpPartition::kColumn
                       : s.kind == autotp::PartitionKind::kRow  ? TpPartition::kRow
                                                                : TpPartition::kSkip,
                       false,
                       {},
                       s.model_types};
        for (const autotp::SpecPattern& p : s.patterns) c.regexes.push_back(p.regex);
        specs_.push_back(std::move(c));
      }
    }
  }

  // nullopt: no spec (or, without specs, no default-plan entry) claims the parameter.
  std::optional<TpPartition> Classify(const std::string& param) const {
    const CompiledSpec* s = Winner(param);
    if (specs_.empty()) return DefaultPlan(param);
    return s == nullptr ? std::nullopt : std::optional<TpPartition>(s->partition);
  }
  bool GathersOutput(const std::string& param) const {
    const CompiledSpec* s = Winner(param);
    return s != nullptr && s->partition == TpPartition::kColumn && s->gather_output;
  }

 private:
  // DeepSpeed's heuristic AutoTP.tp_parser, by the projection's own name.
  // AutoTPConfig.find_matching_spec: the first spec (of the model's types) with a matching pattern.
  const CompiledSpec* Winner(const std::string& param) const {
    for (const CompiledSpec& s : specs_) {
      if (s.model_types && std::find(s.model_types->begin(), s.model_types->end(),
                                     model_type_) == s.model_types->end()) {
        continue;
      }
      for (const PythonRegex& r : s.regexes) {
        if (r.usable() && r.MatchPrefix(param)) return &s;
      }
    }
    return nullptr;
  }

  static std::optional<TpPartition> DefaultPlan(const std::string& param) {
    const std::string leaf = graph::ModuleLeaf(graph::ModuleParent(param));  // ".../q_proj.weight" -> q_proj
    static const std::set<std::string> column = {"q_proj",    "k_proj", "v_proj", "gate_proj",
                                                 "up_proj",   "w1",     "w3"};
    static const std::set<std::string> row = {"o_proj", "down_proj", "w2"};
    if (param.find("shared_expert_gate") != std::string::npos) return std::nullopt;
    if (column.contains(leaf)) return TpPartition::kColumn;
    if (row.contains(leaf)) return TpPartition::kRow;
    return std::nullopt;
  }

  std::string model_type_;
  std::vector<CompiledSpec> specs_;
};

// An experts node is one column+row unit when its expert-0 projections classify as
// gate/up (w1/w3) column and down (w2) row; untouched when none is claimed.
Role ClassifyExperts(const Classifier& c, const Node& n) {
  std::string base = n.param;  // "model.layers.3.mlp.experts.*"
  if (base.ends_with("*")) base.pop_back();
  base += "0.";
  const bool mixtral = n.module.find("block_sparse_moe") != std::string::npos;
  const char* cols[] = {mixtral ? "w1" : "gate_proj", mixtral ? "w3" : "up_proj"};
  const char* row = mixtral ? "w2" : "down_proj";
  int claimed = 0;
  bool ok = true;
  for (const char* p : cols) {
    auto k = c.Classify(base + p + ".weight");
    if (k && *k != TpPartition::kSkip) ++claimed;
    ok = ok && k == TpPartition::kColumn;
  }
  auto k = c.Classify(base + row + ".weight");
  if (k && *k != TpPartition::kSkip) ++claimed;
  ok = ok && k == TpPartition::kRow;
  if (claimed == 0) return Role::kReplicated;
  return ok ? Role::kExperts : Role::kUnsupported;
}

std::string JoinNames(const std::vector<Node*>& nodes) {
  std::string out;
  for (Node* n : nodes) out += (out.empty() ? "%" : ", %") + n->name;
  return out;
}

}  // namespace

void AutoTpOptions::UseTransformersPlan(const ModelSpec& spec) {
  const std::vector<autotp::HfTpPlanEntry>* plan = autotp::HfTpPlan(spec);
  if (plan == nullptr) return;
  const std::vector<std::string> bad =
      autotp::UnsupportedHfStyles(*plan, DeepSpeedVersion::Newest());
  if (!bad.empty()) {
    std::string styles;
    for (const std::string& b : bad) styles += (styles.empty() ? "'" : ", '") + b + "'";
    refusal = "DeepSpeed rejects transformers' tp_plan for " + spec.model_type +
              " (TPPlanConverter raises ValueError on the unsupported style(s) " + styles +
              "); give tensor_parallel.preset_model or partition_config.layer_specs";
    return;
  }
  for (const autotp::HfTpPlanEntry& e : *plan) {
    const std::string pattern = e.pattern, style = e.style;
    // The CausalLM's lm_head entry is "colwise_gather_output" (PR #8146): a column LinearLayer
    // whose logits are all-gathered, drawn as gather_from_tp (sim/param_sharding.cc VocabSplitOf
    // prices the same).
    TpLayerSpec s;
    s.partition = style.starts_with("colwise") ? TpPartition::kColumn
                  : style == "rowwise"         ? TpPartition::kRow
                                               : TpPartition::kSkip;
    s.gather_output = s.partition == TpPartition::kColumn && style != "colwise";
    s.patterns.push_back(autotp::HfPatternRegex(pattern));
    layer_specs.push_back(std::move(s));
  }
}

AutoTpOptions AutoTpOptions::ForModel(const ModelSpec& spec, int64_t tp_size) {
  AutoTpOptions o;
  o.tp_size = tp_size;
  o.model_type = spec.model_type;
  o.num_heads = spec.num_attention_heads;
  o.num_kv_heads = spec.num_key_value_heads;
  return o;
}

std::string_view AutoTpPass::description() const { return PassDescription(name()); }

Result<bool> AutoTpPass::Run(Graph& g) {
  const int64_t tp = options_.tp_size;
  if (tp < 0) return Error{"autotp_size must be >= 0, got " + std::to_string(tp)};
  if (tp <= 1) return false;
  if (!options_.refusal.empty()) return Error{options_.refusal};

  // Training AutoTP asserts on GPT-2 (auto_tp.py AutoTP.supported lists 'gpt2'; its Conv1D
  // layers are replaced only on the inference path), and a layer_specs entry would wrap a Conv1D
  // [in, out] weight as an [out, in] Linear.
  if (options_.model_type == "gpt2") {
    return Error{"AutoTP does not support gpt2: DeepSpeed's training AutoTP lists it as "
                 "unsupported (auto_tp.py AutoTP.supported) and its Conv1D weights are stored "
                 "[in, out], which LinearLayer would split along the wrong dimension"};
  }
  const Classifier classifier(options_);
  // DeepSpeed's AutoTP skips AutoEP subtrees: the MoE blocks the autoep pass rewrote (the
  // modules of its dispatch nodes) keep router, experts and shared experts replicated over tp.
  std::vector<std::string> autoep_modules;
  for (Node* n : g) {
    if (n->op == graph::ops::kDispatch && !n->module.empty()) autoep_modules.push_back(n->module + ".");
  }
  auto in_autoep = [&](const Node* n) {
    return std::any_of(autoep_modules.begin(), autoep_modules.end(),
                       [&](const std::string& m) { return n->module.starts_with(m); });
  };
  std::unordered_map<Node*, Role> role;
  std::vector<Node*> unsupported;
  for (Node* n : g) {
    if ((n->op == graph::ops::kExperts || n->op == graph::ops::kLinear) && in_autoep(n)) {
      role[n] = Role::kReplicated;
    } else if (n->op == graph::ops::kExperts) {
      role[n] = ClassifyExperts(classifier, *n);
    } else if (n->op == graph::ops::kLinear) {
      auto k = classifier.Classify(n->param);
      role[n] = !k || *k == TpPartition::kSkip        ? Role::kReplicated
                : classifier.GathersOutput(n->param) ? Role::kGathered
                : *k == TpPartition::kColumn          ? Role::kColumn
                                                      : Role::kRow;
      // LmHeadLinearAllreduce is neither family: the pass would drop its backward collective;
      // a plain column lm_head leaves the loss 1/TP of the vocabulary. A column lm_head with
      // gather_output (LinearLayer gathering the logits) is what DeepSpeed builds and is drawn.
      if ((role[n] == Role::kColumn || role[n] == Role::kRow) && n->name == "lm_head") {
        role[n] = Role::kUnsupported;
      }
    }
    if (role.contains(n) && role[n] == Role::kUnsupported) unsupported.push_back(n);
  }
  auto role_of = [&](Node* n) { return role.contains(n) ? role[n] : Role::kReplicated; };

  // Pairing: from every column output, the split activation must reach row linears only. The
  // region between them is what gets N/T, G/T, F/T shapes.
  std::vector<Node*> columns, rows, unpaired_columns, unpaired_rows, mixing;
  std::unordered_set<Node*> region, fed_rows;
  for (Node* n : g) {
    if (role_of(n) == Role::kColumn) columns.push_back(n);
    if (role_of(n) == Role::kRow) rows.push_back(n);
  }
  for (Node* c : columns) {
    bool leaked = false;
    std::deque<Node*> work(c->users.begin(), c->users.end());
    std::unordered_set<Node*> seen;
    while (!work.empty()) {
      Node* n = work.front();
      work.pop_front();
      if (!seen.insert(n).second) continue;
      const Role r = role_of(n);
      if (r == Role::kRow) {
        fed_rows.insert(n);
        continue;
      }
      if (r != Role::kReplicated || n->op == graph::ops::kLinear ||
          n->op == graph::ops::kExperts || n->op == graph::ops::kRouter ||
          n->op == graph::ops::kCrossEntropy || n->op == graph::ops::kOutput) {
        leaked = true;  // a split activation read by something that needs the whole tensor
        continue;
      }
      region.insert(n);
      for (Node* u : n->users) work.push_back(u);
    }
    if (leaked) unpaired_columns.push_back(c);
  }
  // Elementwise mixing of a split and a whole tensor (gate column but up replicated). An operand
  // without head or width dimensions (llama4's attn_temperature scale from the positions)
  // broadcasts over the split heads and mixes nothing.
  auto has_split_dims = [](const Node* a) {
    if (!a->shape) return false;
    for (const SymExpr& d : *a->shape) {
      for (const char* s : kShardedSymbols) {
        if (SymbolExponent(d, s) > 0) return true;
      }
    }
    return false;
  };
  for (Node* n : g) {
    if (!region.contains(n) || (n->op != graph::ops::kMul && n->op != graph::ops::kAdd)) continue;
    for (Node* a : n->args) {
      if (!region.contains(a) && role_of(a) != Role::kColumn && has_split_dims(a)) {
        mixing.push_back(n);
        break;
      }
    }
  }
  // Attention whose q, k and v do not split alike: the heads of one are N/T, of another N (for
  // example the deepseek_v2 preset on a model without q_lora_rank: it names q_b_proj, and the
  // plain q_proj stays whole while kv_b_proj splits k and v).
  std::vector<Node*> uneven_attention, whole_head_params;
  // AutoTP replaces modules with a 2-D weight only (auto_tp.py AutoTP._replace_module): a raw
  // per-head parameter read inside a split region (gpt_oss's sinks [N]) keeps all N heads while
  // the attention runs N/T, and transformers' cat of scores and sinks fails.
  for (Node* n : g) {
    if (!region.contains(n) || n->param.empty() || !n->param_shape) continue;
    for (const SymExpr& d : *n->param_shape) {
      if (SymbolExponent(d, "N") > 0 || SymbolExponent(d, "G") > 0) {
        whole_head_params.push_back(n);
        break;
      }
    }
  }
  for (Node* n : g) {
    if (n->op != graph::ops::kSdpa || n->args.size() < 3) continue;
    int split = 0;
    for (size_t i = 0; i < 3; ++i) {
      if (region.contains(n->args[i]) || role_of(n->args[i]) == Role::kColumn) ++split;
    }
    if (split != 0 && split != 3) uneven_attention.push_back(n);
  }
  for (Node* r : rows) {
    if (!fed_rows.contains(r)) unpaired_rows.push_back(r);
  }

  std::string problems;
  auto add = [&](const std::string& what, const std::vector<Node*>& nodes) {
    if (!nodes.empty()) problems += (problems.empty() ? "" : "; ") + what + ": " + JoinNames(nodes);
  };
  add("column-parallel outputs not consumed by a row-parallel linear only", unpaired_columns);
  add("elementwise ops mixing split and whole tensors", mixing);
  add("row-parallel linears without a column-parallel input", unpaired_rows);
  add("per-head parameters AutoTP does not shard (only modules with a 2-D weight are "
      "replaced, so they keep every head while the heads split)",
      whole_head_params);
  add("attention reading split and whole heads (q, k and v must all come from column-parallel "
      "projections or none)",
      uneven_attention);
  add("unsupported layers (a row or column lm_head without gather_output; experts with mixed "
      "specs)",
      unsupported);
  if (!problems.empty()) return Error{"AutoTP cannot rewrite this graph: " + problems};
  const bool has_experts = std::any_of(role.begin(), role.end(),
                                       [](const auto& kv) { return kv.second == Role::kExperts; });
  std::vector<Node*> gathered;
  for (Node* n : g) {
    if (role_of(n) == Role::kGathered) gathered.push_back(n);
  }
  if (columns.empty() && gathered.empty() && !has_experts) return false;
  const std::string tps = std::to_string(tp);
  if (options_.num_heads <= 0 || options_.num_heads % tp != 0) {
    return Error{"attention heads (" + std::to_string(options_.num_heads) +
                 ") not divisible by autotp_size " + tps};
  }
  if (options_.num_kv_heads <= 0 || options_.num_kv_heads % tp != 0) {
    return Error{"key/value heads (" + std::to_string(options_.num_kv_heads) +
                 ") not divisible by autotp_size " + tps};
  }

  // Rewrite. Shapes first: column outputs and the region between column and row.
  const SymExpr t = SymExpr::Symbol(options_.symbol);
  // A gathered column computes its out/T features (the matmul the schedule prices) and the
  // gather_from_tp after it restores all of them.
  std::map<Node*, graph::Shape> gathered_full;
  for (Node* c : gathered) {
    gathered_full[c] = *c->shape;
    c->shape->back() = c->shape->back() / t;
    if (c->param_shape && !c->param_shape->empty()) c->param_shape->front() = c->param_shape->front() / t;
  }
  for (Node* c : columns) {
    c->shape->back() = c->shape->back() / t;
    // [out, in]: a column linear keeps out/T rows of the weight, a row linear in/T columns.
    if (c->param_shape && !c->param_shape->empty()) c->param_shape->front() = c->param_shape->front() / t;
  }
  for (Node* n : g) {
    const Role r = role_of(n);
    if (r == Role::kRow && n->param_shape && n->param_shape->size() == 2) {
      (*n->param_shape)[1] = (*n->param_shape)[1] / t;
    } else if (r == Role::kExperts && n->param_shape) {
      for (SymExpr& d : *n->param_shape) {
        if (SymbolExponent(d, "FE") > 0) d = d / t;  // each expert's gate/up/down width
      }
    }
  }
  for (Node* n : g) {
    if (!region.contains(n) || !n->shape) continue;
    for (SymExpr& d : *n->shape) {
      for (const char* s : kShardedSymbols) {
        if (SymbolExponent(d, s) > 0) {
          d = d / t;
          break;
        }
      }
    }
  }
  // One copy_to_tp per activation shared by column linears / experts, before its first reader.
  std::map<Node*, std::vector<Node*>> by_input;
  std::vector<Node*> order;
  for (Node* n : g) {
    const Role r = role_of(n);
    if (r != Role::kColumn && r != Role::kGathered && r != Role::kExperts) continue;
    if (!by_input.contains(n->args[0])) order.push_back(n->args[0]);
    by_input[n->args[0]].push_back(n);
  }
  for (Node* act : order) {
    const std::vector<Node*>& readers = by_input[act];
    Node* copy = g.InsertBefore(readers.front(),
                                {.name = readers.front()->name + "_copy_to_tp",
                                 .op = std::string(graph::ops::kCopyToTp),
                                 .args = {act},
                                 // the block that reads it: model.layers.0.self_attn
                                 .module = graph::ModuleParent(readers.front()->module),
                                 .shape = act->shape,
                                 .group = "tp"});
    for (Node* r : readers) g.SetArg(r, 0, copy);
  }
  // The tp collective every reader of `n` then reads instead.
  auto follow_with = [&](Node* n, std::string_view op, const std::optional<graph::Shape>& shape = std::nullopt) {
    Node* c = g.InsertAfter(n, {.name = n->name + "_" + std::string(op),
                                .op = std::string(op),
                                .args = {n},
                                .module = graph::ModuleParent(n->module),
                                .shape = shape ? shape : n->shape,
                                .group = "tp"});
    g.ReplaceAllUsesWith(n, c);
  };
  for (Node* n : g) {
    const Role r = role_of(n);
    if (r == Role::kRow || r == Role::kExperts) follow_with(n, graph::ops::kReduceFromTp);
  }
  for (Node* n : gathered) follow_with(n, graph::ops::kGatherFromTp, gathered_full[n]);
  g.EliminateDeadCode();
  return true;
}

}  // namespace dsp::sim::passes
