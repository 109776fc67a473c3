#include "core/config/deepspeed_version.h"

#include <charconv>
#include <vector>

namespace dsp {

std::string DeepSpeedVersion::ToString() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::optional<DeepSpeedVersion> DeepSpeedVersion::Parse(std::string_view text) {
  if (!text.empty() && (text.front() == 'v' || text.front() == 'V')) text.remove_prefix(1);
  std::vector<int> parts;
  while (!text.empty()) {
    int value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || value < 0) return std::nullopt;
    parts.push_back(value);
    text.remove_prefix(static_cast<size_t>(ptr - text.data()));
    if (text.empty()) break;
    if (text.front() != '.') return std::nullopt;
    text.remove_prefix(1);
    if (text.empty()) return std::nullopt;
  }
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  DeepSpeedVersion v{parts[0], parts[1], parts.size() == 3 ? parts[2] : 0};
  return v;
}

}  // namespace dsp
