// SPDX-License-Identifier: Apache-2.0
// Test helpers for core/layout: rank tables written compactly
// ("[0,2,4,6] [1,3,5,7]", "[0-3] [4-7]", "[0..7]"), so expectations read like the tables in docs/groups.md.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "core/layout/groups.h"

namespace dsp::testing {

// Parses "[a,b,c] [d-e] [f..g]" into canonical groups (sorted inside, ordered by lowest rank).
inline std::vector<RankGroup> G(const std::string& text) {
  std::vector<RankGroup> groups;
  size_t i = 0;
  auto number = [&]() {
    int v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      v = v * 10 + (text[i++] - '0');
    }
    return v;
  };
  while ((i = text.find('[', i)) != std::string::npos) {
    ++i;
    RankGroup group;
    while (i < text.size() && text[i] != ']') {
      if (text[i] == ',' || text[i] == ' ') {
        ++i;
        continue;
      }
      int a = number();
      int b = a;
      if (text.compare(i, 2, "..") == 0) {
        i += 2;
        b = number();
      } else if (i < text.size() && text[i] == '-') {
        ++i;
        b = number();
      }
      for (int r = a; r <= b; ++r) group.push_back(r);
    }
    std::sort(group.begin(), group.end());
    groups.push_back(group);
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

// `n` singleton groups [0] [1] ... [n-1].
inline std::vector<RankGroup> Singletons(int n) {
  std::vector<RankGroup> groups;
  for (int r = 0; r < n; ++r) groups.push_back({r});
  return groups;
}

inline std::string Show(const std::vector<RankGroup>& groups) {
  std::string out;
  for (const RankGroup& g : groups) {
    out += "[";
    for (size_t k = 0; k < g.size(); ++k) out += (k ? "," : "") + std::to_string(g[k]);
    out += "] ";
  }
  return out;
}

// Builds tables, failing the test (and returning empty tables) on an Error.
inline GroupTables Build(const ParallelSizes& sizes, RankLayout layout = RankLayout::kDeepSpeed,
                         ExpertLayout expert = ExpertLayout::kAuto) {
  Result<GroupTables> tables = BuildGroupTables(sizes, layout, expert);
  EXPECT_TRUE(tables.ok()) << (tables.ok() ? "" : tables.error().message);
  return tables.ok() ? *tables : GroupTables{};
}

// The groups of one kind; empty when the kind is absent.
inline std::vector<RankGroup> Kind(const GroupTables& t, GroupKind kind) {
  auto it = t.groups.find(kind);
  return it == t.groups.end() ? std::vector<RankGroup>{} : it->second;
}

// The error message of a build that must fail ("" when it unexpectedly succeeds).
inline std::string BuildError(const ParallelSizes& sizes,
                              RankLayout layout = RankLayout::kDeepSpeed,
                              ExpertLayout expert = ExpertLayout::kAuto) {
  Result<GroupTables> tables = BuildGroupTables(sizes, layout, expert);
  EXPECT_FALSE(tables.ok()) << "expected an error";
  return tables.ok() ? std::string() : tables.error().message;
}

// ParallelSizes with AutoEP on (the common case in the expert tables).
inline ParallelSizes Moe(int world, int tp, int ep, int pp = 1) {
  ParallelSizes s;
  s.world = world;
  s.tp = tp;
  s.ep = ep;
  s.pp = pp;
  s.expert_parallel = true;
  return s;
}

}  // namespace dsp::testing
