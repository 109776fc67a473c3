// SPDX-License-Identifier: Apache-2.0
#include "exec/launch/plan_hash.h"

#include <cstdio>

namespace dsp::exec {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

void Mix(uint64_t& h, const std::string& field) {
  uint64_t n = field.size();
  for (int i = 0; i < 8; ++i) {
    h ^= (n >> (8 * i)) & 0xff;
    h *= kFnvPrime;
  }
  for (unsigned char c : field) {
    h ^= c;
    h *= kFnvPrime;
  }
}

}  // namespace

uint64_t PlanHash(const PlanFingerprint& fp) {
  uint64_t h = kFnvOffset;
  Mix(h, fp.config_text);
  Mix(h, fp.model_text);
  Mix(h, std::to_string(fp.world_size));
  Mix(h, std::to_string(fp.flags.size()));
  for (const auto& f : fp.flags) Mix(h, f);
  return h;
}

std::string HashHex(uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

}  // namespace dsp::exec
