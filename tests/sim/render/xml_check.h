// SPDX-License-Identifier: Apache-2.0
// A small XML well-formedness check for the SVG tests: balanced and properly nested elements,
// quoted attributes, known entities. Enough to catch a broken render without an XML library.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dsp::testing {

// "" when well-formed, else what is wrong and where.
inline std::string XmlWellFormedError(std::string_view xml) {
  std::vector<std::string> open;
  size_t i = 0;
  bool root_seen = false;
  auto at = [&](size_t pos) { return " at offset " + std::to_string(pos); };
  while (i < xml.size()) {
    if (xml[i] == '&') {
      size_t semi = xml.find(';', i);
      if (semi == std::string_view::npos || semi - i > 10) return "bad entity" + at(i);
      std::string_view ent = xml.substr(i + 1, semi - i - 1);
      if (ent != "lt" && ent != "gt" && ent != "amp" && ent != "quot" && ent != "apos" &&
          (ent.empty() || ent[0] != '#')) {
        return "unknown entity &" + std::string(ent) + ";" + at(i);
      }
      i = semi + 1;
      continue;
    }
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    if (xml.substr(i, 4) == "<!--") {
      size_t end = xml.find("-->", i);
      if (end == std::string_view::npos) return "unterminated comment" + at(i);
      i = end + 3;
      continue;
    }
    if (xml.substr(i, 2) == "<?" || xml.substr(i, 2) == "<!") {
      size_t end = xml.find('>', i);
      if (end == std::string_view::npos) return "unterminated declaration" + at(i);
      i = end + 1;
      continue;
    }
    bool closing = xml[i + 1] == '/';
    size_t j = i + (closing ? 2 : 1);
    size_t name_start = j;
    while (j < xml.size() && xml[j] != '>' && xml[j] != '/' && xml[j] != ' ' && xml[j] != '\n') ++j;
    std::string name(xml.substr(name_start, j - name_start));
    if (name.empty()) return "empty tag name" + at(i);
    // Attributes: skip quoted values so '>' inside them does not end the tag.
    char quote = 0;
    while (j < xml.size() && (quote != 0 || xml[j] != '>')) {
      if (quote == 0 && (xml[j] == '"' || xml[j] == '\'')) {
        quote = xml[j];
      } else if (quote != 0 && xml[j] == quote) {
        quote = 0;
      } else if (xml[j] == '<') {
        return "'<' inside tag " + name + at(j);
      }
      ++j;
    }
    if (j >= xml.size()) return "unterminated tag " + name + at(i);
    bool self_closing = xml[j - 1] == '/';
    if (closing) {
      if (open.empty() || open.back() != name) return "mismatched </" + name + ">" + at(i);
      open.pop_back();
    } else if (!self_closing) {
      if (open.empty() && root_seen) return "second root element " + name + at(i);
      open.push_back(name);
      root_seen = true;
    }
    i = j + 1;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  if (!root_seen) return "no root element";
  return "";
}

}  // namespace dsp::testing
