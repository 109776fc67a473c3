// SPDX-License-Identifier: Apache-2.0
#include "sim/schedule/simulator.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "sim/comm/collectives.h"
#include "sim/comm/group_links.h"

namespace dsp::sim::schedule {
namespace {

constexpr CollectiveKind kAllKinds[] = {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                                        CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll};
// Every kind a task may carry: context parallelism's KV ring sends over the sp group too (the
// engine programs, sim/schedule/engine_program.h). A neighbour send prices on the same links as
// the kinds above, so the rank classes need not tell it apart.
constexpr CollectiveKind kTaskKinds[] = {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                                         CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll,
                                         CollectiveKind::kBroadcast, CollectiveKind::kSendRecv};

// Index of the group of each kind that holds each rank.
std::map<GroupKind, std::vector<int>> GroupIndex(const Plan& plan) {
  std::map<GroupKind, std::vector<int>> index;
  for (const auto& [kind, groups] : plan.groups.groups) {
    if (kind == GroupKind::kPp) continue;
    std::vector<int>& of = index[kind];
    of.assign(static_cast<size_t>(plan.sizes.world), -1);
    for (size_t g = 0; g < groups.size(); ++g) {
      for (int r : groups[g]) of[static_cast<size_t>(r)] = static_cast<int>(g);
    }
  }
  return index;
}

LinkSpec LinkOf(const SimInput& in, GroupKind kind, CollectiveKind coll, const std::vector<int>& group) {
  return GroupLink(coll, group, in.cluster->gpus_per_node, in.cluster->intra_node, in.cluster->inter_node);
}

// One network domain of one rank (its NVLink, or its node's NICs): collectives that cross it share
// its bandwidth. A collective runs at full speed whenever the link is free and waits while
// another collective placed before it holds the link, so it progresses in the gaps between them
// (work-conserving, as NCCL's concurrent communicators keep the link busy) and ends when it has had
// its own duration of link time.
class LinkTimeline {
 public:
  // The collective's start and end: `seconds` of free link time from `ready` on.
  std::pair<double, double> Place(double ready, double seconds) {
    if (seconds <= 0) return {ready, ready};
    double at = ready, left = seconds, start = -1;
    for (;;) {
      auto next = busy_.upper_bound(at);  // the first busy interval starting after `at`
      if (next != busy_.begin() && std::prev(next)->second > at) {
        at = std::prev(next)->second;  // inside a busy interval: wait for its end
        continue;
      }
      const double gap_end = next == busy_.end() ? std::numeric_limits<double>::infinity() : next->first;
      if (start < 0) start = at;
      if (gap_end - at >= left) {
        Occupy(at, at + left);
        return {start, at + left};
      }
      Occupy(at, gap_end);
      left -= gap_end - at;
      at = gap_end;
    }
  }

 private:
  void Occupy(double from, double to) {
    // Merge with a neighbour ending exactly at `from` to keep the map small.
    auto it = busy_.lower_bound(from);
    if (it != busy_.begin() && std::prev(it)->second == from) {
      std::prev(it)->second = to;
    } else {
      busy_.emplace(from, to);
    }
    it = busy_.find(to);
    if (it != busy_.end()) {
      auto before = std::prev(it);
      before->second = it->second;
      busy_.erase(it);
    }
  }

  std::map<double, double> busy_;  // start -> end, disjoint
};

bool CrossesNodes(const std::vector<int>& group, int gpus_per_node) {
  if (gpus_per_node <= 0 || group.empty()) return false;
  const int node = group.front() / gpus_per_node;
  return std::any_of(group.begin(), group.end(), [&](int r) { return r / gpus_per_node != node; });
}

// Memory over time on one rank: allocations when a task starts, frees when it ends (frees first
// on ties), from the program's resident bytes; the rank's last end and its peak.
void FillMemoryTimeline(const Program& program, RankTimeline& tl) {
  const size_t n = program.tasks.size();
  std::vector<std::pair<double, double>> events;
  for (size_t i = 0; i < n; ++i) {
    const Task& task = program.tasks[i];
    if (task.alloc_at_start != 0) events.emplace_back(tl.times[i].start, task.alloc_at_start);
    if (task.alloc_at_end != 0) events.emplace_back(tl.times[i].end, task.alloc_at_end);
    tl.end = std::max(tl.end, tl.times[i].end);
  }
  std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;
  });
  double bytes = program.static_bytes + program.buffer_bytes;
  tl.memory.emplace_back(0.0, bytes);
  tl.peak_bytes = bytes;
  for (const auto& [t, delta] : events) {
    bytes += delta;
    if (!tl.memory.empty() && tl.memory.back().first == t) {
      tl.memory.back().second = bytes;
    } else {
      tl.memory.emplace_back(t, bytes);
    }
    if (bytes > tl.peak_bytes) {
      tl.peak_bytes = bytes;
      tl.peak_at = t;
    }
  }
}

}  // namespace

