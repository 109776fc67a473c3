// SPDX-License-Identifier: Apache-2.0
#include "core/util/text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace dsp {

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diag = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int up = row[j];
      int cost = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                         std::tolower(static_cast<unsigned char>(b[j - 1]))
                     ? 0
                     : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + cost});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  int best_distance = 0;
  // The distance is at least the difference in length, so a candidate whose length differs by more
  // than the limit below can never be suggested: skipping it keeps a megabyte-long key (fuzzed
  // input) from costing length x candidates character comparisons per candidate.
  const int limit = std::max<int>(2, static_cast<int>(word.size()) / 3);
  for (const auto& c : candidates) {
    const auto gap = word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    if (gap > static_cast<size_t>(limit)) continue;
    int d = EditDistance(word, c);
    if (best.empty() || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  // A plausible typo changes at most a third of the word (and at least allows two edits), or the
  // word is a prefix/suffix-extended form of the candidate (e.g. "stage3_foo" vs "foo").
  if (!best.empty() && best_distance <= limit) return best;
  for (const auto& c : candidates) {
    if (c.size() >= 4 && word.size() > c.size() &&
        (word.ends_with(c) || word.starts_with(c))) {
      return c;
    }
  }
  return "";
}

std::string ClipForDisplay(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a code point
  return std::string(text.substr(0, cut)) + "... (" + std::to_string(text.size()) + " bytes)";
}

std::string EscapeControl(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += ch;
    }
  }
  return out;
}

std::string JoinList(const std::vector<std::string>& items, std::string_view last_sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += (i + 1 == items.size()) ? std::string(last_sep) : std::string(", ");
    out += items[i];
  }
  return out;
}

std::string DivisorList(long long n) {
  std::string out;
  for (long long d = 1; d <= n; ++d) {
    if (n % d != 0) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(d);
  }
  return out;
}

std::string FormatNumber(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string FormatGb(double bytes) { return FormatNumber("%.2f GB", bytes / 1e9); }

std::string PointerEscape(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string PointerJoin(std::string_view parent, std::string_view token) {
  return std::string(parent) + "/" + PointerEscape(token);
}

std::string PointerParent(std::string_view pointer) {
  auto slash = pointer.rfind('/');
  if (slash == std::string_view::npos) return "";
  return std::string(pointer.substr(0, slash));
}

std::vector<std::string> PointerTokens(std::string_view pointer) {
  std::vector<std::string> out;
  if (pointer.empty()) return out;
  size_t pos = 1;
  while (true) {
    size_t next = pointer.find('/', pos);
    std::string_view raw = pointer.substr(pos, next == std::string_view::npos ? next : next - pos);
    std::string token;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size()) {
        token += raw[i + 1] == '1' ? '/' : '~';
        ++i;
      } else {
        token += raw[i];
      }
    }
    out.push_back(token);
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  return out;
}

}  // namespace dsp
