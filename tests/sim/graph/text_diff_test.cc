// SPDX-License-Identifier: Apache-2.0
// UnifiedDiff: the hunks of two graph dumps (dtl's edit script), for --diff --dump-after.
#include "sim/graph/text_diff.h"

#include <gtest/gtest.h>

namespace dsp::sim::graph {
namespace {

TEST(TextDiffTest, ShowsInsertedAndRewrittenLinesWithContext) {
  const std::string before = "%a = placeholder()\n%b = linear(%a)\n%c = add(%b)\n";
  const std::string after = "%a = placeholder()\n%f = copy_to_tp(%a)\n%b = linear(%f)\n%c = add(%b)\n";
  EXPECT_EQ(UnifiedDiff(before, after, "graph as built", "after pass 'autotp'"),
            "--- graph as built\n+++ after pass 'autotp'\n"
            "@@ -1,3 +1,4 @@\n"
            " %a = placeholder()\n"
            "-%b = linear(%a)\n"
            "+%f = copy_to_tp(%a)\n"
            "+%b = linear(%f)\n"
            " %c = add(%b)\n");
}

TEST(TextDiffTest, EqualTextsHaveOnlyTheHeader) {
  EXPECT_EQ(UnifiedDiff("x\ny\n", "x\ny\n", "a", "b"), "--- a\n+++ b\n");
}

}  // namespace
}  // namespace dsp::sim::graph
