// SPDX-License-Identifier: Apache-2.0
// What the tests that check a table of docs/ share: a source file's text, a TSV's rows by header
// name (sim/calibrate/tsv.h's splitter) and printf-style cells.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/util/file_io.h"
#include "sim/calibrate/tsv.h"

namespace dsp::testing {

inline std::string SourceFile(const std::string& relative) {
  auto text = ReadFile(std::string(DSP_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(text.ok()) << relative;
  return text.ok() ? *text : "";
}

using TsvRow = std::map<std::string, std::string>;

// Every line after the header, cells by the header's names (missing trailing cells empty).
inline std::vector<TsvRow> TsvRows(const std::string& relative) {
  std::istringstream in(SourceFile(relative));
  std::string line;
  std::vector<std::string> header;
  std::vector<TsvRow> rows;
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = sim::SplitTabs(line);
    if (header.empty()) {
      header = cells;
      continue;
    }
    TsvRow row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = i < cells.size() ? cells[i] : "";
    rows.push_back(row);
  }
  return rows;
}

inline std::string Fixed(double v, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace dsp::testing
