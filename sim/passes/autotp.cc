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
// kLmHeadRow: a row-parallel spec on lm_head/embed_out, which DeepSpeed builds as
// LmHeadLinearAllreduce (auto_tp.py _create_row_parallel_layer): it slices its own input.
enum class Role { kReplicated, kColumn, kGathered, kRow, kLmHeadRow, kExperts, kUnsupported };

struct CompiledSpec {
  TpPartition partition;
  bool gather_output = false;
  bool grad_allreduce = false;
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
      CompiledSpec c{s.partition, s.gather_output, s.grad_allreduce, {}, s.model_types};
      for (const std::string& p : s.patterns) c.regexes.push_back(CompilePythonRegex(p));
      specs_.push_back(std::move(c));
    }
    if (o.use_default_specs && !o.preset.empty()) {
      for (const autotp::LayerSpec& s : autotp::PresetSpecs(o.preset, "")) {
        CompiledSpec c{s.kind == autotp::PartitionKind::kColumn ? TpPartition::kColumn
                       : s.kind == autotp::PartitionKind::kRow  ? TpPartition::kRow
                                                                : TpPartition::kSkip,
                       false,
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
  // A skip spec with grad_allreduce claims it (auto_tp.py register_replicated_grad_hooks:
  // find_matching_spec, then spec.grad_allreduce).
  bool GradAllreduce(const std::string& param) const {
    const CompiledSpec* s = Winner(param);
    return s != nullptr && s->partition == TpPartition::kSkip && s->grad_allreduce;
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

// The model's output projection: DeepSpeed matches it by name (auto_tp.py: "lm_head" or
// "embed_out", gpt_neox's).
bool IsHead(const Node& n) { return n.module == "lm_head" || n.module == "embed_out"; }

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
    // whose logits are all-gathered, drawn as gather_from_tp (sim/cost/param_sharding.cc VocabSplitOf
    // prices the same).
    TpLayerSpec s;
    s.partition = style.starts_with("colwise") ? TpPartition::kColumn
                  : style == "rowwise"         ? TpPartition::kRow
                                               : TpPartition::kSkip;
    s.gather_output = s.partition == TpPartition::kColumn && style != "colwise";
    s.grad_allreduce = style == "replicated_with_grad_allreduce";
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

namespace {

// One AutoTP rewrite of a graph, in the order auto_tp.py works: classify every linear (and
// experts block), trace what each column-parallel output reaches, then shard shapes and insert
// the tp collectives. The mismatches DeepSpeed does not check become notes.
class TpRewrite {
 public:
  TpRewrite(Graph& g, const AutoTpOptions& o) : g_(g), o_(o), classifier_(o) {}

  void AssignRoles();
  void TraceRegions();
  void FindMismatches();
  // The compile pass is all-or-nothing (tp_compile.py defer_collectives_to_compiler): one layer
  // it cannot rewrite, or tp_overlap_comm, and it raises before touching anything.
  std::optional<std::string> CompileRefusal() const;
  std::vector<std::string> Notes() const;
  // Whether anything splits: columns, gathered columns, row heads or experts.
  bool HasWork();
  void ShardShapes();
  void InsertCollectives();
  void InsertGradHooks();

 private:
  Role RoleOf(Node* n) const {
    auto it = role_.find(n);
    return it != role_.end() ? it->second : Role::kReplicated;
  }
  // A head count or width split over tp: d/T, or rank 0's N0/G0 heads when the key-value heads
  // split unevenly.
  SymExpr Shard(const SymExpr& d) const;

  Graph& g_;
  const AutoTpOptions& o_;
  const Classifier classifier_;
  std::unordered_map<Node*, Role> role_;
  std::vector<Node*> unsupported_, head_rows_compiled_, columns_, rows_, unpaired_columns_, unpaired_rows_, mixing_;
  std::vector<Node*> uneven_attention_, whole_head_params_, gathered_, head_rows_eager_;
  std::unordered_set<Node*> region_, fed_rows_;
  std::map<Node*, graph::Shape> gathered_full_;
};

void TpRewrite::AssignRoles() {
  // DeepSpeed's AutoTP skips AutoEP subtrees: the MoE blocks the autoep pass rewrote (the
  // modules of its dispatch nodes) keep router, experts and shared experts replicated over tp.
  std::vector<std::string> autoep_modules;
  for (Node* n : g_) {
    if (n->op == graph::ops::kDispatch && !n->module.empty()) autoep_modules.push_back(n->module + ".");
  }
  auto in_autoep = [&](const Node* n) {
    return std::any_of(autoep_modules.begin(), autoep_modules.end(),
                       [&](const std::string& m) { return n->module.starts_with(m); });
  };
  for (Node* n : g_) {
    if ((n->op == graph::ops::kExperts || n->op == graph::ops::kLinear) && in_autoep(n)) {
      role_[n] = Role::kReplicated;
    } else if (n->op == graph::ops::kExperts) {
      role_[n] = ClassifyExperts(classifier_, *n);
    } else if (n->op == graph::ops::kLinear) {
      auto k = classifier_.Classify(n->param);
      role_[n] = !k || *k == TpPartition::kSkip        ? Role::kReplicated
                 : classifier_.GathersOutput(n->param) ? Role::kGathered
                 : *k == TpPartition::kColumn           ? Role::kColumn
                                                        : Role::kRow;
      // A row spec on the head is LmHeadLinearAllreduce. The compile pass cannot stand in for it
      // (tp_compile.py UNSUPPORTED_LAYERS; defer_collectives_to_compiler raises).
      if (role_[n] == Role::kRow && IsHead(*n)) {
        role_[n] = Role::kLmHeadRow;
        if (o_.compiled) head_rows_compiled_.push_back(n);
      }
    }
    if (role_.contains(n) && role_[n] == Role::kUnsupported) unsupported_.push_back(n);
  }
}

void TpRewrite::TraceRegions() {
  // Pairing: from every column output, the split activation must reach row linears only. The
  // region between them is what gets N/T, G/T, F/T shapes.
  for (Node* n : g_) {
    if (RoleOf(n) == Role::kColumn) columns_.push_back(n);
    if (RoleOf(n) == Role::kRow) rows_.push_back(n);
  }
  for (Node* c : columns_) {
    bool leaked = false;
    std::deque<Node*> work(c->users.begin(), c->users.end());
    std::unordered_set<Node*> seen;
    while (!work.empty()) {
      Node* n = work.front();
      work.pop_front();
      if (!seen.insert(n).second) continue;
      const Role r = RoleOf(n);
      if (r == Role::kRow) {
        fed_rows_.insert(n);
        continue;
      }
      if (r != Role::kReplicated || n->op == graph::ops::kLinear || n->op == graph::ops::kExperts ||
          n->op == graph::ops::kRouter || n->op == graph::ops::kCrossEntropy || n->op == graph::ops::kOutput) {
        leaked = true;  // a split activation read by something that needs the whole tensor
        continue;
      }
      region_.insert(n);
      for (Node* u : n->users) work.push_back(u);
    }
    if (leaked) unpaired_columns_.push_back(c);
  }
  for (Node* r : rows_) {
    if (!fed_rows_.contains(r)) unpaired_rows_.push_back(r);
  }
}

void TpRewrite::FindMismatches() {
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
  for (Node* n : g_) {
    if (!region_.contains(n) || (n->op != graph::ops::kMul && n->op != graph::ops::kAdd)) continue;
    for (Node* a : n->args) {
      if (!region_.contains(a) && RoleOf(a) != Role::kColumn && has_split_dims(a)) {
        mixing_.push_back(n);
        break;
      }
    }
  }
  // AutoTP replaces modules with a 2-D weight only (auto_tp.py AutoTP._replace_module): a raw
  // per-head parameter read inside a split region (gpt_oss's sinks [N]) keeps all N heads while
  // the attention runs N/T, and transformers' cat of scores and sinks fails.
  for (Node* n : g_) {
    if (!region_.contains(n) || n->param.empty() || !n->param_shape) continue;
    for (const SymExpr& d : *n->param_shape) {
      if (SymbolExponent(d, "N") > 0 || SymbolExponent(d, "G") > 0) {
        whole_head_params_.push_back(n);
        break;
      }
    }
  }
  // Attention whose q, k and v do not split alike: the heads of one are N/T, of another N (for
  // example the deepseek_v2 preset on a model without q_lora_rank: it names q_b_proj, and the
  // plain q_proj stays whole while kv_b_proj splits k and v).
  for (Node* n : g_) {
    if (n->op != graph::ops::kSdpa || n->args.size() < 3) continue;
    int split = 0;
    for (size_t i = 0; i < 3; ++i) {
      if (region_.contains(n->args[i]) || RoleOf(n->args[i]) == Role::kColumn) ++split;
    }
    if (split != 0 && split != 3) uneven_attention_.push_back(n);
  }
}

std::optional<std::string> TpRewrite::CompileRefusal() const {
  if (!head_rows_compiled_.empty()) {
    return "the AutoTP compile pass cannot rewrite '" + head_rows_compiled_.front()->module +
           "' (LmHeadLinearAllreduce, from its row-parallel spec): DeepSpeed raises "
           "NotImplementedError in tp_compile.py defer_collectives_to_compiler; drop 'autotp' "
           "from compile.passes or make the head column-parallel with gather_output";
  }
  if (o_.compiled && o_.tp_overlap_comm) {
    return std::string("the AutoTP compile pass does not support tp_overlap_comm (tp_compile.py "
                       "defer_collectives_to_compiler raises NotImplementedError)");
  }
  return std::nullopt;
}

std::vector<std::string> TpRewrite::Notes() const {
  // What DeepSpeed does not check: it wraps each matched linear on its own and inserts f and g
  // around them, whatever reads their outputs. Mismatches surface at run time as shape errors or
  // wrong numbers, so they are drawn as built and reported as notes (validate's
  // tp-missing-row-partner / tp-missing-column-partner say the same before a launch).
  std::vector<std::string> notes;
  auto add = [&](const std::string& what, const std::vector<Node*>& nodes) {
    if (!nodes.empty()) notes.push_back("AutoTP: " + what + ": " + JoinNames(nodes));
  };
  add("column-parallel outputs read by something other than a row-parallel linear (they stay "
      "split there)",
      unpaired_columns_);
  add("elementwise ops mixing split and whole tensors", mixing_);
  add("row-parallel linears without a column-parallel input (they slice nothing: the input "
      "arrives whole)",
      unpaired_rows_);
  add("per-head parameters AutoTP does not shard (only modules with a 2-D weight are "
      "replaced, so they keep every head while the heads split)",
      whole_head_params_);
  add("attention reading split and whole heads (q, k and v must all come from column-parallel "
      "projections or none)",
      uneven_attention_);
  add("experts with mixed specs, left replicated", unsupported_);
  return notes;
}

bool TpRewrite::HasWork() {
  const bool has_experts =
      std::any_of(role_.begin(), role_.end(), [](const auto& kv) { return kv.second == Role::kExperts; });
  for (Node* n : g_) {
    if (RoleOf(n) == Role::kGathered) gathered_.push_back(n);
    if (RoleOf(n) == Role::kLmHeadRow) head_rows_eager_.push_back(n);
  }
  return !columns_.empty() || !gathered_.empty() || !head_rows_eager_.empty() || has_experts;
}

SymExpr TpRewrite::Shard(const SymExpr& d) const {
  // Uneven key-value heads are legal: get_shard_size (module_inject/tp_shard.py) gives tp rank r
  // G//T + (r < G%T) key-value heads with their query groups. The graph is rank 0's, the busiest:
  // N0 and G0 heads (symbols bound by BindTensorParallelHeads), instead of N/T and G/T.
  const bool uneven = o_.num_kv_heads > 0 && o_.num_kv_heads % o_.tp_size != 0;
  if (uneven) {
    static const std::pair<const char*, const char*> kRankZero[] = {{"N", "N0"}, {"G", "G0"}, {"QKV", "QKV0"}};
    for (const auto& [whole, rank0] : kRankZero) {
      if (SymbolExponent(d, whole) > 0) return ReplaceSymbol(d, whole, rank0);
    }
  }
  return d / SymExpr::Symbol(o_.symbol);
}

void TpRewrite::ShardShapes() {
  const SymExpr t = SymExpr::Symbol(o_.symbol);
  // Shapes first: column outputs and the region between column and row. A gathered column
  // computes its out/T features (the matmul the schedule prices) and the gather_from_tp after it
  // restores all of them.
  for (Node* c : gathered_) {
    gathered_full_[c] = *c->shape;
    c->shape->back() = c->shape->back() / t;
    if (c->param_shape && !c->param_shape->empty()) c->param_shape->front() = c->param_shape->front() / t;
  }
  for (Node* c : columns_) {
    c->shape->back() = Shard(c->shape->back());
    // [out, in]: a column linear keeps out/T rows of the weight, a row linear in/T columns.
    if (c->param_shape && !c->param_shape->empty()) c->param_shape->front() = Shard(c->param_shape->front());
  }
  for (Node* n : g_) {
    const Role r = RoleOf(n);
    if (r == Role::kRow && n->param_shape && n->param_shape->size() == 2) {
      (*n->param_shape)[1] = Shard((*n->param_shape)[1]);
    } else if (r == Role::kLmHeadRow && n->param_shape && n->param_shape->size() == 2) {
      (*n->param_shape)[1] = (*n->param_shape)[1] / t;  // the hidden size, split near-evenly
    } else if (r == Role::kExperts && n->param_shape) {
      for (SymExpr& d : *n->param_shape) {
        if (SymbolExponent(d, "FE") > 0) d = d / t;  // each expert's gate/up/down width
      }
    }
  }
  for (Node* n : g_) {
    if (!region_.contains(n) || !n->shape) continue;
    for (SymExpr& d : *n->shape) {
      for (const char* s : kShardedSymbols) {
        if (SymbolExponent(d, s) > 0) {
          d = Shard(d);
          break;
        }
      }
    }
  }
}

void TpRewrite::InsertCollectives() {
  const SymExpr t = SymExpr::Symbol(o_.symbol);
  // One copy_to_tp per activation shared by column linears / experts, before its first reader.
  std::map<Node*, std::vector<Node*>> by_input;
  std::vector<Node*> order;
  for (Node* n : g_) {
    const Role r = RoleOf(n);
    if (r != Role::kColumn && r != Role::kGathered && r != Role::kExperts) continue;
    if (!by_input.contains(n->args[0])) order.push_back(n->args[0]);
    by_input[n->args[0]].push_back(n);
  }
  for (Node* act : order) {
    const std::vector<Node*>& readers = by_input[act];
    Node* copy = g_.InsertBefore(readers.front(),
                                 {.name = readers.front()->name + "_copy_to_tp",
                                  .op = std::string(graph::ops::kCopyToTp),
                                  .args = {act},
                                  // the block that reads it: model.layers.0.self_attn
                                  .module = graph::ModuleParent(readers.front()->module),
                                  .shape = act->shape,
                                  .group = "tp"});
    for (Node* r : readers) g_.SetArg(r, 0, copy);
  }
  // The tp collective every reader of `n` then reads instead.
  auto follow_with = [&](Node* n, std::string_view op, const std::optional<graph::Shape>& shape = std::nullopt) {
    Node* c = g_.InsertAfter(n, {.name = n->name + "_" + std::string(op),
                                 .op = std::string(op),
                                 .args = {n},
                                 .module = graph::ModuleParent(n->module),
                                 .shape = shape ? shape : n->shape,
                                 .group = "tp"});
    g_.ReplaceAllUsesWith(n, c);
  };
  for (Node* n : g_) {
    const Role r = RoleOf(n);
    if (r == Role::kRow || r == Role::kExperts || r == Role::kLmHeadRow) follow_with(n, graph::ops::kReduceFromTp);
  }
  // LmHeadLinearAllreduce.forward (module_inject/layers.py) cuts its rank's H/T slice of the
  // hidden states itself, a local slice with no collective, and all-reduces the logits with
  // inference_all_reduce: forward only, like reduce_from_tp's.
  for (Node* n : head_rows_eager_) {
    graph::Shape sliced = *n->args[0]->shape;
    sliced.back() = sliced.back() / t;
    Node* slice = g_.InsertBefore(n, {.name = n->name + "_input_slice",
                                      .op = std::string(graph::ops::kSplit),
                                      .args = {n->args[0]},
                                      .module = n->module,
                                      .shape = sliced});
    g_.SetArg(n, 0, slice);
  }
  for (Node* n : gathered_) follow_with(n, graph::ops::kGatherFromTp, gathered_full_[n]);
}

void TpRewrite::InsertGradHooks() {
  // Replicated parameters whose gradient a hook sums over tp, after their first reader (in
  // backward the last to add to the gradient).
  std::set<std::string> hooked;
  std::vector<Node*> hook_readers;
  for (Node* n : g_) {
    if (n->param.empty() || !n->param_shape || graph::IsCollective(n->op) || RoleOf(n) != Role::kReplicated) continue;
    if (classifier_.GradAllreduce(n->param) && hooked.insert(n->param).second) hook_readers.push_back(n);
  }
  for (Node* n : hook_readers) {
    g_.InsertAfter(n, {.name = "tp_grad_allreduce_" + graph::NodeNameOfPath(n->param),
                       .op = std::string(graph::ops::kAllReduce),
                       .args = {n},
                       .module = n->module,
                       .param = n->param,
                       .param_shape = n->param_shape,
                       .shape = n->param_shape,
                       .group = "tp"});
  }
}

}  // namespace

Result<bool> AutoTpPass::Run(Graph& g) {
  notes_.clear();
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
  TpRewrite rewrite(g, options_);
  rewrite.AssignRoles();
  rewrite.TraceRegions();
  rewrite.FindMismatches();
  if (std::optional<std::string> refusal = rewrite.CompileRefusal()) return Error{*refusal};
  notes_ = rewrite.Notes();
  if (!rewrite.HasWork()) return false;
  rewrite.ShardShapes();
  rewrite.InsertCollectives();
  rewrite.InsertGradHooks();
  g.EliminateDeadCode();
  return true;
}

}  // namespace dsp::sim::passes
