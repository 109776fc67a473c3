// SPDX-License-Identifier: Apache-2.0
// A small FX-like graph IR of one training step's forward pass: placeholders, operator calls and
// one output, in topological order. The compiler passes (tensor/sequence/expert parallelism)
// rewrite it by inserting collectives, so the API is the handful of mutations they need: insert
// before/after, replace all uses, erase, dead-code elimination. docs/graph.md describes the IR,
// its text form and the op names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/util/result.h"
#include "sim/graph/symbolic.h"

namespace dsp::sim::graph {

// Op names the builder emits and the passes and JSON output match on.
namespace ops {
inline constexpr std::string_view kPlaceholder = "placeholder";
inline constexpr std::string_view kEmbedding = "embedding";
inline constexpr std::string_view kRmsNorm = "rms_norm";
inline constexpr std::string_view kLayerNorm = "layer_norm";
inline constexpr std::string_view kLinear = "linear";
inline constexpr std::string_view kRotary = "rotary";
inline constexpr std::string_view kSdpa = "sdpa";
inline constexpr std::string_view kSilu = "silu";
inline constexpr std::string_view kSigmoid = "sigmoid";
inline constexpr std::string_view kGelu = "gelu";
inline constexpr std::string_view kRelu2 = "relu2";  // nemotron: relu(x)^2
// One slice of a fused projection's output (qkv, gate_up, MLA's latent kv); no parameter.
inline constexpr std::string_view kSplit = "split";
inline constexpr std::string_view kConcat = "concat";
// Gated DeltaNet: the depthwise causal conv, the decay from A_log, the chunked recurrence.
inline constexpr std::string_view kConv1d = "conv1d";
inline constexpr std::string_view kGateDecay = "gate_decay";
inline constexpr std::string_view kGatedDeltaRule = "gated_delta_rule";
inline constexpr std::string_view kMul = "mul";
inline constexpr std::string_view kAdd = "add";
inline constexpr std::string_view kRouter = "router";
inline constexpr std::string_view kTopK = "top_k";
inline constexpr std::string_view kExperts = "experts";
inline constexpr std::string_view kCrossEntropy = "cross_entropy";
inline constexpr std::string_view kOutput = "output";
// Reserved for the parallelism passes; the builder never emits them.
inline constexpr std::string_view kAllToAll = "all_to_all";
inline constexpr std::string_view kCopyToTp = "copy_to_tp";
inline constexpr std::string_view kReduceFromTp = "reduce_from_tp";
// A column linear's gather_output: all-gather of the feature shards forward, split backward
// (Megatron's gather_from_tensor_model_parallel_region).
inline constexpr std::string_view kGatherFromTp = "gather_from_tp";
inline constexpr std::string_view kAllGather = "all_gather";
inline constexpr std::string_view kReduceScatter = "reduce_scatter";
inline constexpr std::string_view kAllReduce = "all_reduce";
inline constexpr std::string_view kDispatch = "dispatch";
inline constexpr std::string_view kCombine = "combine";
// ZeRO-3 frees a gathered parameter after its last reader; not a collective.
inline constexpr std::string_view kRelease = "release";
// DeepCompile's prefetch_params_fused (compile/passes/prefetch.py): one fused, asynchronous
// all-gather of several parameters launched ahead of their gathers; `param` lists them,
// comma-separated; no operands.
inline constexpr std::string_view kPrefetch = "prefetch";
}  // namespace ops

struct Node;
// The decoder layer of a module path ("model.layers.12.mlp.up_proj" -> 12,
// "transformer.h.3.attn" -> 3), or -1; prefix_len covers "model.layers.12".
struct LayerPath {
  int layer = -1;
  size_t prefix_len = 0;
};
LayerPath LayerPathOf(std::string_view module);
// Module path helpers: "model.layers.0.mlp.up_proj" -> "model.layers.0.mlp" / "up_proj".
std::string ModuleParent(std::string_view module);
std::string ModuleLeaf(std::string_view module);
// A node name from a module or parameter path: the base-model prefix ("model.", "transformer.",
// "gpt_neox.", "language_model.model.", "model.language_model.") dropped and dots turned into
// underscores, so "transformer.h.0.attn" and "model.layers.0.mlp" name "h_0_attn", "layers_0_mlp".
std::string NodeNameOfPath(std::string_view path);
int LayerOfModule(std::string_view module);
// True for the collective ops above (all_to_all ... combine).
bool IsCollective(std::string_view op);
// A collective on a parameter's gradient (the ZeRO pass's reduce_grad_*, tp_average_grad_*): it
// names the parameter and reads the node whose backward produces the gradient. (A ZeRO-3 gather
// also names its parameter but has no operand: it reads the rank's partition.)
bool IsGradientReduction(const Node& node);
// What a collective node does in each direction of the training step, as the op names of the
// collectives it issues there ("" = nothing: copy_to_tp is the identity in forward, reduce_from_tp
// in backward, a gradient reduction has no forward). docs/graph.md lists them per op.
struct CollectiveActions {
  std::string forward;
  std::string backward;
};
// Empty for a node that is not a collective.
CollectiveActions ActionsOf(const Node& node);
// Nodes dead-code elimination keeps although nothing reads them: `release` and gradient
// reductions (they run in backward and have no forward reader).
bool HasSideEffects(const Node& node);

struct Node {
  std::string name;    // unique in its graph; printed as %name
  std::string op;      // one of ops::*
  std::string module;  // Hugging Face module path, "model.layers.3.self_attn.q_proj"; may be empty
  std::string param;   // parameter read, "model.layers.3.self_attn.q_proj.weight"; may be empty
  // Shape of `param` as this rank holds it ([N*D, H]; [N*D/T, H] after AutoTP); absent without a
  // param. The ZeRO pass sizes its gathers and gradient reductions from it.
  std::optional<Shape> param_shape;
  std::optional<Shape> shape;  // absent only on the output node; [] is a scalar
  std::string group;           // process group of a collective ("tp", "ep", ...); empty otherwise
  // sdpa of a sliding-window / chunked layer: the keys a query sees (window) or the chunk it
  // attends within (chunk); 0 = every earlier token. The schedule prices the scores from them.
  int64_t window = 0;
  int64_t chunk = 0;
  std::vector<Node*> args;     // operands, all earlier in the graph
  // Nodes that have this node among their args, each once, in order of first use. The Graph
  // methods keep args and users in step; code that edits args directly must fix users itself
  // (the verifier reports any mismatch).
  std::vector<Node*> users;

