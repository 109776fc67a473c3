// SPDX-License-Identifier: Apache-2.0
// A Python package version as packaging.version compares them, as far as DeepSpeed's guards need:
// the release numbers, then a pre-release (a, b, rc, dev) sorts before the final release, and a
// local tag (+cu124) is ignored. "2.6.0+cu124" >= 2.6; "2.6.0a0+git" < 2.6; "5.10.1.dev0" < 5.10.1.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dsp {

struct PackageVersion {
  std::vector<int> release;
  bool prerelease = false;
  std::string text;  // as given

  static std::optional<PackageVersion> Parse(std::string_view text);
  // Compares release numbers (missing ones are 0), then a pre-release before the final release.
  int Compare(const PackageVersion& other) const;
  bool operator<(const PackageVersion& o) const { return Compare(o) < 0; }
  bool operator>=(const PackageVersion& o) const { return Compare(o) >= 0; }
};

}  // namespace dsp
