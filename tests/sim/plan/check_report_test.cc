// SPDX-License-Identifier: Apache-2.0
// The text and JSON renderings of `ds-plan check` on hand-built results: sections, units and the
// verdict line.
#include "sim/plan/check_report.h"

#include <limits>

#include <gtest/gtest.h>

namespace dsp::sim {
namespace {

PlanCheckResult Result() {
  PlanCheckResult r;
  r.plan_path = "plan.json";
  r.tolerance_percent = 1;
  r.recorded_version = r.current_version = "0.1.0";
  return r;
}

TEST(PlanCheckReport, UnitsFollowTheFieldName) {
  EXPECT_EQ(FormatPlanValue("memory.peak_bytes", Json(193645904896.0)), "193.646 GB");
  EXPECT_EQ(FormatPlanValue("collectives.all_to_all.ep.bytes_per_step", Json(804790000.0)), "804.79 MB");
  EXPECT_EQ(FormatPlanValue("time.step_seconds", Json(2.08374)), "2.0837 s");
  EXPECT_EQ(FormatPlanValue("time.compute_seconds", Json(0.928756)), "928.756 ms");
  EXPECT_EQ(FormatPlanValue("time.mfu", Json(0.6593)), "65.93 %");
  EXPECT_EQ(FormatPlanValue("time.tokens_per_second", Json(62902.07)), "62902");
  EXPECT_EQ(FormatPlanValue("layout.tp", Json(2)), "2");
  EXPECT_EQ(FormatPlanValue("memory.fits", Json(false)), "false");
  EXPECT_EQ(FormatPlanValue("memory.peak_bytes", Json(nullptr)), "absent");
}

TEST(PlanCheckReport, OkLine) {
  EXPECT_EQ(RenderPlanCheckText(Result()),
            "plan.json: ok, the plan recomputed from its inputs matches (tolerance 1%)\n");
}

TEST(PlanCheckReport, FailuresBySectionAndNotes) {
  PlanCheckResult r = Result();
  r.changed_inputs.push_back({"config", "c.json", std::string(64, 'a'), std::string(64, 'b')});
  r.config_changes.push_back({"/zero_optimization/stage", Json(1), Json(2), false, false});
  r.comparison.differences.push_back(
      {"groups.tables.tp", Json(nullptr), Json(nullptr), std::nullopt, false, "4 groups of 2 -> 2 groups of 4"});
  r.comparison.differences.push_back({"layout.zero_stage", Json(1), Json(2), std::nullopt, false, ""});
  r.comparison.differences.push_back({"time.step_seconds", Json(2.0), Json(1.99), -0.005, true, ""});
  EXPECT_EQ(RenderPlanCheckText(r),
            "plan.json: CHANGED, 2 differences (tolerance 1%)\n"
            "inputs changed since the snapshot (notes):\n"
            "  config c.json: sha256 aaaaaaaaaaaa -> bbbbbbbbbbbb\n"
            "    /zero_optimization/stage: 1 -> 2\n"
            "group tables:\n"
            "  tp: 4 groups of 2 -> 2 groups of 4\n"
            "values:\n"
            "  layout.zero_stage: 1 -> 2\n"
            "within tolerance:\n"
            "  time.step_seconds: 2.0000 s -> 1.9900 s (-0.50%)\n");
  Json j = PlanCheckToJson(r);
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_EQ(j["failures"], 2);
  EXPECT_EQ(j["differences"][2]["relative_change"], -0.005);
  EXPECT_TRUE(j["differences"][2]["within_tolerance"].get<bool>());
}

TEST(PlanCheckReport, NotRecomputedFails) {
  PlanCheckResult r = Result();
  r.recomputed = false;
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(RenderPlanCheckText(r), "plan.json: CHANGED, the recorded inputs no longer give a plan (errors above)\n");
  EXPECT_FALSE(PlanCheckToJson(r)["recomputed"].get<bool>());
}

TEST(PlanCheckReport, ChangeFromZeroHasNoPercentage) {
  PlanCheckResult r = Result();
  r.comparison.differences.push_back(
      {"time.offload_seconds", Json(0.0), Json(0.5), std::numeric_limits<double>::infinity(), false, ""});
  EXPECT_NE(RenderPlanCheckText(r).find("time.offload_seconds: 0 s -> 500.000 ms (was 0)"), std::string::npos)
      << RenderPlanCheckText(r);
  EXPECT_TRUE(PlanCheckToJson(r)["differences"][0]["relative_change"].is_null());
}

}  // namespace
}  // namespace dsp::sim
