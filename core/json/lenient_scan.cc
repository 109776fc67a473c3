// SPDX-License-Identifier: Apache-2.0
#include "core/json/lenient_scan.h"

namespace dsp {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

void Blank(std::string& text, size_t begin, size_t end) {
  for (size_t i = begin; i < end && i < text.size(); ++i) {
    if (text[i] != '\n') text[i] = ' ';
  }
}

}  // namespace

LenientScan BlankLenientSyntax(std::string& text) {
  LenientScan scan;
  std::optional<size_t> pending_comma;  // a comma not yet followed by a value
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '/' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*')) {
      size_t begin = i;
      size_t end;
      if (text[i + 1] == '/') {
        end = text.find('\n', i);
        if (end == std::string::npos) end = text.size();
      } else {
        end = text.find("*/", i + 2);
        if (end == std::string::npos) {
          scan.unterminated_comment = begin;
          return scan;
        }
        end += 2;
      }
      scan.comment_offsets.push_back(begin);
      Blank(text, begin, end);
      i = end - 1;
      continue;
    }
    if (IsSpace(c)) continue;
    if ((c == '}' || c == ']') && pending_comma) {
      scan.trailing_comma_offsets.push_back(*pending_comma);
      text[*pending_comma] = ' ';
    }
    pending_comma.reset();
    if (c == ',') {
      pending_comma = i;
    } else if (c == '"') {
      in_string = true;
    }
  }
  return scan;
}

}  // namespace dsp
