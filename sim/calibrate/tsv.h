// SPDX-License-Identifier: Apache-2.0
// The tab-separated tables calibrate reads (measured runs, scripts/gpu-ground-truth.py's steps):
// one line's cells, empty ones kept, a Windows line end's '\r' dropped.
#pragma once

#include <string>
#include <vector>

namespace dsp::sim {

inline std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  for (char c : line) {
    if (c == '\t') {
      out.push_back(cell);
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  out.push_back(cell);
  return out;
}

}  // namespace dsp::sim
