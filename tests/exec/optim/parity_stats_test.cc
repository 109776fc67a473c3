// SPDX-License-Identifier: Apache-2.0
// Parity statistics keep a NaN (issue 36: a NaN gradient once printed "max abs 0 ... ok").
#include <gtest/gtest.h>

#ifdef DSP_HAVE_TORCH
#include <cmath>
#include <limits>

#include "exec/optim/parity_stats.h"

namespace dsp::exec {
namespace {

TEST(ParityStatsTest, ANanReachesTheReportAndStays) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double slot = 0;
  Bump(slot, 0.5);
  EXPECT_EQ(slot, 0.5);
  Bump(slot, nan);
  EXPECT_TRUE(std::isnan(slot));
  Bump(slot, 3.0);  // a later finite value does not hide it
  EXPECT_TRUE(std::isnan(slot));
  // A NaN inside a tensor comes out of MaxAbsDiff, and fails every tolerance comparison.
  at::Tensor a = at::zeros({4}), b = at::zeros({4});
  a[2] = nan;
  const double d = MaxAbsDiff(a, b);
  EXPECT_TRUE(std::isnan(d));
  EXPECT_FALSE(d <= 1e-5 + 1e-5 * 1.0);
  EXPECT_EQ(MaxAbsDiff(at::ones({3}), at::zeros({3})), 1.0);
  EXPECT_EQ(MaxAbs(at::zeros({0})), 0.0);
}

}  // namespace
}  // namespace dsp::exec
#else
TEST(ParityStatsTest, NeedsLibTorch) { GTEST_SKIP() << "built without LibTorch (see docs/exec.md)"; }
#endif
