// SPDX-License-Identifier: Apache-2.0
#include "core/diag/source.h"

#include <algorithm>

namespace dsp {

SourceText::SourceText(std::string path, std::string text)
    : path_(std::move(path)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

SourceLoc SourceText::LocAt(size_t offset) const {
  if (line_starts_.empty()) return {1, 1};
  offset = std::min(offset, text_.size());
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  size_t line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
  return {static_cast<int>(line_index + 1),
          static_cast<int>(offset - line_starts_[line_index] + 1)};
}

std::string_view SourceText::Line(int line) const {
  if (line < 1 || static_cast<size_t>(line) > line_starts_.size()) return {};
  size_t begin = line_starts_[line - 1];
  size_t end = static_cast<size_t>(line) < line_starts_.size() ? line_starts_[line] - 1 : text_.size();
  std::string_view view(text_);
  view = view.substr(begin, end - begin);
  if (!view.empty() && view.back() == '\r') view.remove_suffix(1);
  return view;
}

int SourceText::CodePointColumn(SourceLoc loc) const {
  if (!loc.known() || loc.column < 1) return loc.column;
  const std::string_view line = Line(loc.line);
  const size_t bytes = std::min(line.size(), static_cast<size_t>(loc.column - 1));
  int column = 1;
  for (size_t i = 0; i < bytes; ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++column;
  }
  // A column past the end of the line (an error at end of input) keeps its distance.
  return column + static_cast<int>(static_cast<size_t>(loc.column - 1) - bytes);
}

}  // namespace dsp
