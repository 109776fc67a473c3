// SPDX-License-Identifier: Apache-2.0
// Graphviz rendering of the graph IR. The Graphviz 2.42 C API on Debian takes `char*` for names
// and attribute values it never modifies, hence the Mut() helper; GVC_t and Agraph_t live in small
// RAII owners so every error path frees them (the layout too, which must go before the graph).
#include "sim/render/graphviz.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/graph/symbolic.h"

namespace dsp::sim::render {
namespace {

using graph::Graph;
using graph::Node;

// Graphviz declares these parameters `char*` but only reads them.
char* Mut(const char* s) { return const_cast<char*>(s); }
char* Mut(const std::string& s) { return const_cast<char*>(s.c_str()); }

struct GraphDeleter {
  void operator()(Agraph_t* g) const { agclose(g); }
};
using GraphPtr = std::unique_ptr<Agraph_t, GraphDeleter>;

// Frees the layout before the graph goes: gvFreeLayout needs the graph alive.
class LayoutGuard {
 public:
  LayoutGuard(GVC_t* gvc, Agraph_t* g) : gvc_(gvc), g_(g) {}
  ~LayoutGuard() { gvFreeLayout(gvc_, g_); }
  LayoutGuard(const LayoutGuard&) = delete;
  LayoutGuard& operator=(const LayoutGuard&) = delete;

