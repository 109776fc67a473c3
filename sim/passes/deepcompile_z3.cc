// SPDX-License-Identifier: Apache-2.0
#include "sim/passes/deepcompile_z3.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "sim/passes/pipeline.h"

namespace dsp::sim::passes {
namespace {

using graph::Graph;
using graph::Node;

// The zero pass's stage-3 gathers: all_gather of one parameter, no operand.
bool IsParamGather(const Node& n) {
  return n.op == graph::ops::kAllGather && n.args.empty() && !n.param.empty();
}

// Bytes the gather produces: the parameter as its readers see it.
Result<double> GatheredBytes(const Node& gather, const DeepCompileBudget& b) {
  double elements = 1;
  for (const graph::SymExpr& d : *gather.shape) {
    Result<double> v = d.EvaluateReal(b.values);
    if (!v.ok()) return Error{"%" + gather.name + ": " + v.error().message};
    elements *= *v;
  }
  return elements * b.bytes_per_element;
}

std::string Gigabytes(double bytes) {
  char out[32];
  std::snprintf(out, sizeof out, "%.2f GB", bytes / 1e9);
  return out;
}

constexpr double kMemMargin = 0.1;       // selective_gather.MEM_MARGIN, prefetch.MARGIN
constexpr double kFuseFactor = 1.2;      // prefetch.py: max(t_cur, t_next) * 1.2 > t_fused
constexpr double kMaxFuseSize = 1e9;     // prefetch.MAX_FUSE_SIZE
constexpr double kMaxBufferedSize = 4e9;  // prefetch.MAX_BUFFERED_SIZE

}  // namespace

std::string_view SelectiveGatherPass::description() const { return PassDescription(name()); }
std::string_view PrefetchPass::description() const { return PassDescription(name()); }

Result<bool> SelectiveGatherPass::Run(Graph& g) {
  remarks_.clear();
  if (!budget_.gather_seconds) return Error{"selective_gather needs the comm predictor"};
  struct Candidate {
    Node* gather;
    double bytes;
    double seconds_per_byte;
  };
  std::vector<Candidate> candidates;
  for (Node* n : g) {
    if (!IsParamGather(*n)) continue;
    Result<double> bytes = GatheredBytes(*n, budget_);
    if (!bytes.ok()) return bytes.error();
    if (*bytes <= 0) continue;
    candidates.push_back({n, *bytes, budget_.gather_seconds(*bytes) / *bytes});
  }
  const double available = std::max(0.0, budget_.hbm_bytes * (1 - kMemMargin) - budget_.peak_bytes);
  if (candidates.empty() || available <= 0) {
    if (!candidates.empty()) {
      remarks_.push_back("selective_gather: no headroom (0.9 x " + Gigabytes(budget_.hbm_bytes) + " HBM - " +
                       Gigabytes(budget_.peak_bytes) + " peak): every parameter is still gathered");
    }
    return false;
  }
  // ds_ids.sort(key=time per byte, reverse=True): Python's sort is stable.
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.seconds_per_byte > b.seconds_per_byte;
  });
  double kept = 0;
  std::vector<Node*> persistent;
  for (const Candidate& c : candidates) {
    if (kept + c.bytes > available) break;  // the loop stops at the first that does not fit
    kept += c.bytes;
    persistent.push_back(c.gather);
  }
  for (Node* gather : persistent) {
    // The readers take the gather as their last operand (ZeroPass); the release is its one user
    // besides them.
    std::vector<Node*> users = gather->users;
    for (Node* u : users) {
      if (u->op == graph::ops::kRelease) continue;
      std::vector<Node*> args = u->args;
      args.erase(std::remove(args.begin(), args.end(), gather), args.end());
      g.SetArgs(u, std::move(args));
    }
    for (Node* u : std::vector<Node*>(gather->users)) {
      if (Status s = g.Erase(u); !s.ok()) return s.error();
    }
    if (Status s = g.Erase(gather); !s.ok()) return s.error();
  }
  remarks_.push_back("selective_gather: " + std::to_string(persistent.size()) + " of " +
                   std::to_string(candidates.size()) + " parameters (" + Gigabytes(kept) +
                   ") stay gathered within the headroom of " + Gigabytes(available) +
                   " (0.9 x HBM - the predicted peak, standing in for DeepSpeed's profile)");
  return !persistent.empty();
}

