// SPDX-License-Identifier: Apache-2.0
#include "exec/launch/plan_hash.h"

#include <cstdio>
#include <map>

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

std::string PlanFields(const PlanFingerprint& fp) {
  auto text_hash = [](const std::string& text) {
    uint64_t h = kFnvOffset;
    Mix(h, text);
    return HashHex(h);
  };
  std::string out = "config=" + text_hash(fp.config_text) + ";model=" + text_hash(fp.model_text) +
                    ";world_size=" + std::to_string(fp.world_size);
  for (const auto& f : fp.flags) out += ";" + f;
  return out;
}

std::string PlanFieldsDiffer(const std::string& ours, const std::string& theirs) {
  auto split = [](const std::string& s) {
    std::map<std::string, std::string> fields;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(';', start);
      if (end == std::string::npos) end = s.size();
      const std::string item = s.substr(start, end - start);
      const size_t eq = item.find('=');
      if (!item.empty()) fields[item.substr(0, eq)] = eq == std::string::npos ? "" : item.substr(eq + 1);
      start = end + 1;
    }
    return fields;
  };
  const auto a = split(ours), b = split(theirs);
  std::string out;
  auto add = [&](const std::string& key, const std::string& mine, const std::string& other) {
    out += (out.empty() ? "" : ", ") + key + "=" + other + " (here " + key + "=" + mine + ")";
  };
  for (const auto& [key, value] : b) {
    auto it = a.find(key);
    const std::string mine = it == a.end() ? "(none)" : it->second;
    if (mine != value) add(key, mine, value);
  }
  for (const auto& [key, value] : a) {
    if (!b.contains(key)) add(key, value, "(none)");
  }
  return out;
}

}  // namespace dsp::exec
