// SPDX-License-Identifier: Apache-2.0
#include "core/util/text.h"

#include <gtest/gtest.h>

namespace dsp {
namespace {

TEST(TextTest, ClosestMatchFindsTypos) {
  std::vector<std::string> keys = {"stage", "overlap_comm", "reduce_bucket_size"};
  EXPECT_EQ(ClosestMatch("overlap_com", keys), "overlap_comm");
  EXPECT_EQ(ClosestMatch("stgae", keys), "stage");
  EXPECT_EQ(ClosestMatch("completely_unrelated", keys), "");
}

TEST(TextTest, PointerRoundTrip) {
  EXPECT_EQ(PointerJoin("/a", "b/c~d"), "/a/b~1c~0d");
  auto t = PointerTokens("/a/b~1c~0d/0");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[1], "b/c~d");
  EXPECT_EQ(PointerParent("/a/b"), "/a");
  EXPECT_EQ(PointerParent("/a"), "");
}

TEST(TextTest, DivisorList) { EXPECT_EQ(DivisorList(12), "1, 2, 3, 4, 6, 12"); }

}  // namespace
}  // namespace dsp
