// SPDX-License-Identifier: Apache-2.0
// Property checks for core/layout sweeps: the shape enumeration, the acceptance rules restated
// independently of the implementation, the invariants every layout keeps, and the closed
// forms of DeepSpeed's and Megatron's group loops that the loop-by-loop builders must agree with.
//
// Checks are plain loops that record failures instead of asserting per element: a sweep visits
// tens of thousands of tables, and the suite runs as a Debug build.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/layout/groups.h"

namespace dsp::testing {

/// Calls visit(sizes) for every world <= max_world and every pp | world, tp | stage,
/// sp | stage/tp (expert_parallel off, other fields default).
template <class Visit>
void ForEachDenseShape(int max_world, Visit&& visit) {
  for (int world = 1; world <= max_world; ++world) {
    for (int pp = 1; pp <= world; ++pp) {
      if (world % pp != 0) continue;
      const int stage = world / pp;
      for (int tp = 1; tp <= stage; ++tp) {
        if (stage % tp != 0) continue;
        for (int sp = 1; sp <= stage / tp; ++sp) {
          if (stage / tp % sp != 0) continue;
          ParallelSizes s;
          s.world = world;
          s.pp = pp;
          s.tp = tp;
          s.sp = sp;
          visit(s);
        }
      }
    }
  }
}

/// The AutoEP sizes to try for a dense shape: ep | stage.
inline std::vector<int> ExpertSizes(const ParallelSizes& s) {
  std::vector<int> out;
  const int stage = s.world / s.pp;
  for (int ep = 1; ep <= stage; ++ep) {
    if (stage % ep == 0) out.push_back(ep);
  }
  return out;
}

inline std::string Describe(const ParallelSizes& s, RankLayout layout, ExpertLayout expert) {
  std::string out = layout == RankLayout::kMegatron ? "megatron" : "deepspeed";
  out += "/" + std::string(ExpertLayoutName(expert)) + " W=" + std::to_string(s.world) +
         " tp=" + std::to_string(s.tp) + " sp=" + std::to_string(s.sp) +
         " pp=" + std::to_string(s.pp);
  if (s.expert_parallel) {
    out += " ep=" + std::to_string(s.ep) + " etp=" + std::to_string(s.etp);
    if (s.data_before_expert) out += " d+e";
  }
  return out;
}

/// Collects failures; Report() shows the count and the first few with the table they came from.
struct Failures {
  // The table being checked; described only when something fails (sweeps visit many tables).
  ParallelSizes sizes;
  RankLayout layout = RankLayout::kDeepSpeed;
  ExpertLayout expert = ExpertLayout::kAuto;
  std::vector<std::string> messages;
  int count = 0;
  int checked = 0;
  void SetContext(const ParallelSizes& s, RankLayout l, ExpertLayout e) {
    sizes = s;
    layout = l;
    expert = e;
  }
  void Add(const std::string& what) {
    if (messages.size() < 20) messages.push_back(Describe(sizes, layout, expert) + ": " + what);
    ++count;
  }
  std::string Report() const {
    std::string out = std::to_string(count) + " failures\n";
    for (const std::string& m : messages) out += m + "\n";
    return out;
  }
};

/// Which sizes each layout accepts (groups.h), restated independently. Assumes Derive() passes.
inline bool ExpectedToAccept(const ParallelSizes& s, RankLayout layout, ExpertLayout expert) {
  if (layout == RankLayout::kMegatron) {
    return expert == ExpertLayout::kAuto || expert == ExpertLayout::kFolding;
  }
  if (s.tp > 1 && s.sp > 1) return false;
  if (!s.expert_parallel) return true;
  if (s.etp != 1) return false;
  if (expert == ExpertLayout::kAuto) {
    if (s.tp > 1) return s.pp == 1 && s.ep > 1 && !s.data_before_expert;
    return !(s.data_before_expert && s.sp > 1);
  }
  if (expert == ExpertLayout::kMegatronMpu) return (s.world / s.pp / s.tp) % s.ep == 0;
  return true;
}

/// The closed form of each group: two ranks share a group iff their keys are equal.
/// DeepSpeed: local index l = r mod stage, stage index r / stage (deepspeed/utils/groups.py).
/// Megatron: dense r = tp + TP(cp + CP(dp + DP pp)), expert r = etp + ETP(ep + EP(edp + EDP pp)).
inline std::int64_t ClosedFormKey(const ParallelSizes& s, const GroupTables& t, GroupKind kind,
                                  int r) {
  const int stage = s.world / s.pp;
  const int st = r / stage, l = r % stage, tp = s.tp, sp = s.sp, ep = s.ep;
  auto key = [](std::int64_t a, std::int64_t b = 0, std::int64_t c = 0) {
    return (a * 4096 + b) * 4096 + c;
  };
  if (t.layout == RankLayout::kMegatron) {
    const int etp = s.etp;
    switch (kind) {
      case GroupKind::kTp: return key(r / tp);
      case GroupKind::kSp: return key(r % tp, r / (tp * sp));
      case GroupKind::kDp: return key(r % tp, r / tp % sp, st);
      case GroupKind::kSpDp: return key(r % tp, st);
      case GroupKind::kPp: return key(l);
      case GroupKind::kEp: return key(r % etp, r / (etp * ep));
      case GroupKind::kEdp: return key(r % etp, r / etp % ep, st);
    }
  }
  switch (kind) {
    case GroupKind::kTp: return key(r / tp);             // [floor(r/TP)TP + j]
    case GroupKind::kDp: return key(st, l % (tp * sp));  // [r mod TP + k TP] per stage
    case GroupKind::kSp: return key(r / sp);             // [floor(r/SP)SP + j]
    case GroupKind::kSpDp: return key(st);               // the whole stage
    case GroupKind::kPp: return key(l);                  // ProcessTopology pipe axis
    case GroupKind::kEp:
    case GroupKind::kEdp: break;
  }
  const bool is_ep = kind == GroupKind::kEp;
  switch (t.expert_layout) {
    case ExpertLayout::kDataFirst: {  // eps = stage/EP: EDP contiguous, EP strided by eps
      const int eps = stage / ep;
      return key(st, is_ep ? l % eps : l / eps);
    }
    case ExpertLayout::kLaneMajor: {  // idx(l) = (l mod TP) g + floor(l/TP), g = stage/TP
      const int idx = (l % tp) * (stage / tp) + l / tp;
      return key(st, is_ep ? idx / ep : idx % ep);
    }
    case ExpertLayout::kMegatronMpu: {  // lane = l mod TP; k = position in the lane's DP group
      const int k = l / tp, dp_stride = stage / tp / ep;
      if (s.data_before_expert) return key(st, l % tp, is_ep ? k % dp_stride : k / dp_stride);
      return key(st, l % tp, is_ep ? k / ep : k % ep);
    }
    default:  // (A), (B'), (C): EP(r) = [floor(l/EP)EP + j], EDP(r) = [l mod EP + k EP]
      return key(st, is_ep ? l / ep : l % ep);
  }
}

// Partition of [0, W), ranks ascending, groups sorted by first rank, equal sizes, stage
// containment and closed form; returns the group index of every rank.
// (Raw-pointer loops: the suite is a Debug build and this runs for every rank of every table.)
inline std::vector<int> CheckKind(const ParallelSizes& s, const GroupTables& t, GroupKind kind,
                                  Failures& f) {
  const std::vector<RankGroup>& groups = t.groups.at(kind);
  auto fail = [&](const std::string& what) { f.Add(std::string(GroupKindName(kind)) + what); };
  const int stage = s.world / s.pp;
  const size_t size = groups.front().size();
  std::vector<int> id(s.world, -1);
  int* id_of = id.data();
  std::vector<std::int64_t> keys(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const int* rank = groups[g].data();
    const int first = rank[0];
    if (groups[g].size() != size) fail(": unequal group sizes");
    if (g > 0 && groups[g - 1].front() >= first) fail(": groups not sorted");
    keys[g] = ClosedFormKey(s, t, kind, first);
    for (size_t k = 0; k < groups[g].size(); ++k) {
      const int r = rank[k];
      if (r < 0 || r >= s.world) {
        fail(": rank out of range");
        continue;
      }
      if (k > 0 && rank[k - 1] >= r) fail(": ranks not ascending");
      if (id_of[r] != -1) fail(": rank " + std::to_string(r) + " in two groups");
      id_of[r] = static_cast<int>(g);
      if (k > 0 && ClosedFormKey(s, t, kind, r) != keys[g]) fail(": differs from closed form");
      const bool same_stage = r / stage == first / stage;
      if (kind == GroupKind::kPp ? (k > 0 && (same_stage || r % stage != first % stage))
                                 : !same_stage) {
        fail(": group violates pipeline stages");
      }
    }
  }
  std::sort(keys.begin(), keys.end());
  if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) {
    fail(": two groups where the closed form has one");
  }
  for (int r = 0; r < s.world; ++r) {
    if (id_of[r] == -1) fail(": rank " + std::to_string(r) + " missing");
  }
  return id;
}

