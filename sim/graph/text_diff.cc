// SPDX-License-Identifier: Apache-2.0
#include "sim/graph/text_diff.h"

#include <dtl/dtl.hpp>

#include <sstream>
#include <vector>

namespace dsp::sim::graph {
namespace {

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace

std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view before_label,
                        std::string_view after_label) {
  std::ostringstream out;
  out << "--- " << before_label << "\n+++ " << after_label << "\n";
  dtl::Diff<std::string> diff(Lines(before), Lines(after));
  // Graph dumps of large models run to tens of thousands of lines: onHuge bounds dtl's memory.
  diff.onHuge();
  diff.compose();
  diff.composeUnifiedHunks();
  diff.printUnifiedFormat(out);
  return out.str();
}

}  // namespace dsp::sim::graph
