// SPDX-License-Identifier: Apache-2.0
// SharedLinkSeconds: critical collectives slowed by the overlapped traffic that shares their link
// (docs/cost-model.md, "Links the collectives share").
#include <gtest/gtest.h>

#include "sim/cost/step_time.h"

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
  // NeMo AutoModel's DeepSeek-V3 on 1,024 H100 (docs/cost-model.md): 21.1 s of compute, 5.47 s of
  // DeepEP all-to-alls and 11.5 s of FSDP traffic on the NICs a step: 8.88 s.
  EXPECT_NEAR(SharedLinkSeconds(21.1, 5.47, 11.5), 8.88, 0.01);
}

}  // namespace
}  // namespace dsp::sim