// |A ∩ B| <= 1 for all A in x, B in y. For two in-stage kinds whose sizes multiply to the stage
// size also "every same-stage pair meets in exactly one rank": given |A ∩ B| <= 1, that holds
// iff each A meets |A| distinct y-groups and its stage holds exactly |A| y-groups.
inline void CheckOrthogonal(const ParallelSizes& s, const GroupTables& t, GroupKind x, GroupKind y,
                            const std::vector<std::vector<int>>& ids, Failures& f) {
  if (!t.groups.count(x) || !t.groups.count(y)) return;
  const std::vector<RankGroup>& gx = t.groups.at(x);
  const std::vector<RankGroup>& gy = t.groups.at(y);
  const std::vector<int>& idy = ids[static_cast<int>(y)];
  const std::string pair = std::string(GroupKindName(x)) + "/" + std::string(GroupKindName(y));
  std::vector<int> seen_by(gy.size(), -1);  // last x-group that met each y-group
  if (idy.empty()) return;
  for (size_t a = 0; a < gx.size(); ++a) {
    for (int r : gx[a]) {
      if (r < 0 || r >= s.world || idy[r] < 0) return;  // not a partition: reported already
      const int b = idy[r];
      if (seen_by[b] == static_cast<int>(a)) {
        f.Add(pair + ": two groups share two ranks");
        return;
      }
      seen_by[b] = static_cast<int>(a);
    }
  }
  const int stage = s.world / s.pp;
  if (x == GroupKind::kPp || y == GroupKind::kPp) return;
  if (gx.front().size() * gy.front().size() != static_cast<size_t>(stage)) return;
  std::vector<size_t> y_groups_in_stage(s.pp, 0);
  for (const RankGroup& b : gy) ++y_groups_in_stage[b.front() / stage];
  for (const RankGroup& a : gx) {
    if (y_groups_in_stage[a.front() / stage] != a.size()) {
      f.Add(pair + ": groups of one stage do not meet in exactly one rank");
      return;
    }
  }
}

