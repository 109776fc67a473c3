// SPDX-License-Identifier: Apache-2.0
#include "core/config/package_version.h"

#include <cctype>

namespace dsp {

std::optional<PackageVersion> PackageVersion::Parse(std::string_view text) {
  PackageVersion v;
  v.text = std::string(text);
  std::string_view s = text;
  if (auto plus = s.find('+'); plus != std::string_view::npos) s = s.substr(0, plus);  // local tag
  if (!s.empty() && (s.front() == 'v' || s.front() == 'V')) s.remove_prefix(1);
  size_t i = 0;
  while (i < s.size()) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
    int n = 0;
    size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      n = n * 10 + (s[i] - '0');
      if (n > 100000 || i - start > 6) return std::nullopt;
      ++i;
    }
    v.release.push_back(n);
    if (i < s.size() && s[i] == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      ++i;
      continue;
    }
    break;
  }
  if (v.release.empty() || v.release.size() > 4) return std::nullopt;
  std::string_view rest = s.substr(i);
  if (!rest.empty() && (rest.front() == '.' || rest.front() == '-' || rest.front() == '_')) rest.remove_prefix(1);
  if (!rest.empty()) {
    // a0, b1, rc1, dev0 (pre-releases); post-releases are not used by torch or transformers.
    for (std::string_view tag : {"rc", "dev", "a", "b"}) {
      if (rest.starts_with(tag)) v.prerelease = true;
    }
    if (!v.prerelease) return std::nullopt;
  }
  return v;
}

int PackageVersion::Compare(const PackageVersion& o) const {
  size_t n = std::max(release.size(), o.release.size());
  for (size_t k = 0; k < n; ++k) {
    int a = k < release.size() ? release[k] : 0;
    int b = k < o.release.size() ? o.release[k] : 0;
    if (a != b) return a < b ? -1 : 1;
  }
  if (prerelease != o.prerelease) return prerelease ? -1 : 1;
  return 0;
}

}  // namespace dsp
