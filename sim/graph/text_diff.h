// SPDX-License-Identifier: Apache-2.0
// A unified diff of two graph text forms (PrintGraph), for `visualize graph --diff
// --dump-after PASS`: what a pass inserted, rewrote and erased, line by line. The edit script
// comes from dtl (Debian's libdtl-dev, the Diff Template Library).
#pragma once

#include <string>
#include <string_view>

namespace dsp::sim::graph {

// "--- before_label\n+++ after_label\n" and the hunks ("@@ -a,b +c,d @@", lines prefixed ' ',
// '-' or '+', three lines of context); only the two header lines when the texts are equal.
std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view before_label,
                        std::string_view after_label);

}  // namespace dsp::sim::graph