std::vector<int> RankClasses(const SimInput& in, const std::map<int, double>& slow_ranks) {
  const Plan& plan = *in.plan;
  const int world = plan.sizes.world;
  const auto index = GroupIndex(plan);
  // Start: what a rank sees by itself, its compute speed and the link of each of its groups.
  std::vector<int> cls(static_cast<size_t>(world));
  {
    // The link of a group is computed once per group (O(world) per kind), not once per member.
    std::map<GroupKind, std::vector<std::vector<double>>> group_links;
    for (const auto& [kind, groups] : plan.groups.groups) {
      if (kind == GroupKind::kPp) continue;
      for (const auto& group : groups) {
        std::vector<double> sig{static_cast<double>(group.size())};
        for (CollectiveKind c : kAllKinds) {
          const LinkSpec l = LinkOf(in, kind, c, group);
          sig.push_back(l.busbw_bytes_per_second);
          sig.push_back(l.latency_seconds);
        }
        group_links[kind].push_back(std::move(sig));
      }
    }
    std::map<std::vector<double>, int> ids;
    for (int r = 0; r < world; ++r) {
      std::vector<double> sig;
      auto slow = slow_ranks.find(r);
      sig.push_back(slow == slow_ranks.end() ? 1.0 : slow->second);
      for (const auto& [kind, of] : index) {
        const auto& link = group_links[kind][static_cast<size_t>(of[static_cast<size_t>(r)])];
        sig.insert(sig.end(), link.begin(), link.end());
      }
      cls[static_cast<size_t>(r)] = ids.emplace(sig, static_cast<int>(ids.size())).first->second;
    }
  }
  // Refine until stable: a rank's class also records which classes share each of its groups.
  for (;;) {
    const std::set<int> before(cls.begin(), cls.end());
    std::map<GroupKind, std::vector<int>> group_sig;
    for (const auto& [kind, groups] : plan.groups.groups) {
      if (kind == GroupKind::kPp) continue;
      std::map<std::vector<int>, int> ids;
      std::vector<int>& sig_of = group_sig[kind];
      for (const auto& group : groups) {
        std::vector<int> members;
        for (int r : group) members.push_back(cls[static_cast<size_t>(r)]);
        std::sort(members.begin(), members.end());
        sig_of.push_back(ids.emplace(members, static_cast<int>(ids.size())).first->second);
      }
    }
    std::map<std::vector<int>, int> ids;
    std::vector<int> next(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      std::vector<int> sig{cls[static_cast<size_t>(r)]};
      for (const auto& [kind, of] : index) sig.push_back(group_sig[kind][static_cast<size_t>(of[static_cast<size_t>(r)])]);
      next[static_cast<size_t>(r)] = ids.emplace(sig, static_cast<int>(ids.size())).first->second;
    }
    cls = std::move(next);
    if (std::set<int>(cls.begin(), cls.end()).size() == before.size()) break;
  }
  // Number classes by their lowest rank, so the output does not depend on map order.
  std::map<int, int> renumber;
  for (int r = 0; r < world; ++r) renumber.emplace(cls[static_cast<size_t>(r)], static_cast<int>(renumber.size()));
  for (int& c : cls) c = renumber[c];
  return cls;
}

