// SPDX-License-Identifier: Apache-2.0
#include "core/report/groups_report.h"

#include <algorithm>

#include "core/json/document.h"
#include "core/report/validate_report.h"

namespace dsp {
namespace {

std::vector<RankGroup> ShownGroups(const std::vector<RankGroup>& groups, const GroupsView& view) {
  return view.rank ? GroupsContaining(groups, *view.rank) : groups;
}

LayoutSummary Summary(const Plan& plan) {
  LayoutSummary l;
  l.world_size = plan.sizes.world;
  l.tp = plan.sizes.tp;
  l.dp = plan.derived.dp;
  l.sp = plan.sizes.sp;
  l.pp = plan.sizes.pp;
  l.ep = plan.sizes.expert_parallel ? plan.sizes.ep : 1;
  l.etp = plan.sizes.expert_parallel ? plan.sizes.etp : 1;
  l.edp = plan.derived.edp;
  l.zero_stage = plan.zero_stage;
  return l;
}

bool AnyCrosses(const std::vector<RankGroup>& groups, int gpus_per_node) {
  return std::any_of(groups.begin(), groups.end(),
                     [&](const RankGroup& g) { return CrossesNode(g, gpus_per_node); });
}

std::string Table(const Plan& plan, const GroupsView& view) {
  const auto& s = plan.sizes;
  std::string out = "world " + std::to_string(s.world) + ": tp=" + std::to_string(s.tp) +
                    " dp=" + std::to_string(plan.derived.dp) + " sp=" + std::to_string(s.sp) +
                    " pp=" + std::to_string(s.pp);
  if (s.expert_parallel) {
    out += " ep=" + std::to_string(s.ep) + " etp=" + std::to_string(s.etp) +
           " edp=" + std::to_string(plan.derived.edp);
  }
  out += " zero=" + std::to_string(plan.zero_stage) + "  (layout " +
         (plan.groups.layout == RankLayout::kDeepSpeed ? "deepspeed" : "megatron");
  if (s.expert_parallel) out += ", experts " + std::string(ExpertLayoutName(plan.groups.expert_layout));
  out += ")\n";
  if (view.rank) out += "groups of rank " + std::to_string(*view.rank) + "\n";
  bool crossing = false;
  for (const auto& [kind, groups] : plan.groups.groups) {
    auto shown = ShownGroups(groups, view);
    std::string name(GroupKindName(kind));
    size_t size = groups.empty() ? 0 : groups.front().size();
    std::string row = name + std::string(7 - std::min<size_t>(name.size(), 6), ' ') + "size " +
                      std::to_string(size) + "  ";
    for (size_t i = 0; i < shown.size(); ++i) {
      if (i > 0) row += " ";
      row += FormatRankGroup(shown[i]);
      if (plan.gpus_per_node && CrossesNode(shown[i], static_cast<int>(*plan.gpus_per_node))) {
        row += "*";
        crossing = true;
      }
    }
    out += row + "\n";
  }
  auto family = [&](bool experts) {
    GroupKind k = ZeroPartitionGroup(plan, experts);
    const auto& g = plan.groups.groups.at(k);
    return std::string(GroupKindName(k)) + " (size " + std::to_string(g.empty() ? 0 : g.front().size()) + ")";
  };
  out += "zero partition: dense parameters over " + family(false);
  if (s.expert_parallel) out += ", routed experts over " + family(true);
  out += "\n";
  if (crossing) {
    out += "* crosses a node boundary (" + std::to_string(*plan.gpus_per_node) + " GPUs per node)\n";
  }
  return out;
}

Json JsonReport(const Plan& plan, const GroupsView& view) {
  Json root = Json::object();
  root["schema_version"] = 1;
  root["world_size"] = plan.sizes.world;
  root["layout"] = LayoutToJson(Summary(plan));
  root["rank_layout"] = plan.groups.layout == RankLayout::kDeepSpeed ? "deepspeed" : "megatron";
  root["expert_layout"] =
      plan.sizes.expert_parallel ? Json(ExpertLayoutName(plan.groups.expert_layout)) : Json(nullptr);
  if (view.rank) root["rank"] = *view.rank;
  Json groups = Json::object();
  Json crosses = Json::object();
  for (const auto& [kind, list] : plan.groups.groups) {
    std::string name(GroupKindName(kind));
    groups[name] = ShownGroups(list, view);
    crosses[name] = plan.gpus_per_node ? Json(AnyCrosses(list, static_cast<int>(*plan.gpus_per_node)))
                                       : Json(nullptr);
  }
  root["groups"] = std::move(groups);
  root["crosses_node"] = std::move(crosses);
  root["gpus_per_node"] = plan.gpus_per_node ? Json(*plan.gpus_per_node) : Json(nullptr);
  Json zero = Json::object();
  zero["dense"] = GroupKindName(ZeroPartitionGroup(plan, false));
  zero["routed_experts"] =
      plan.sizes.expert_parallel ? Json(GroupKindName(ZeroPartitionGroup(plan, true))) : Json(nullptr);
  root["zero_partition"] = std::move(zero);
  return root;
}

std::string Csv(const Plan& plan, const GroupsView& view) {
  std::string out = "kind,group,position,rank,node\n";
  for (const auto& [kind, list] : plan.groups.groups) {
    // Group indices refer to the full table even when --rank filters it.
    for (size_t gi = 0; gi < list.size(); ++gi) {
      if (view.rank && std::find(list[gi].begin(), list[gi].end(), *view.rank) == list[gi].end()) continue;
      for (size_t p = 0; p < list[gi].size(); ++p) {
        int r = list[gi][p];
        out += std::string(GroupKindName(kind)) + "," + std::to_string(gi) + "," + std::to_string(p) +
               "," + std::to_string(r) + "," +
               (plan.gpus_per_node ? std::to_string(r / *plan.gpus_per_node) : std::string()) + "\n";
      }
    }
  }
  return out;
}

}  // namespace

std::string RenderGroups(const Plan& plan, GroupsFormat format, const GroupsView& view) {
  switch (format) {
    case GroupsFormat::kTable: return Table(plan, view);
    case GroupsFormat::kJson: return JsonReport(plan, view).dump(2) + "\n";
    case GroupsFormat::kCsv: return Csv(plan, view);
  }
  return Table(plan, view);
}

std::string FormatRankGroup(const RankGroup& g) {
  // Runs of consecutive ranks print as "a-b" once they are long enough to save space.
  std::string out = "[";
  for (size_t i = 0; i < g.size();) {
    size_t j = i;
    while (j + 1 < g.size() && g[j + 1] == g[j] + 1) ++j;
    if (i > 0) out += ",";
    if (j - i >= 2) {
      out += std::to_string(g[i]) + "-" + std::to_string(g[j]);
    } else {
      out += std::to_string(g[i]);
      if (j > i) out += "," + std::to_string(g[j]);
    }
    i = j + 1;
  }
  return out + "]";
}

}  // namespace dsp