  Node* next() const { return next_; }
  Node* prev() const { return prev_; }

 private:
  friend class Graph;
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
};

// Everything about a new node but its place in the list.
struct NodeSpec {
  std::string name = {};  // uniquified (name, name_1, name_2, ...) when taken; the op when empty
  std::string op = {};
  std::vector<Node*> args = {};
  std::string module = {};
  std::string param = {};
  std::optional<Shape> param_shape = {};
  std::optional<Shape> shape = {};
  std::string group = {};
  int64_t window = 0;
  int64_t chunk = 0;
};

class Graph {
 public:
  Graph() = default;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Adds a node at the end, or right before/after `pos`. The caller keeps topological order:
  // every arg must already precede the insertion point (the verifier checks).
  Node* Append(NodeSpec spec);
  Node* InsertBefore(Node* pos, NodeSpec spec);
  Node* InsertAfter(Node* pos, NodeSpec spec);

  // Replace one operand / all operands of `node`, keeping users lists consistent.
  void SetArg(Node* node, size_t index, Node* arg);
  void SetArgs(Node* node, std::vector<Node*> args);

  // Rewrites every use of `from` to `to`, except inside `to` itself, so the usual pass pattern
  // `y = InsertAfter(x, {.op = "all_reduce", .args = {x}}); ReplaceAllUsesWith(x, y);` does not
  // make y its own operand. Returns how many users were rewritten.
  size_t ReplaceAllUsesWith(Node* from, Node* to);

  // Removes a node nothing uses; an error (and no change) while it still has users.
  Status Erase(Node* node);
  // Erases, repeatedly, every unused node except placeholders, the output (inputs stay part of
  // the signature, as in torch.fx) and nodes with side effects (HasSideEffects). Returns the
  // number erased.
  size_t EliminateDeadCode();

  // Renames a node; an error when the new name is taken.
  Status Rename(Node* node, std::string name);
  Node* Find(std::string_view name) const;
  // `base` when free, else the first free base_1, base_2, ...
  std::string UniqueName(std::string_view base) const;

  Node* front() const { return head_; }
  Node* back() const { return tail_; }
  size_t size() const { return owned_.size(); }
  // The first node whose op is "output", or nullptr.
  Node* Output() const;
  // True when `node` belongs to this graph (a pointer from another graph does not).
  bool Contains(const Node* node) const;

  class Iterator {
   public:
    explicit Iterator(Node* node) : node_(node) {}
    Node* operator*() const { return node_; }
    Iterator& operator++() {
      node_ = node_->next();
      return *this;
    }
    bool operator==(const Iterator& other) const { return node_ == other.node_; }

   private:
    Node* node_;
  };
  // Nodes in order; do not erase the current node while iterating.
  Iterator begin() const { return Iterator(head_); }
  Iterator end() const { return Iterator(nullptr); }

 private:
  Node* Create(NodeSpec spec);
  void Link(Node* node, Node* before);  // before == nullptr appends
  void Unlink(Node* node);
  static void AddUser(Node* arg, Node* user);
  static void DropUserIfUnused(Node* arg, Node* user);

  // Owns the nodes, keyed by address so that direct edits of Node::name cannot orphan one.
  std::unordered_map<const Node*, std::unique_ptr<Node>> owned_;
  std::unordered_map<std::string, Node*> by_name_;
  mutable std::unordered_map<std::string, int> next_suffix_;
  Node* head_ = nullptr;
  Node* tail_ = nullptr;
};

}  // namespace dsp::sim::graph
