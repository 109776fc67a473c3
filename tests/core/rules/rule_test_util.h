// SPDX-License-Identifier: Apache-2.0
// Helpers for rule tests: validate an inline config and look for one finding.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "core/validate/validator.h"

namespace dsp::testing {

inline FileReport Validate(const std::string& text, ValidateOptions options = {},
                           const std::vector<Override>& overrides = {}) {
  return ValidateText("test.json", text, options, overrides);
}

inline ValidateOptions World(int64_t w) {
  ValidateOptions o;
  o.world_size = w;
  return o;
}

inline const Diagnostic* Find(const FileReport& r, const std::string& id) {
  for (const auto& d : r.diagnostics) {
    if (d.rule_id == id) return &d;
  }
  return nullptr;
}

// Options for a DeepSpeed release ("0.18.2").
inline ValidateOptions Version(const char* v) {
  ValidateOptions o;
  o.version = DeepSpeedVersion::Parse(v).value();
  return o;
}

// Options for a launch context (--consumer), optionally at a DeepSpeed release ("0.19.2").
inline ValidateOptions As(Consumer c, const char* version = nullptr) {
  ValidateOptions o;
  o.consumer = c;
  if (version != nullptr) o.version = DeepSpeedVersion::Parse(version).value();
  return o;
}

// The finding `id` at `pointer`, or nullptr.
inline const Diagnostic* FindAt(const FileReport& r, const std::string& id, const std::string& pointer) {
  for (const auto& d : r.diagnostics) {
    if (d.rule_id == id && d.pointer == pointer) return &d;
  }
  return nullptr;
}

// Whether some finding `id` mentions `text`.
inline bool MessageHas(const FileReport& r, const std::string& id, const std::string& text) {
  for (const auto& d : r.diagnostics) {
    if (d.rule_id == id && d.message.find(text) != std::string::npos) return true;
  }
  return false;
}

inline std::string Dump(const FileReport& r) {
  std::string out;
  for (const auto& d : r.diagnostics) {
    out += "  [" + d.rule_id + "] " + d.pointer + " " + std::to_string(d.loc.line) + ":" +
           std::to_string(d.loc.column) + " " + d.message + "\n";
  }
  return out;
}

// Asserts the report has `id` at `pointer`.
#define EXPECT_DIAG(report, id, where)                                                  \
  do {                                                                                    \
    const auto& r_ = (report);                                                            \
    bool found_ = false;                                                                  \
    for (const auto& d_ : r_.diagnostics)                                                 \
      if (d_.rule_id == (id) && d_.pointer == (where)) found_ = true;                   \
    EXPECT_TRUE(found_) << "expected [" << (id) << "] at '" << (where) << "', got:\n"   \
                        << ::dsp::testing::Dump(r_);                                      \
  } while (0)

#define EXPECT_NO_DIAG(report, id)                                                        \
  do {                                                                                    \
    const auto& r_ = (report);                                                            \
    EXPECT_EQ(::dsp::testing::Find(r_, (id)), nullptr)                                    \
        << "unexpected [" << (id) << "], got:\n" << ::dsp::testing::Dump(r_);             \
  } while (0)

}  // namespace dsp::testing