Result<bool> PrefetchPass::Run(Graph& g) {
  if (!budget_.gather_seconds) return Error{"prefetch needs the comm predictor"};
  const double max_mem = budget_.hbm_bytes * (1 - kMemMargin);
  std::map<const Node*, double> size;
  bool any = false;
  for (Node* n : g) {
    if (!IsParamGather(*n)) continue;
    Result<double> bytes = GatheredBytes(*n, budget_);
    if (!bytes.ok()) return bytes.error();
    size[n] = *bytes;
    any = true;
  }
  if (!any) return false;
  using Group = std::vector<Node*>;
  auto bytes_of = [&](const Group& group) {
    double s = 0;
    for (const Node* n : group) s += size[n];
    return s;
  };
  auto t = budget_.gather_seconds;

  // The forward graph's nodes in reverse, without the backward-only ones (gradient reductions,
  // which DeepSpeed's forward graph does not hold). Each launch is recorded as "after node X"
  // (the group's prefetch goes right after X in forward order), or at the front (after the
  // inputs) when X is null.
  std::vector<Node*> order_rev;
  for (Node* n = g.back(); n != nullptr; n = n->prev()) {
    if (!graph::IsGradientReduction(*n)) order_rev.push_back(n);
  }
  std::vector<std::pair<Node*, Group>> launches;
  Group current;
  std::deque<Group> waiting;
  double buffered = 0;
  Node* first_compute = nullptr;  // the first non-placeholder in forward order
  for (Node* n : order_rev) {
    if (n->op != graph::ops::kPlaceholder) first_compute = n;
  }
  for (Node* n : order_rev) {
    if (n->op == graph::ops::kPlaceholder) continue;
    // Free up memory: the node before this one (in forward order) peaks at the predicted peak.
    while (budget_.peak_bytes + buffered > max_mem || buffered > kMaxBufferedSize) {
      if (!waiting.empty()) {
        buffered -= bytes_of(waiting.front());
        launches.emplace_back(n, std::move(waiting.front()));
        waiting.pop_front();
      } else if (!current.empty()) {
        waiting.push_back(std::move(current));
        current.clear();
      } else {
        break;
      }
    }
    if (IsParamGather(*n)) {
      const double cur = bytes_of(current), next = size[n];
      const bool fuse = std::max(t(cur), t(next)) * kFuseFactor > t(cur + next) && cur + next < kMaxFuseSize;
      if (!current.empty() && !fuse) {
        waiting.push_back(std::move(current));
        current.clear();
      }
      current.push_back(n);
      buffered += next;
    }
    if (n == first_compute) {
      for (Group& w : waiting) launches.emplace_back(nullptr, std::move(w));
      waiting.clear();
      if (!current.empty()) launches.emplace_back(nullptr, std::move(current));
      current.clear();
    }
  }
  // Insert in forward order: launches were found walking backwards, so the last found is first.
  int index = 0;
  for (auto it = launches.rbegin(); it != launches.rend(); ++it) {
    Node* after = it->first;
    const Group& group = it->second;
    // A group lists its gathers in reverse walk order; prefetch_params_fused takes them forward.
    std::string params;
    for (auto p = group.rbegin(); p != group.rend(); ++p) params += (params.empty() ? "" : ",") + (*p)->param;
    // Its module is where it is launched: the picture draws it there.
    graph::NodeSpec spec{.name = "prefetch_" + std::to_string(index++),
                         .op = std::string(graph::ops::kPrefetch),
                         .module = after == nullptr ? std::string() : after->module,
                         .param = params,
                         .shape = graph::Shape{},
                         .group = group.back()->group};
    if (after == nullptr) {
      g.InsertBefore(first_compute, std::move(spec));
    } else {
      g.InsertAfter(after, std::move(spec));
    }
  }
  return !launches.empty();
}

}  // namespace dsp::sim::passes
