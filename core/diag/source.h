// SPDX-License-Identifier: Apache-2.0
// A loaded text file and the mapping from byte offsets to 1-based line:column (columns count bytes,
// as nlohmann/json and most compilers do).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dsp {

struct SourceLoc {
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based byte column; 0 = unknown (SARIF and GitHub output convert to code points)
  bool known() const { return line > 0; }
};

class SourceText {
 public:
  SourceText() = default;
  SourceText(std::string path, std::string text);

  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  SourceLoc LocAt(size_t offset) const;
  // The text of a 1-based line without its newline ("" when out of range).
  std::string_view Line(int line) const;
  // The 1-based column of `loc` counted in Unicode code points instead of bytes (SARIF's
  // "unicodeCodePoints" column kind): UTF-8 continuation bytes before it do not count.
  int CodePointColumn(SourceLoc loc) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<size_t> line_starts_;
};

}  // namespace dsp