 private:
  GVC_t* gvc_;
  Agraph_t* g_;
};

// cgraph's default ID discipline uses the address of the interned name as a named object's ID,
// and subgraphs (our clusters) are kept and laid out in ID order, so the layout changed with
// heap addresses from run to run. This discipline hands out IDs in creation order instead:
// even for named objects (cgraph's convention: print() gives their name back), odd for
// anonymous ones (edges), from a per-graph counter rather than the default's global one.
struct IdState {
  Agraph_t* graph = nullptr;
  std::vector<char*> names;  // interned with agstrdup: agwrite asks cgraph whether each is HTML
  std::unordered_map<std::string, IDTYPE> ids;
  IDTYPE next_anonymous = 1;
};

void* IdOpen(Agraph_t* g, Agdisc_t*) {
  auto* state = new IdState;
  state->graph = g;
  return state;
}

long IdMap(void* state, int, char* str, IDTYPE* id, int create) {
  auto* s = static_cast<IdState*>(state);
  if (str == nullptr) {
    *id = s->next_anonymous;
    s->next_anonymous += 2;
    return 1;
  }
  auto it = s->ids.find(str);
  if (it != s->ids.end()) {
    *id = it->second;
    return 1;
  }
  if (create == 0) return 0;
  s->names.push_back(agstrdup(s->graph, str));
  *id = 2 * static_cast<IDTYPE>(s->names.size());
  s->ids.emplace(str, *id);
  return 1;
}

long IdAlloc(void*, int, IDTYPE) { return 1; }
void IdFree(void*, int, IDTYPE) {}  // names live until agclose frees the string pool

char* IdPrint(void* state, int, IDTYPE id) {
  auto* s = static_cast<IdState*>(state);
  if (id % 2 != 0 || id == 0 || id / 2 > s->names.size()) return nullptr;
  return s->names[id / 2 - 1];
}

void IdClose(void* state) { delete static_cast<IdState*>(state); }
void IdRegister(void*, int, void*) {}

Agiddisc_t kSequentialIds = {IdOpen, IdMap, IdAlloc, IdFree, IdPrint, IdClose, IdRegister};
Agdisc_t kDisc = {&AgMemDisc, &kSequentialIds, &AgIoDisc};

// --diff's border colors: nodes the passes inserted, nodes whose shape they changed.
constexpr const char* kInsertedColor = "#d62728";
constexpr const char* kChangedColor = "#ff7f0e";

// Fill colors of the process groups; fixed so the legend and the nodes agree.
const std::vector<std::pair<std::string, std::string>>& GroupColors() {
  static const std::vector<std::pair<std::string, std::string>> colors = {
      {"tp", "#fbb4ae"}, {"sp", "#b3cde3"}, {"ep", "#ccebc5"}, {"dp", "#decbe4"}, {"sp_dp", "#e5d8bd"},
      {"edp", "#fed9a6"}};
  return colors;
}

std::string GroupColor(const std::string& group) {
  for (const auto& [name, color] : GroupColors()) {
    if (name == group) return color;
  }
  return "#d9d9d9";  // a collective without a known group still stands out from compute
}

// Graphviz reads backslash sequences in labels (\n, \N, \G); module paths must print verbatim.
std::string EscapeLabel(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Set(void* obj, const char* name, const std::string& value) {
  agsafeset(obj, Mut(name), Mut(value), Mut(""));
}

// "model.layers.3.self_attn.q_proj" -> "self_attn"; "" when the module is the layer itself.
std::string SubModule(std::string_view module) {
  const graph::LayerPath path = graph::LayerPathOf(module);
  if (path.layer < 0 || path.prefix_len >= module.size()) return "";
  std::string_view rest = module.substr(path.prefix_len + 1);
  return std::string(rest.substr(0, rest.find('.')));
}

// Contiguous runs of layers outside the shown range become one summary node each.
struct Summary {
  int first = 0;
  int last = 0;
  Agnode_t* node = nullptr;
  // Collectives inside the collapsed layers, "all_to_all [sp]" -> count (all layers together).
  std::map<std::string, int> collectives;
};

class Builder {
 public:
  Builder(const Graph& graph, const RenderOptions& options) : graph_(graph), options_(options) {}

  Result<GraphPtr> Build() {
    GraphPtr g(agopen(Mut("ds_plan"), Agdirected, &kDisc));
    if (!g) return Error{"graphviz: agopen failed"};
    root_ = g.get();
    Set(root_, "rankdir", "TB");
    Set(root_, "fontname", "Helvetica");
    Set(root_, "newrank", "true");
    agattr(root_, AGNODE, Mut("fontname"), Mut("Helvetica"));
    agattr(root_, AGNODE, Mut("fontsize"), Mut("10"));
    agattr(root_, AGEDGE, Mut("fontname"), Mut("Helvetica"));
    agattr(root_, AGEDGE, Mut("fontsize"), Mut("8"));
    PlanSummaries();
    ScanContainers();
    for (const Node* node : graph_) {
      if (node->op == graph::ops::kAllGather && node->args.empty() && !node->param.empty()) {
        gather_of_.emplace(node->param, node);
      }
    }
    for (const Node* node : graph_) AddNode(*node);
    for (const Node* node : graph_) AddEdges(*node);
    LabelSummaries();
    AddLegend();
    return g;
  }

 private:
  void PlanSummaries() {
    if (!options_.layers) return;
    std::set<int> hidden;
    for (const Node* node : graph_) {
      int layer = graph::LayerOfModule(node->module);
      if (layer >= 0 && !options_.layers->Contains(layer)) hidden.insert(layer);
    }
    for (int layer : hidden) {
      if (summaries_.empty() || summaries_.back().last + 1 != layer) {
        summaries_.push_back({layer, layer, nullptr, {}});
      } else {
        summaries_.back().last = layer;
      }
    }
  }

  // A sub-module gets its own cluster only when it contains modules (self_attn, mlp,
  // block_sparse_moe); norms and residual adds sit directly in the layer cluster.
  void ScanContainers() {
    for (const Node* node : graph_) {
      int layer = graph::LayerOfModule(node->module);
      std::string sub = SubModule(node->module);
      if (layer < 0 || sub.empty()) continue;
      std::string prefix = std::string(node->module.substr(0, graph::LayerPathOf(node->module).prefix_len)) + "." + sub + ".";
      if (node->module.compare(0, prefix.size(), prefix) == 0) containers_.insert({layer, sub});
    }
  }

  // "layers 1-31 (31 x)" and, per layer, the collectives inside: what the box stands for.
  void LabelSummaries() {
    for (Summary& s : summaries_) {
      if (s.node == nullptr) continue;
      const int count = s.last - s.first + 1;
      std::string label = "layers " + std::to_string(s.first) + "-" + std::to_string(s.last) + " (" +
                          std::to_string(count) + " x)";
      if (!s.collectives.empty()) label += "\\nper layer:";
      for (const auto& [what, n] : s.collectives) {
        // Layers of one range can differ (dense and MoE layers): an average then.
        const bool even = n % count == 0;
        char per[32];
        std::snprintf(per, sizeof per, even ? "%.0f" : "%.2f", static_cast<double>(n) / count);
        label += "\\n" + EscapeLabel(what) + " x" + per;
      }
      Set(s.node, "label", label);
    }
  }

  Summary* SummaryOf(int layer) {
    for (auto& s : summaries_) {
      if (layer >= s.first && layer <= s.last) return &s;
    }
    return nullptr;
  }

  Agraph_t* ClusterFor(const Node& node) {
    int layer = graph::LayerOfModule(node.module);
    if (layer < 0) return root_;
    std::string layer_name = "cluster_layers_" + std::to_string(layer);
    Agraph_t* cluster = agsubg(root_, Mut(layer_name), 0);
    if (cluster == nullptr) {
      cluster = agsubg(root_, Mut(layer_name), 1);
      Set(cluster, "label", "layers." + std::to_string(layer));
      Set(cluster, "style", "rounded");
      Set(cluster, "color", "#808080");
    }
    std::string sub = SubModule(node.module);
    if (sub.empty() || containers_.count({layer, sub}) == 0) return cluster;
    std::string sub_name = layer_name + "_" + sub;
    Agraph_t* inner = agsubg(cluster, Mut(sub_name), 0);
    if (inner == nullptr) {
      inner = agsubg(cluster, Mut(sub_name), 1);
      Set(inner, "label", EscapeLabel(sub));
      Set(inner, "style", "rounded,dashed");
      Set(inner, "color", "#a0a0a0");
    }
    return inner;
  }

  // A collective with nothing to do in the drawn direction: left out, its edges pass through.
  bool Hidden(const Node& node) const {
    if (!graph::IsCollective(node.op) || options_.direction == Direction::kBoth) return false;
    const graph::CollectiveActions a = graph::ActionsOf(node);
    return (options_.direction == Direction::kForward ? a.forward : a.backward).empty();
  }

  // "fwd: all_reduce [tp]", "bwd: all_to_all [sp]", or both on two lines; "identity" for the
  // direction a collective does nothing in.
  std::string ActionLabel(const Node& node) const {
    const graph::CollectiveActions a = graph::ActionsOf(node);
    const std::string group = " [" + EscapeLabel(node.group) + "]";
    auto one = [&](const char* dir, const std::string& op) {
      return std::string(dir) + ": " + (op.empty() ? std::string("identity") : EscapeLabel(op) + group);
    };
    if (options_.direction == Direction::kForward) return one("fwd", a.forward);
    // A gradient reduction has no forward at all (not even an identity): one line.
    if (options_.direction == Direction::kBackward || graph::IsGradientReduction(node)) {
      return one("bwd", a.backward);
    }
    return one("fwd", a.forward) + "\\n" + one("bwd", a.backward);
  }

  // What a collapsed layer's collective counts as: "all_reduce [tp] (bwd)" in the drawn direction.
  std::string SummaryKey(const Node& node) const {
    const graph::CollectiveActions a = graph::ActionsOf(node);
    if (options_.direction == Direction::kForward) return a.forward + " [" + node.group + "]";
    if (options_.direction == Direction::kBackward) return a.backward + " [" + node.group + "]";
    return node.op + " [" + node.group + "]" + (a.forward.empty() ? " (backward)" : "");
  }

  const Node* Before(const Node& node) const {
    return options_.before == nullptr ? nullptr : options_.before->Find(node.name);
  }
  bool Inserted(const Node& node) const { return options_.before != nullptr && Before(node) == nullptr; }
  bool ShapeChanged(const Node& node) const {
    const Node* b = Before(node);
    return b != nullptr && b->shape.has_value() && node.shape.has_value() && !(*b->shape == *node.shape);
  }

  // --diff: inserted nodes red and "+", changed ones orange with what they were.
  std::string DiffLines(const Node& node, Agnode_t* n) const {
    if (options_.before == nullptr) return "";
    const Node* b = Before(node);
    if (b == nullptr) {
      Set(n, "color", kInsertedColor);
      Set(n, "penwidth", "2.5");
      return "";
    }
    std::string lines;
    if (ShapeChanged(node)) lines += "\\nwas " + EscapeLabel(graph::ShapeToString(*b->shape));
    if (b->param_shape && node.param_shape && !(*b->param_shape == *node.param_shape)) {
      lines += "\\nW was " + EscapeLabel(graph::ShapeToString(*b->param_shape));
    }
    if (!lines.empty()) {
      Set(n, "color", kChangedColor);
      Set(n, "penwidth", "2.5");
    }
    return lines;
  }

  void AddNode(const Node& node) {
    const bool hidden = Hidden(node);
    int layer = graph::LayerOfModule(node.module);
    if (Summary* s = layer >= 0 ? SummaryOf(layer) : nullptr) {
      if (s->node == nullptr) {
        // Summary names start with a character the IR's node names never have, so no clash.
        std::string name = "#layers_" + std::to_string(s->first) + "_" + std::to_string(s->last);
        s->node = agnode(root_, Mut(name), 1);
        int count = s->last - s->first + 1;
        Set(s->node, "label", "layers " + std::to_string(s->first) + "-" + std::to_string(s->last) + " (" +
                                  std::to_string(count) + " x)");
        Set(s->node, "shape", "box3d");
        Set(s->node, "style", "dashed");
      }
      nodes_[&node] = hidden ? nullptr : s->node;
      if (graph::IsCollective(node.op) && !hidden) ++s->collectives[SummaryKey(node)];
      return;
    }
    if (hidden) {
      nodes_[&node] = nullptr;
      return;
    }
    Agnode_t* n = agnode(ClusterFor(node), Mut(node.name), 1);
    nodes_[&node] = n;
    std::string label = (Inserted(node) ? "+ " : "") + EscapeLabel(node.name) + "\\n" + EscapeLabel(node.op);
    if (graph::IsCollective(node.op)) {
      // Collectives that only run in backward (copy_to_tp, gradient reductions) are dashed, so
      // the forward data flow stays readable.
      const bool backward_only = graph::ActionsOf(node).forward.empty();
      // A ZeRO-3 gather reads the rank's partition: its param_shape.
      std::string partition = node.op == graph::ops::kAllGather && node.args.empty() && node.param_shape
                                  ? "\\npartition " + EscapeLabel(graph::ShapeToString(*node.param_shape))
                                  : "";
      if (node.op == graph::ops::kPrefetch) {
        const size_t params = 1 + static_cast<size_t>(std::count(node.param.begin(), node.param.end(), ','));
        partition = "\\n" + std::to_string(params) + (params == 1 ? " parameter" : " parameters, fused");
      }
      Set(n, "label", label + "\\n" + ActionLabel(node) + partition + DiffLines(node, n));
      Set(n, "shape", "hexagon");
      Set(n, "style", backward_only && options_.direction == Direction::kBoth ? "filled,dashed" : "filled,bold");
      Set(n, "fillcolor", GroupColor(node.group));
      return;
    }
    // Weight shapes on the nodes that read a parameter, as this rank holds it.
    if (node.param_shape) label += "\\nW " + EscapeLabel(graph::ShapeToString(*node.param_shape));
    Set(n, "label", label + DiffLines(node, n));
    if (node.op == graph::ops::kRelease) {
      Set(n, "shape", "note");
      Set(n, "style", "dashed");
    } else if (node.op == graph::ops::kPlaceholder || node.op == graph::ops::kOutput) {
      Set(n, "shape", "ellipse");
    } else {
      Set(n, "shape", "box");
      Set(n, "style", "rounded");
    }
  }

  // The drawn nodes an operand stands for: itself, or, when it is left out in this direction,
  // whatever it reads (recursively).
  void Sources(const Node* arg, std::vector<Agnode_t*>& out) const {
    Agnode_t* drawn = nodes_.at(arg);
    if (drawn != nullptr) {
      out.push_back(drawn);
      return;
    }
    for (const Node* a : arg->args) Sources(a, out);
  }

  // One edge per distinct (source, target) drawn pair: mul(%a, %a) and the many edges into and
  // out of a summary node each draw once, labelled with the first source's shape. An edge into a
  // gradient reduction carries the gradient, shaped like the parameter as the rank holds it.
  void AddEdges(const Node& node) {
    Agnode_t* to = nodes_.at(&node);
    if (to == nullptr) return;
    if (node.op == graph::ops::kPrefetch) AddPrefetchEdges(node, to);
    for (const Node* arg : node.args) {
      std::vector<Agnode_t*> from;
      Sources(arg, from);
      for (Agnode_t* f : from) {
        if (f == to || !drawn_.insert({f, to}).second) continue;
        Agedge_t* e = agedge(root_, f, to, nullptr, 1);
        if (graph::IsGradientReduction(node) && node.param_shape) {
          Set(e, "label", "grad " + EscapeLabel(graph::ShapeToString(*node.param_shape)));
        } else if (arg->shape) {
          Set(e, "label", EscapeLabel(graph::ShapeToString(*arg->shape)));
        }
        if (ShapeChanged(*arg)) Set(e, "fontcolor", kChangedColor);
        if (graph::HasSideEffects(node)) Set(e, "style", "dashed");  // into backward work and releases
        // Backward: the same layout, arrows the way gradients flow.
        if (options_.direction == Direction::kBackward) Set(e, "dir", "back");
      }
    }
  }

  // DeepCompile's prefetch: drawn where it is launched (after the node before it in the program)
  // with a dotted edge to each gather it serves, which does not pull it towards them.
  void AddPrefetchEdges(const Node& node, Agnode_t* from) {
    for (const Node* before = node.prev(); before != nullptr; before = before->prev()) {
      Agnode_t* b = nodes_.at(before);
      if (b == nullptr || b == from) continue;
      if (drawn_.insert({b, from}).second) {
        Agedge_t* e = agedge(root_, b, from, nullptr, 1);
        Set(e, "style", "dotted");
        Set(e, "label", "launch");
        if (options_.direction == Direction::kBackward) Set(e, "dir", "back");
      }
      break;
    }
    size_t start = 0;
    while (start <= node.param.size()) {
      size_t comma = node.param.find(',', start);
      if (comma == std::string::npos) comma = node.param.size();
      auto it = gather_of_.find(node.param.substr(start, comma - start));
      start = comma + 1;
      if (it == gather_of_.end()) continue;
      Agnode_t* to = nodes_.at(it->second);
      if (to == nullptr || to == from || !drawn_.insert({from, to}).second) continue;
      Agedge_t* e = agedge(root_, from, to, nullptr, 1);
      Set(e, "style", "dotted");
      Set(e, "label", "prefetched");
      Set(e, "constraint", "false");
      if (options_.direction == Direction::kBackward) Set(e, "dir", "back");
    }
  }

  void AddLegend() {
    Agraph_t* legend = agsubg(root_, Mut("cluster_legend"), 1);
    Set(legend, "label", "legend");
    Set(legend, "style", "rounded");
    Agnode_t* compute = agnode(legend, Mut("#legend_compute"), 1);
    Set(compute, "label", "compute op");
    Set(compute, "shape", "box");
    Set(compute, "style", "rounded");
    Agnode_t* prev = compute;
    for (const auto& [group, color] : GroupColors()) {
      Agnode_t* n = agnode(legend, Mut("#legend_" + group), 1);
      Set(n, "label", "collective (" + group + ")");
      Set(n, "shape", "hexagon");
      Set(n, "style", "filled,bold");
      Set(n, "fillcolor", color);
      // Invisible edges stack the legend entries instead of spreading them over one rank.
      Agedge_t* e = agedge(root_, prev, n, nullptr, 1);
      Set(e, "style", "invis");
      prev = n;
    }
    // The ZeRO pass's extra shapes, only when the graph has them (keeps other legends short).
    bool backward = false, release = false;
    for (const Node* node : graph_) {
      backward = backward || graph::IsGradientReduction(*node);
      release = release || node->op == graph::ops::kRelease;
    }
    if (backward) {
      Agnode_t* n = agnode(legend, Mut("#legend_backward"), 1);
      Set(n, "label", "gradient reduction\\n(runs in backward)");
      Set(n, "shape", "hexagon");
      Set(n, "style", "dashed");
      Set(agedge(root_, prev, n, nullptr, 1), "style", "invis");
      prev = n;
    }
    if (release) {
      Agnode_t* n = agnode(legend, Mut("#legend_release"), 1);
      Set(n, "label", "release (ZeRO-3)");
      Set(n, "shape", "note");
      Set(n, "style", "dashed");
      Set(agedge(root_, prev, n, nullptr, 1), "style", "invis");
      prev = n;
    }
    if (options_.direction != Direction::kBoth) {
      Agnode_t* n = agnode(legend, Mut("#legend_direction"), 1);
      Set(n, "label", options_.direction == Direction::kForward
                          ? "forward only: collectives that are\\nthe identity in forward left out"
                          : "backward only: arrows point the way\\ngradients flow; collectives that are\\n"
                            "the identity in backward left out");
      Set(n, "shape", "plaintext");
      Set(agedge(root_, prev, n, nullptr, 1), "style", "invis");
      prev = n;
    }
    if (options_.before != nullptr) AddDiffLegend(legend, prev);
  }

  // --diff: what the colours mean, and the nodes the passes erased (they have no place left).
  void AddDiffLegend(Agraph_t* legend, Agnode_t* prev) {
    // A box with the border the marked nodes get, stacked under `above`.
    auto entry = [&](const char* name, const char* label, const char* color, Agnode_t* above) {
      Agnode_t* n = agnode(legend, Mut(name), 1);
      Set(n, "label", label);
      Set(n, "shape", "box");
      Set(n, "color", color);
      Set(n, "penwidth", "2.5");
      Set(agedge(root_, above, n, nullptr, 1), "style", "invis");
      return n;
    };
    Agnode_t* inserted = entry("#legend_inserted", "+ inserted by the passes", kInsertedColor, prev);
    Agnode_t* changed = entry("#legend_changed", "shape changed (was ...)", kChangedColor, inserted);
    std::vector<std::string> removed;
    for (const Node* b : *options_.before) {
      if (graph_.Find(b->name) == nullptr) removed.push_back(b->name);
    }
    if (removed.empty()) return;
    std::string label = "removed by the passes:";
    for (size_t i = 0; i < removed.size(); ++i) {
      if (i == 12) {
        label += "\\n... and " + std::to_string(removed.size() - 12) + " more";
        break;
      }
      label += "\\n%" + EscapeLabel(removed[i]);
    }
    Agnode_t* n = agnode(legend, Mut("#legend_removed"), 1);
    Set(n, "label", label);
    Set(n, "shape", "note");
    Set(n, "color", kInsertedColor);
    Set(agedge(root_, changed, n, nullptr, 1), "style", "invis");
  }

  const Graph& graph_;
  const RenderOptions& options_;
  Agraph_t* root_ = nullptr;
  std::vector<Summary> summaries_;
  std::set<std::pair<int, std::string>> containers_;
  std::map<const Node*, Agnode_t*> nodes_;
  std::map<std::string, const Node*> gather_of_;  // ZeRO-3 gathers by parameter
  std::set<std::pair<Agnode_t*, Agnode_t*>> drawn_;
};

// agwrite streams through stdio; open_memstream keeps the DOT text in memory.
Result<std::string> WriteDot(Agraph_t* g) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* out = open_memstream(&buf, &len);
  if (out == nullptr) return Error{"graphviz: open_memstream failed"};
  int rc = agwrite(g, out);
  std::fclose(out);
  std::string text(buf == nullptr ? "" : buf, len);
  std::free(buf);
  if (rc != 0) return Error{"graphviz: agwrite failed"};
  return text;
}

// One Graphviz context for the whole process, created on first use and never freed: Graphviz
// 2.42's pango text-layout plugin keeps font data in a static cache that gvFreeContext frees but
// does not reset, so the next context's layout reads freed memory (found by ASan on the second
// render in one process). The mutex serialises renders, which share that context.
GVC_t* SharedContext() {
  static GVC_t* gvc = gvContext();
  return gvc;
}
std::mutex& ContextMutex() {
  static std::mutex m;
  return m;
}

Result<std::string> WriteSvg(Agraph_t* g) {
  std::lock_guard<std::mutex> lock(ContextMutex());
  GVC_t* gvc = SharedContext();
  if (gvc == nullptr) return Error{"graphviz: gvContext failed"};
  if (gvLayout(gvc, g, "dot") != 0) {
    return Error{"graphviz: dot layout failed (is the graphviz plugin config installed? see docs/visualize.md)"};
  }
  LayoutGuard layout(gvc, g);
  char* data = nullptr;
  unsigned int len = 0;
  if (gvRenderData(gvc, g, "svg", &data, &len) != 0 || data == nullptr) {
    return Error{"graphviz: SVG rendering failed"};
  }
  std::string svg(data, len);
  gvFreeRenderData(data);
  return svg;
}

}  // namespace

Result<Direction> ParseDirection(std::string_view text) {
  if (text == "both") return Direction::kBoth;
  if (text == "forward") return Direction::kForward;
  if (text == "backward") return Direction::kBackward;
  return Error{"direction '" + std::string(text) + "' is not forward, backward or both"};
}

Result<LayerRange> ParseLayerRange(std::string_view text) {
  auto number = [](std::string_view s, int* out) {
    if (s.empty() || s.size() > 6) return false;
    int v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
  };
  LayerRange r;
  size_t dash = text.find('-');
  bool ok = dash == std::string_view::npos
                ? number(text, &r.first) && number(text, &r.last)
                : number(text.substr(0, dash), &r.first) && number(text.substr(dash + 1), &r.last);
  if (!ok) return Error{"layer range '" + std::string(text) + "' is not N or A-B (for example 0-1)"};
  if (r.first > r.last) return Error{"layer range '" + std::string(text) + "' is empty (start after end)"};
  return r;
}

Result<std::string> RenderGraph(const graph::Graph& graph, const RenderOptions& options, Format format) {
  Builder builder(graph, options);
  auto g = builder.Build();
  if (!g.ok()) return g.error();
  return format == Format::kDot ? WriteDot(g->get()) : WriteSvg(g->get());
}

}  // namespace dsp::sim::render