Result<Schedule> Simulate(const Program& program, const SimInput& in, const SimulateOptions& options) {
  const Plan& plan = *in.plan;
  const int world = plan.sizes.world;
  for (const auto& [rank, factor] : options.slow_ranks) {
    if (rank < 0 || rank >= world) {
      return Error{"slow rank " + std::to_string(rank) + " is outside the world (0-" + std::to_string(world - 1) + ")"};
    }
    if (!(factor > 0)) return Error{"slow rank " + std::to_string(rank) + ": the factor must be > 0"};
  }
  Schedule s;
  s.world = world;
  if (options.full) {
    for (int r = 0; r < world; ++r) s.class_of_rank.push_back(r);
  } else {
    s.class_of_rank = RankClasses(in, options.slow_ranks);
  }
  const int classes = 1 + *std::max_element(s.class_of_rank.begin(), s.class_of_rank.end());
  s.representative.assign(static_cast<size_t>(classes), -1);
  for (int r = world - 1; r >= 0; --r) s.representative[static_cast<size_t>(s.class_of_rank[static_cast<size_t>(r)])] = r;

  // Per class: compute factor, and per group kind the classes in its group, the group size and
  // links.
  const auto index = GroupIndex(plan);
  struct ClassGroups {
    std::vector<int> members;  // classes in the representative's group
    int size = 1;
    std::map<CollectiveKind, LinkSpec> link;
    bool inter_node = false;  // the group spans nodes: its collectives share the NICs
  };
  std::vector<double> factor(static_cast<size_t>(classes), 1.0);
  std::vector<std::map<GroupKind, ClassGroups>> groups(static_cast<size_t>(classes));
  for (int c = 0; c < classes; ++c) {
    const int rep = s.representative[static_cast<size_t>(c)];
    auto slow = options.slow_ranks.find(rep);
    if (slow != options.slow_ranks.end()) factor[static_cast<size_t>(c)] = slow->second;
    for (const auto& [kind, of] : index) {
      const auto& group = plan.groups.groups.at(kind)[static_cast<size_t>(of[static_cast<size_t>(rep)])];
      ClassGroups& cg = groups[static_cast<size_t>(c)][kind];
      std::set<int> members;
      for (int r : group) members.insert(s.class_of_rank[static_cast<size_t>(r)]);
      cg.members.assign(members.begin(), members.end());
      cg.size = static_cast<int>(group.size());
      for (CollectiveKind k : kTaskKinds) cg.link[k] = LinkOf(in, kind, k, group);
      cg.inter_node = CrossesNodes(group, in.cluster->gpus_per_node);
    }
  }

  GroupLinkCache blocks;  // carved-out groups (hpZ, MiCS, qgZ), the same for every class
  const size_t n = program.tasks.size();
  s.classes.assign(static_cast<size_t>(classes), RankTimeline{});
  for (auto& t : s.classes) t.times.assign(n, TaskTime{});
  std::vector<std::map<int, double>> stream_free(static_cast<size_t>(classes));
  std::vector<std::array<LinkTimeline, 2>> links(static_cast<size_t>(classes));  // [intra, inter]
  std::vector<double> ready(static_cast<size_t>(classes));
  for (size_t i = 0; i < n; ++i) {
    const Task& task = program.tasks[i];
    for (int c = 0; c < classes; ++c) {
      double r = stream_free[static_cast<size_t>(c)][task.stream];
      for (int d : task.deps) r = std::max(r, s.classes[static_cast<size_t>(c)].times[static_cast<size_t>(d)].end);
      ready[static_cast<size_t>(c)] = r;
    }
    for (int c = 0; c < classes; ++c) {
      double start = ready[static_cast<size_t>(c)];
      // A slow rank computes slowly; its copies and collectives run at the links' speed.
      double seconds = task.compute_seconds * (task.stream == kComputeStream ? factor[static_cast<size_t>(c)] : 1.0);
      if (task.collective) {
        auto it = groups[static_cast<size_t>(c)].find(task.group);
        if (it == groups[static_cast<size_t>(c)].end()) {
          return Error{"task '" + task.name + "' runs on " + std::string(GroupKindName(task.group)) +
                       " groups, which the plan does not have"};
        }
        // Members of a carved-out group are a subset of the table's group: waiting for the whole
        // group is exact for the symmetric ranks a plan has and conservative otherwise.
        for (int member : it->second.members) start = std::max(start, ready[static_cast<size_t>(member)]);
        bool inter = it->second.inter_node;
        if (task.block > 0) {
          const GroupLinkInfo& g = blocks.GetBlocks(in, task.kind, task.block, task.strided);
          seconds += g.size > 1 ? CollectiveSeconds(task.kind, g.size, task.bytes, g.link) : 0.0;
          inter = g.inter_node;
        } else {
          seconds += CollectiveSeconds(task.kind, it->second.size, task.bytes, it->second.link.at(task.kind));
        }
        const auto [from, to] = links[static_cast<size_t>(c)][inter ? 1 : 0].Place(start, seconds);
        start = from;
        seconds = to - from;
      }
      TaskTime& t = s.classes[static_cast<size_t>(c)].times[i];
      t.start = start;
      t.end = start + seconds;
      stream_free[static_cast<size_t>(c)][task.stream] = t.end;
    }
  }

  for (RankTimeline& tl : s.classes) {
    FillMemoryTimeline(program, tl);
    s.step_seconds = std::max(s.step_seconds, tl.end);
  }
  return s;
}

}  // namespace dsp::sim::schedule