/// Kinds in use, group sizes (and their products), plus CheckKind for every kind and
/// CheckOrthogonal for every pair of independent axes. With `dense_reference` (an already checked
/// table of the same dense shape) the dense kinds are compared with it instead of re-checked.
inline void CheckTables(const ParallelSizes& s, const GroupTables& t, Failures& f,
                        const GroupTables* dense_reference = nullptr) {
  ++f.checked;
  const int stage = s.world / s.pp;
  const int dp = stage / (s.tp * s.sp);
  if (t.world != s.world || t.expert_layout == ExpertLayout::kAuto) f.Add("header fields");
  // Expert TP: etp in Megatron, tp in path D, none in DeepSpeed's other paths.
  int expert_tp = 1;
  if (t.layout == RankLayout::kMegatron) expert_tp = s.etp;
  if (t.layout == RankLayout::kDeepSpeed && t.expert_layout == ExpertLayout::kMegatronMpu) {
    expert_tp = s.tp;
  }
  using K = GroupKind;
  // Both arrays are indexed by GroupKind: tp, dp, sp, sp_dp, ep, edp, pp.
  const bool moe = s.expert_parallel;
  const bool in_use[] = {s.tp > 1, true, s.sp > 1, s.sp > 1, moe, moe, s.pp > 1};
  const int size[] = {s.tp, dp, s.sp, s.sp * dp, s.ep, stage / (s.ep * expert_tp), s.pp};
  std::vector<std::vector<int>> ids(7);
  for (int k = 0; k < 7; ++k) {
    const GroupKind kind = static_cast<GroupKind>(k);
    const std::string name(GroupKindName(kind));
    if (in_use[k] != (t.groups.count(kind) == 1)) {
      f.Add(name + (in_use[k] ? " missing" : " unexpected"));
      continue;
    }
    if (!in_use[k]) continue;
    if (t.groups.at(kind).empty()) {
      f.Add(name + ": no groups");
      continue;
    }
    if (t.groups.at(kind).front().size() != static_cast<size_t>(size[k])) {
      f.Add(name + ": group size " + std::to_string(t.groups.at(kind).front().size()));
    }
    const bool expert_kind = kind == K::kEp || kind == K::kEdp;
    if (dense_reference && !expert_kind) {
      auto it = dense_reference->groups.find(kind);
      if (it == dense_reference->groups.end() || it->second != t.groups.at(kind)) {
        f.Add(name + ": differs from the table without experts");
      }
      continue;
    }
    ids[k] = CheckKind(s, t, kind, f);
  }
  // Actual sizes, absent kinds counted as 1: |tp||sp||dp||pp| = W, |ep||edp| etp |pp| = W,
  // |sp_dp| = |sp||dp|.
  auto n = [&](GroupKind kind) {
    auto it = t.groups.find(kind);
    if (it == t.groups.end()) return 1;
    return it->second.empty() ? 0 : static_cast<int>(it->second.front().size());
  };
  if (n(K::kTp) * n(K::kSp) * n(K::kDp) * n(K::kPp) != s.world) f.Add("|tp||sp||dp||pp| != W");
  if (s.sp > 1 && n(K::kSpDp) != n(K::kSp) * n(K::kDp)) f.Add("|sp_dp| != |sp||dp|");
  if (s.expert_parallel && n(K::kEp) * n(K::kEdp) * expert_tp * n(K::kPp) != s.world) {
    f.Add("|ep||edp| etp |pp| != W");
  }
  const K pairs[][2] = {{K::kTp, K::kDp},  {K::kTp, K::kSp}, {K::kSp, K::kDp}, {K::kTp, K::kSpDp},
                        {K::kEp, K::kEdp}, {K::kPp, K::kTp}, {K::kPp, K::kDp}, {K::kPp, K::kSp},
                        {K::kPp, K::kEp},  {K::kPp, K::kEdp}};
  for (const auto& p : pairs) {
    // Pairs of checked kinds only: EP/EDP against PP is implied by stage containment.
    if (!ids[static_cast<int>(p[0])].empty() && !ids[static_cast<int>(p[1])].empty()) {
      CheckOrthogonal(s, t, p[0], p[1], ids, f);
    }
  }
}

}  // namespace dsp::testing
