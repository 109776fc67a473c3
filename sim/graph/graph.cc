// SPDX-License-Identifier: Apache-2.0
#include "sim/graph/graph.h"

#include <algorithm>
#include <utility>

namespace dsp::sim::graph {

Node* Graph::Create(NodeSpec spec) {
  auto node = std::make_unique<Node>();
  Node* n = node.get();
  n->name = UniqueName(spec.name.empty() ? spec.op : spec.name);
  n->op = std::move(spec.op);
  n->module = std::move(spec.module);
  n->param = std::move(spec.param);
  n->param_shape = std::move(spec.param_shape);
  n->shape = std::move(spec.shape);
  n->group = std::move(spec.group);
  n->window = spec.window;
  n->chunk = spec.chunk;
  n->args = std::move(spec.args);
  for (Node* arg : n->args) AddUser(arg, n);
  by_name_.emplace(n->name, n);
  owned_.emplace(n, std::move(node));
  return n;
}

void Graph::Link(Node* node, Node* before) {
  node->next_ = before;
  node->prev_ = before != nullptr ? before->prev_ : tail_;
  (node->prev_ != nullptr ? node->prev_->next_ : head_) = node;
  (before != nullptr ? before->prev_ : tail_) = node;
}

void Graph::Unlink(Node* node) {
  (node->prev_ != nullptr ? node->prev_->next_ : head_) = node->next_;
  (node->next_ != nullptr ? node->next_->prev_ : tail_) = node->prev_;
  node->prev_ = node->next_ = nullptr;
}

void Graph::AddUser(Node* arg, Node* user) {
  if (std::find(arg->users.begin(), arg->users.end(), user) == arg->users.end()) {
    arg->users.push_back(user);
  }
}

void Graph::DropUserIfUnused(Node* arg, Node* user) {
  // users holds each user once, so it goes only when no operand of `user` is `arg` any more.
  if (std::find(user->args.begin(), user->args.end(), arg) != user->args.end()) return;
  std::erase(arg->users, user);
}

Node* Graph::Append(NodeSpec spec) {
  Node* n = Create(std::move(spec));
  Link(n, nullptr);
  return n;
}

Node* Graph::InsertBefore(Node* pos, NodeSpec spec) {
  Node* n = Create(std::move(spec));
  Link(n, pos);
  return n;
}

Node* Graph::InsertAfter(Node* pos, NodeSpec spec) {
  Node* n = Create(std::move(spec));
  Link(n, pos->next_);
  return n;
}

void Graph::SetArg(Node* node, size_t index, Node* arg) {
  Node* old = node->args[index];
  node->args[index] = arg;
  DropUserIfUnused(old, node);
  AddUser(arg, node);
}

void Graph::SetArgs(Node* node, std::vector<Node*> args) {
  std::vector<Node*> old = std::exchange(node->args, std::move(args));
  for (Node* a : old) DropUserIfUnused(a, node);
  for (Node* a : node->args) AddUser(a, node);
}

size_t Graph::ReplaceAllUsesWith(Node* from, Node* to) {
  if (from == to) return 0;
  const std::vector<Node*> users = from->users;
  size_t rewritten = 0;
  for (Node* user : users) {
    if (user == to) continue;
    std::replace(user->args.begin(), user->args.end(), from, to);
    DropUserIfUnused(from, user);
    AddUser(to, user);
    ++rewritten;
  }
  return rewritten;
}

Status Graph::Erase(Node* node) {
  if (!node->users.empty()) {
    return Error{"cannot erase %" + node->name + ": still used by %" + node->users.front()->name};
  }
  for (Node* arg : node->args) std::erase(arg->users, node);
  Unlink(node);
  auto named = by_name_.find(node->name);
  if (named != by_name_.end() && named->second == node) by_name_.erase(named);
  owned_.erase(node);
  return Status::Ok();
}

std::string ModuleParent(std::string_view module) {
  size_t dot = module.rfind('.');
  return dot == std::string_view::npos ? std::string() : std::string(module.substr(0, dot));
}

std::string ModuleLeaf(std::string_view module) {
  size_t dot = module.rfind('.');
  return std::string(dot == std::string_view::npos ? module : module.substr(dot + 1));
}

std::string NodeNameOfPath(std::string_view path) {
  for (std::string_view p : {"language_model.model.", "model.language_model.", "model.",
                             "transformer.", "gpt_neox."}) {
    if (path.starts_with(p)) {
      path.remove_prefix(p.size());
      break;
    }
  }
  std::string name(path);
  for (char& c : name) {
    if (c == '.') c = '_';
  }
  return name;
}

LayerPath LayerPathOf(std::string_view module) {
  // The first "layers.<n>" (llama-style, gpt_neox) or "h.<n>" (GPT-2, BLOOM, Falcon) component
  // pair: model.layers.3.mlp, language_model.model.layers.3, transformer.h.3.attn.
  size_t start = 0;
  while (start < module.size()) {
    size_t dot = module.find('.', start);
    if (dot == std::string_view::npos) break;
    const std::string_view part = module.substr(start, dot - start);
    if (part == "layers" || part == "h") {
      size_t i = dot + 1;
      int layer = 0;
      size_t digits = 0;
      while (i < module.size() && module[i] >= '0' && module[i] <= '9' && digits < 7) {
        layer = layer * 10 + (module[i++] - '0');
        ++digits;
      }
      if (digits > 0 && (i == module.size() || module[i] == '.')) return {layer, i};
    }
    start = dot + 1;
  }
  return {};
}

int LayerOfModule(std::string_view module) { return LayerPathOf(module).layer; }

bool IsCollective(std::string_view op) {
  for (std::string_view c : {ops::kAllToAll, ops::kCopyToTp, ops::kReduceFromTp, ops::kGatherFromTp, ops::kAllGather,
                             ops::kReduceScatter, ops::kAllReduce, ops::kDispatch, ops::kCombine, ops::kPrefetch}) {
    if (op == c) return true;
  }
  return false;
}

bool IsGradientReduction(const Node& node) {
  return IsCollective(node.op) && !node.param.empty() && !node.args.empty();
}

CollectiveActions ActionsOf(const Node& node) {
  if (!IsCollective(node.op)) return {};
  // The ZeRO pass's reduce_grad_* / tp_average_grad_*: backward only.
  if (IsGradientReduction(node)) return {"", node.op};
  const std::string_view op = node.op;
  // Megatron's f and g (module_inject/layers.py ColumnParallel / RowParallel; the compile pass's
  // copy_to_tp_region / reduce_from_tp_region): each is an all-reduce in one direction only.
  if (op == ops::kCopyToTp) return {"", std::string(ops::kAllReduce)};
  if (op == ops::kReduceFromTp) return {std::string(ops::kAllReduce), ""};
  // gather_from_tp: all-gather forward, a local split backward (GatherFromTensorParallelRegion).
  if (op == ops::kGatherFromTp) return {std::string(ops::kAllGather), ""};
  // Ulysses, dispatch and combine: the backward of an all-to-all is the reverse all-to-all.
  if (op == ops::kAllToAll || op == ops::kDispatch || op == ops::kCombine) {
    return {std::string(ops::kAllToAll), std::string(ops::kAllToAll)};
  }
  // The forward graph's prefetch; the backward graph gets its own (not drawn).
  if (op == ops::kPrefetch) return {std::string(ops::kAllGather), ""};
  if (op == ops::kAllGather) {
    // A ZeRO-3 parameter gather (no operand) runs again before backward reads the parameter
    // (eager: partition_parameters.py fetch in the backward hooks; DeepCompile:
    // zero3_compile.py add_z3_gather_release on the backward graph). AutoEP's folded restore
    // all-reduces its gradient over tp (ep_tp_dispatch.py _AllGatherVariableRows.backward).
    if (node.args.empty()) return {std::string(ops::kAllGather), std::string(ops::kAllGather)};
    return {std::string(ops::kAllGather), std::string(ops::kAllReduce)};
  }
  return {node.op, node.op};
}

bool HasSideEffects(const Node& node) {
  return node.op == ops::kRelease || node.op == ops::kPrefetch || IsGradientReduction(node);
}

size_t Graph::EliminateDeadCode() {
  // Walking backwards erases a whole dead chain in one pass: by the time a node is visited, its
  // dead users (all later) are gone.
  size_t erased = 0;
  for (Node* n = tail_; n != nullptr;) {
    Node* prev = n->prev_;
    if (n->users.empty() && n->op != ops::kPlaceholder && n->op != ops::kOutput &&
        !HasSideEffects(*n)) {
      if (Erase(n).ok()) ++erased;
    }
    n = prev;
  }
  return erased;
}

Status Graph::Rename(Node* node, std::string name) {
  if (name == node->name) return Status::Ok();
  if (by_name_.count(name) != 0) return Error{"name %" + name + " is taken"};
  auto named = by_name_.find(node->name);
  if (named != by_name_.end() && named->second == node) by_name_.erase(named);
  node->name = std::move(name);
  by_name_.emplace(node->name, node);
  return Status::Ok();
}

Node* Graph::Find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

std::string Graph::UniqueName(std::string_view base) const {
  std::string name(base);
  if (by_name_.count(name) == 0) return name;
  // Remembering the last suffix per base keeps repeated names (add, add_1, ...) linear.
  int& suffix = next_suffix_[name];
  while (true) {
    std::string candidate = name + "_" + std::to_string(++suffix);
    if (by_name_.count(candidate) == 0) return candidate;
  }
}

Node* Graph::Output() const {
  for (Node* n = head_; n != nullptr; n = n->next_) {
    if (n->op == ops::kOutput) return n;
  }
  return nullptr;
}

bool Graph::Contains(const Node* node) const { return owned_.count(node) != 0; }

}  // namespace dsp::sim::graph
