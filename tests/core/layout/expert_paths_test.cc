// SPDX-License-Identifier: Apache-2.0
// DeepSpeed's EP/EDP code paths (layout_internal.h) on their own, over every (pp, tp, ep) with
// world <= 32: partition, canonical form after Canonicalize, sizes, stage containment, EP/EDP
// orthogonality and the closed forms of deepspeed/utils/groups.py's loops (layout_checks.h).
#include <gtest/gtest.h>

#include <string>

#include "core/layout/layout_internal.h"
#include "tests/core/layout/layout_checks.h"

namespace dsp {
namespace {

using layout_internal::ExpertGroups;
using testing::CheckKind;
using testing::CheckOrthogonal;
using testing::ExpertSizes;
using testing::Failures;
using testing::ForEachDenseShape;

// Checks the EP/EDP lists of `path` for `s` (D's edp has dp/ep ranks: expert TP = TP there).
void CheckPath(const ParallelSizes& s, ExpertLayout path, ExpertGroups groups, Failures& f) {
  ++f.checked;
  GroupTables t;
  t.world = s.world;
  t.expert_layout = path;
  layout_internal::Canonicalize(groups.ep);
  layout_internal::Canonicalize(groups.edp);
  t.groups[GroupKind::kEp] = std::move(groups.ep);
  t.groups[GroupKind::kEdp] = std::move(groups.edp);
  const int stage = s.world / s.pp;
  const int expert_tp = path == ExpertLayout::kMegatronMpu ? s.tp : 1;
  if (t.groups[GroupKind::kEp].front().size() != static_cast<size_t>(s.ep) ||
      t.groups[GroupKind::kEdp].front().size() != static_cast<size_t>(stage / s.ep / expert_tp)) {
    f.Add("EP/EDP group sizes");
  }
  std::vector<std::vector<int>> ids(7);
  ids[static_cast<int>(GroupKind::kEp)] = CheckKind(s, t, GroupKind::kEp, f);
  ids[static_cast<int>(GroupKind::kEdp)] = CheckKind(s, t, GroupKind::kEdp, f);
  CheckOrthogonal(s, t, GroupKind::kEp, GroupKind::kEdp, ids, f);
}

// Up to 32 ranks: the engine's paths are swept to 64 ranks through BuildGroupTables in
// group_properties_test.cc; these loops only add the explicit ones, and the suite is a Debug build.
constexpr int kMaxWorld = 32;

TEST(ExpertGroupPathsTest, EveryPathUpTo32Ranks) {
  Failures f;
  ForEachDenseShape(kMaxWorld, [&](ParallelSizes s) {
    if (s.sp != 1) return;  // no EP/EDP path reads sp
    s.expert_parallel = true;
    const int stage = s.world / s.pp;
    for (int ep : ExpertSizes(s)) {
      s.ep = ep;
      s.data_before_expert = false;
      f.SetContext(s, RankLayout::kDeepSpeed, ExpertLayout::kAuto);
      if (s.tp == 1) {  // (A), (A') and (C) do not read tp
        CheckPath(s, ExpertLayout::kExpertsFirst,
                  layout_internal::LegacyExpertGroups(s.world, stage, ep, false), f);
        CheckPath(s, ExpertLayout::kFolding,
                  layout_internal::FoldingExpertGroups(s.world, stage, ep), f);
        ExpertGroups d_e = layout_internal::LegacyExpertGroups(s.world, stage, ep, true);
        s.data_before_expert = true;
        CheckPath(s, ExpertLayout::kDataFirst, std::move(d_e), f);
        s.data_before_expert = false;
      }
      CheckPath(s, ExpertLayout::kLaneMajor,
                layout_internal::ModelParallelExpertGroups(s.world, stage, s.tp, true, ep), f);
      if (s.tp > 1) {
        // (B') is consecutive: the same lists as (A) whatever the model-parallel size.
        ExpertGroups b_prime =
            layout_internal::ModelParallelExpertGroups(s.world, stage, s.tp, false, ep);
        ExpertGroups a = layout_internal::LegacyExpertGroups(s.world, stage, ep, false);
        if (b_prime.ep != a.ep || b_prime.edp != a.edp) f.Add("(B') differs from (A)");
      }
      for (bool data_before : {false, true}) {
        s.data_before_expert = data_before;
        Result<ExpertGroups> d =
            layout_internal::MegatronMpuExpertGroups(s.world, s.tp, ep, s.pp, data_before);
        const bool dp_divisible = (stage / s.tp) % ep == 0;
        if (d.ok() != dp_divisible) {
          f.Add("path D acceptance: " + std::string(d.ok() ? "accepted" : d.error().message));
        } else if (d.ok()) {
          CheckPath(s, ExpertLayout::kMegatronMpu, std::move(*d), f);
        }
      }
    }
  });
  EXPECT_EQ(f.count, 0) << f.Report();
  EXPECT_GT(f.checked, 2000);
}

}  // namespace
}  // namespace dsp
