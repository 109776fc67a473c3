// SPDX-License-Identifier: Apache-2.0
// Renders group tables: an aligned table for people, JSON (schemas/groups-report.schema.json) and
// CSV (one row per rank of each group, for spreadsheets and pandas).
#pragma once

#include <optional>
#include <string>

#include "core/plan/plan.h"

namespace dsp {

enum class GroupsFormat { kTable, kJson, kCsv };

struct GroupsView {
  std::optional<int> rank;  // --rank: only the groups containing it
};

std::string RenderGroups(const Plan& plan, GroupsFormat format, const GroupsView& view = {});

// A rank list as the groups table prints it: runs of three or more consecutive ranks as "a-b",
// "[0-3,8,9]".
std::string FormatRankGroup(const RankGroup& group);

}  // namespace dsp
