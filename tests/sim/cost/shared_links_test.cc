// SPDX-License-Identifier: Apache-2.0
// SharedLinkSeconds and PriceSharedLinks: critical collectives slowed by the overlapped traffic
// that shares their link (docs/cost-model.md, "Links the collectives share").
#include "sim/cost/shared_links.h"

#include <gtest/gtest.h>

#include <vector>

namespace dsp::sim {
namespace {

TEST(SharedLinkTest, TheCriticalCollectivesStretchByTheTrafficThatSharesTheirLink) {
  // Nothing else on the link: as priced alone. No compute to hide behind: everything in series.
  EXPECT_DOUBLE_EQ(SharedLinkSeconds(10, 2, 0), 2);
  EXPECT_NEAR(SharedLinkSeconds(0, 2, 3), 5, 1e-12);
  EXPECT_DOUBLE_EQ(SharedLinkSeconds(10, 0, 3), 0);
  // The root solves K' = K + K' O / (C + K'): the overlapped traffic takes the link a fraction
  // O / (C + K') of the time, all of it during the critical collectives too.
  for (const double c : {0.5, 4.0, 21.1}) {
    for (const double k : {0.1, 1.0, 5.47}) {
      for (const double o : {0.2, 2.0, 11.5}) {
        const double stretched = SharedLinkSeconds(c, k, o);
        EXPECT_NEAR(stretched, k + stretched * o / (c + stretched), 1e-9) << c << " " << k << " " << o;
        EXPECT_GT(stretched, k);
        EXPECT_LT(stretched, k + o);
        EXPECT_GT(SharedLinkSeconds(c, k, 2 * o), stretched);  // more traffic, longer
        EXPECT_LT(SharedLinkSeconds(2 * c, k, o), stretched);  // more compute spreads it thinner
      }
    }
  }
}

PlannedCollective Collective(std::string_view purpose, GroupKind group, bool inter_node, CommSchedule schedule,
                             double seconds, double on_link, double floor = 0) {
  PlannedCollective p;
  p.call.purpose = purpose;
  p.call.group = group;
  p.call.inter_node = inter_node;
  p.schedule = schedule;
  p.seconds_per_unit = seconds;
  p.link_seconds_per_unit = on_link;
  p.floor_seconds = floor;
  return p;
}

// One micro-step of 1 s forward and 2 s backward on the NICs: an EP all-to-all in both passes, a
// blocking forward gather, a backward gradient reduce-scatter, and, on NVLink, async TP chunks.
TEST(SharedLinkTest, EachPassSharesItsLinkWithTheTrafficOfThatPass) {
  constexpr double kForward = 1.0, kBackward = 2.0;
  std::vector<PlannedCollective> planned = {
      Collective("ep_dispatch", GroupKind::kEp, true, CommSchedule::kCritical, 0.35, 0.3),
      Collective("zero3_all_gather_fwd", GroupKind::kDp, true, CommSchedule::kCritical, 0.2, 0.2),
      Collective("dp_grad_reduce", GroupKind::kDp, true, CommSchedule::kBackwardOverlap, 1.0, 1.0, 0.1),
      Collective("tp_sp_all_gather", GroupKind::kTp, false, CommSchedule::kForwardOverlap, 0.5, 0.5),
  };
  const SharedLinks shared = PriceSharedLinks(planned, kForward, kBackward);
  ASSERT_EQ(shared.extra_seconds.size(), planned.size());
  // Nothing overlapped runs in forward on the NICs, so the forward gather and the all-to-all's
  // forward third are not slowed; its backward two thirds share the NICs with the 0.9 s of the
  // reduce-scatter that can hide (its last bucket, the floor, is on the critical path already).
  EXPECT_DOUBLE_EQ(shared.extra_seconds[1], 0);
  const double k = 0.3 * 2 / 3;                                  // on the link in backward
  const double rest = kBackward + 0.35 * 2 / 3 - k;              // the rest of the backward pass
  const double expected = SharedLinkSeconds(rest, k, 0.9) - k;  // the latency (0.05 s) is not stretched
  EXPECT_NEAR(shared.extra_seconds[0], expected, 1e-12);
  EXPECT_GT(shared.extra_seconds[0], 0.05);
  // What rode along is credited to the pass it rode in; overlapped collectives get nothing.
  EXPECT_DOUBLE_EQ(shared.forward_credit, 0);
  EXPECT_NEAR(shared.backward_credit, expected, 1e-12);
  EXPECT_DOUBLE_EQ(shared.extra_seconds[2], 0);
  EXPECT_DOUBLE_EQ(shared.extra_seconds[3], 0);

  // A critical collective on NVLink is not slowed by TP's own overlapped chunks (they run inside
  // their GEMMs, ordered against it), but is by a ZeRO-3 gather's prefetch on its own stream.
  planned.push_back(Collective("tp_all_reduce", GroupKind::kTp, false, CommSchedule::kCritical, 0.2, 0.2));
  EXPECT_DOUBLE_EQ(PriceSharedLinks(planned, kForward, kBackward).extra_seconds[4], 0);
  planned.push_back(Collective("zero3_all_gather_fwd", GroupKind::kDp, false, CommSchedule::kForwardOverlap, 0.4, 0.4));
  EXPECT_GT(PriceSharedLinks(planned, kForward, kBackward).extra_seconds[4], 0);

  // A pipeline stage's own collective (the first stage's embedding) is not stretched; no compute
  // at all: nothing to share (the overlap windows are empty, everything runs in series).
  planned[0].scope = StageScope::kFirst;
  EXPECT_DOUBLE_EQ(PriceSharedLinks(planned, kForward, kBackward).extra_seconds[0], 0);
  const SharedLinks idle = PriceSharedLinks(planned, 0, 0);
  for (double extra : idle.extra_seconds) EXPECT_DOUBLE_EQ(extra, 0);
}

// NeMo AutoModel's DeepSeek-V3 on 1,024 H100 (docs/cost-model.md): per step, 21.1 s of compute,
// 5.47 s of DeepEP all-to-alls and 11.5 s of FSDP traffic on the NICs give about 8.9 s.
TEST(SharedLinkTest, DeepSeekV3OnAThousandGpus) {
  EXPECT_NEAR(SharedLinkSeconds(21.1, 5.47, 11.5), 8.875, 0.001);
}

}  // namespace
}  // namespace dsp::sim
