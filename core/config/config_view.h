// SPDX-License-Identifier: Apache-2.0
// Typed, "auto"-aware reads of a DeepSpeed config by JSON pointer. Rules read values through this
// so every finding knows which pointer (and therefore which line) it is about.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/json/document.h"

namespace dsp {

enum class ValueState {
  kAbsent,     // key not in the config
  kAuto,       // the Hugging Face placeholder "auto" (filled in by the Trainer at launch)
  kPresent,    // present with the expected type
  kWrongType,  // present, but not of the expected type (the schema check reports it)
};

template <class T>
struct Setting {
  ValueState state = ValueState::kAbsent;
  T value{};
  std::string pointer;

  bool present() const { return state == ValueState::kPresent; }
  bool is_auto() const { return state == ValueState::kAuto; }
  bool absent() const { return state == ValueState::kAbsent; }
  T or_default(T fallback) const { return present() ? value : fallback; }
  std::optional<T> opt() const { return present() ? std::optional<T>(value) : std::nullopt; }
};

class ConfigView {
 public:
  explicit ConfigView(const Json& root) : root_(root) {}

  const Json& root() const { return root_; }
  // The value at `pointer`, or nullptr.
  const Json* Get(const std::string& pointer) const;
  bool Has(const std::string& pointer) const { return Get(pointer) != nullptr; }

  // Integers accept integral floats (5e8), as pydantic does.
  Setting<int64_t> Int(const std::string& pointer) const;
  // The same, with null read as absent: the batch keys (train_batch_size,
  // train_micro_batch_size_per_gpu, gradient_accumulation_steps) are read by get_scalar_param with
  // a None default (runtime/constants.py), and _set_batch_related_parameters derives a None one.
  Setting<int64_t> IntNullUnset(const std::string& pointer) const;
  Setting<double> Number(const std::string& pointer) const;
  Setting<bool> Bool(const std::string& pointer) const;
  Setting<std::string> String(const std::string& pointer) const;

 private:
  const Json& root_;
};

}  // namespace dsp
