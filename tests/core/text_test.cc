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

// Found by the fuzz regression: a 2 MB key cost 13 s of edit distances against every known key.
// Candidates whose length alone rules them out are skipped; the answers stay the same.
TEST(TextTest, ClosestMatchSkipsCandidatesTooFarInLength) {
  const std::vector<std::string> keys = {"train_batch_size", "zero_optimization", "fp16"};
  EXPECT_EQ(ClosestMatch(std::string(2'000'000, 'a'), keys), "");
  EXPECT_EQ(ClosestMatch("train_batch_sizee", keys), "train_batch_size");
  EXPECT_EQ(ClosestMatch("zero_optimization_extra", keys), "zero_optimization");  // prefix form
  EXPECT_EQ(ClosestMatch("fp61", keys), "fp16");
}

TEST(TextTest, ClipForDisplayBoundsQuotedValues) {
  EXPECT_EQ(ClipForDisplay("short", 10), "short");
  EXPECT_EQ(ClipForDisplay(std::string(50, 'x'), 10), "xxxxxxxxxx... (50 bytes)");
  // Never inside a UTF-8 sequence: "é" is two bytes at offsets 9-10.
  EXPECT_EQ(ClipForDisplay("aaaaaaaaa\u00e9bbbb", 10), "aaaaaaaaa... (15 bytes)");
}

}  // namespace
}  // namespace dsp
