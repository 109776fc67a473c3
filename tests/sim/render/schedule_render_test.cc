// SPDX-License-Identifier: Apache-2.0
// The schedule renderings: the Perfetto/Chrome trace has one complete event per task and shown
// rank on the right process and thread, metadata naming them, a memory counter; the SVG is well
// formed XML with one box per non-empty task per rank, lanes per stream, and is deterministic.
#include "sim/render/schedule_svg.h"
#include "sim/render/schedule_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "sim/schedule/simulator.h"
#include "tests/sim/render/xml_check.h"
#include "tests/sim/schedule/schedule_test_util.h"

namespace dsp::sim::render {
namespace {

using schedule::testing::ScheduleCase;

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(ScheduleRenderTest, TraceHasOneEventPerTaskAndRank) {
  ScheduleCase c("autosp-sp4.json", 8, 8, "llama-3-8b.json", 1, 256, 2);
  auto s = schedule::Simulate(c.program, c.input());
  ASSERT_TRUE(s.ok());
  const Json trace = ScheduleToTrace(c.program, *s, {0, 3});
  // Round trip through text: what a trace viewer reads.
  const Json doc = Json::parse(trace.dump());
  size_t complete = 0, counters = 0;
  std::set<std::pair<int, int>> threads;
  std::set<int> named_processes;
  for (const Json& e : doc["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      threads.insert({e["pid"].get<int>(), e["tid"].get<int>()});
    } else if (e["ph"] == "C") {
      ++counters;
    } else if (e["ph"] == "M" && e["name"] == "process_name") {
      named_processes.insert(e["pid"].get<int>());
    }
  }
  EXPECT_EQ(complete, 2 * c.program.tasks.size());
  EXPECT_EQ(counters, s->Of(0).memory.size() + s->Of(3).memory.size());
  EXPECT_EQ(named_processes, (std::set<int>{0, 3}));
  // compute, the sp and sp_dp communication streams and the sp_dp reduction stream, on both ranks
  EXPECT_EQ(threads.size(), 2u * 4u);
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
}

TEST(ScheduleRenderTest, SvgIsWellFormedAndDeterministic) {
  ScheduleCase c("folding-tp2-ep4.json", 8, 8, "tiny-moe.json", 1, 256, 1);
  auto s = schedule::Simulate(c.program, c.input());
  ASSERT_TRUE(s.ok());
  const std::string svg = ScheduleToSvg(c.program, *s, {0, 1}, "t & <title>");
  EXPECT_EQ(testing::XmlWellFormedError(svg), "");
  size_t boxes = 0;
  for (int rank : {0, 1}) {
    for (const auto& t : s->Of(rank).times) boxes += t.end > t.start ? 1 : 0;
  }
  EXPECT_EQ(Count(svg, "<rect class=\"task\""), boxes);
  EXPECT_EQ(Count(svg, "<polygon class=\"memory\""), 2u);
  EXPECT_NE(svg.find("t &amp; &lt;title&gt;"), std::string::npos);
  for (const char* lane : {">compute<", ">comm tp<", ">comm ep<", ">comm dp<", ">comm edp<"}) {
    EXPECT_NE(svg.find(lane), std::string::npos) << lane;
  }
  EXPECT_EQ(svg, ScheduleToSvg(c.program, *s, {0, 1}, "t & <title>"));
}

// Adjacent slices on one track never overlap, not even by the rounding nanosecond: start and end
// are rounded to whole nanoseconds first and the duration is their difference (issue 16).
TEST(ScheduleRenderTest, TraceSlicesOnOneTrackNeverOverlap) {
  ScheduleCase c("autosp-sp4.json", 8, 8, "llama-3-8b.json", 1, 256, 2);
  auto s = schedule::Simulate(c.program, c.input());
  ASSERT_TRUE(s.ok());
  const Json doc = Json::parse(ScheduleToTrace(c.program, *s, {0}).dump());
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> by_track;  // tid -> [start, end) in ns
  for (const Json& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const int64_t start = std::llround(e["ts"].get<double>() * 1e3);
    const int64_t end = start + std::llround(e["dur"].get<double>() * 1e3);
    by_track[e["tid"].get<int>()].push_back({start, end});
  }
  size_t touching = 0;
  for (auto& [tid, slices] : by_track) {
    std::sort(slices.begin(), slices.end());
    for (size_t i = 1; i < slices.size(); ++i) {
      EXPECT_LE(slices[i - 1].second, slices[i].first) << "track " << tid << " slice " << i;
      touching += slices[i - 1].second == slices[i].first ? 1 : 0;
    }
  }
  EXPECT_GT(touching, 10u);  // back-to-back slices exist, so the check above is exercised
}

// The memory curve carries the GPU's HBM as a line: inside the axis when it is near the curve,
// crossed by the curve when the plan does not fit; far above, the headroom is written out.
TEST(ScheduleRenderTest, SvgDrawsTheHbmLineAndSaysWhetherItFits) {
  ScheduleCase c("folding-tp2-ep4.json", 8, 8, "tiny-moe.json", 1, 256, 1);
  auto s = schedule::Simulate(c.program, c.input());
  ASSERT_TRUE(s.ok());
  const double peak = s->Of(0).peak_bytes;
  const std::string tight = ScheduleToSvg(c.program, *s, {0}, "t", {}, peak * 0.9);
  EXPECT_EQ(testing::XmlWellFormedError(tight), "");
  EXPECT_EQ(Count(tight, "<line class=\"hbm\""), 1u);
  EXPECT_NE(tight.find("does not fit, peak"), std::string::npos);
  double low = peak;
  for (const auto& [t, bytes] : s->Of(0).memory) low = std::min(low, bytes);
  ASSERT_LT(low, peak);
  const std::string roomy = ScheduleToSvg(c.program, *s, {0}, "t", {}, peak + 0.25 * (peak - low));
  EXPECT_EQ(Count(roomy, "<line class=\"hbm\""), 1u);
  EXPECT_NE(roomy.find("GB free at the peak"), std::string::npos);
  const std::string far = ScheduleToSvg(c.program, *s, {0}, "t", {}, peak * 1000);
  EXPECT_EQ(Count(far, "<line class=\"hbm\""), 0u);
  EXPECT_NE(far.find("GB free at the peak"), std::string::npos);
  EXPECT_EQ(Count(ScheduleToSvg(c.program, *s, {0}, "t"), "HBM"), 0u);
}

}  // namespace
}  // namespace dsp::sim::render
