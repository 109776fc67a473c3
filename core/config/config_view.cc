// SPDX-License-Identifier: Apache-2.0
#include "core/config/config_view.h"

#include <cmath>
#include <limits>

namespace dsp {
namespace {

template <class T>
Setting<T> Start(const Json* v, const std::string& pointer) {
  Setting<T> s;
  s.pointer = pointer;
  if (v == nullptr) {
    s.state = ValueState::kAbsent;
  } else if (v->is_string() && v->get_ref<const std::string&>() == "auto") {
    s.state = ValueState::kAuto;
  } else {
    s.state = ValueState::kWrongType;
  }
  return s;
}

}  // namespace

const Json* ConfigView::Get(const std::string& pointer) const {
  const Json* cur = &root_;
  if (pointer.empty()) return cur;
  size_t pos = 1;
  while (true) {
    size_t next = pointer.find('/', pos);
    std::string token = pointer.substr(pos, next == std::string::npos ? next : next - pos);
    // Unescape ~1 and ~0 (RFC 6901).
    std::string key;
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '~' && i + 1 < token.size()) {
        key += token[i + 1] == '1' ? '/' : '~';
        ++i;
      } else {
        key += token[i];
      }
    }
    if (cur->is_object()) {
      auto it = cur->find(key);
      if (it == cur->end()) return nullptr;
      cur = &*it;
    } else if (cur->is_array()) {
      char* end = nullptr;
      unsigned long index = std::strtoul(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || index >= cur->size()) return nullptr;
      cur = &(*cur)[index];
    } else {
      return nullptr;
    }
    if (next == std::string::npos) return cur;
    pos = next + 1;
  }
}

Setting<int64_t> ConfigView::IntNullUnset(const std::string& pointer) const {
  const Json* v = Get(pointer);
  if (v != nullptr && v->is_null()) {
    Setting<int64_t> s;
    s.pointer = pointer;
    return s;  // kAbsent
  }
  return Int(pointer);
}

Setting<int64_t> ConfigView::Int(const std::string& pointer) const {
  const Json* v = Get(pointer);
  auto s = Start<int64_t>(v, pointer);
  if (v == nullptr || s.is_auto()) return s;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() &&
        v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return s;
    }
    s.value = v->get<int64_t>();
    s.state = ValueState::kPresent;
  } else if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e18) {
      s.value = static_cast<int64_t>(d);
      s.state = ValueState::kPresent;
    }
  }
  return s;
}

Setting<double> ConfigView::Number(const std::string& pointer) const {
  const Json* v = Get(pointer);
  auto s = Start<double>(v, pointer);
  if (v != nullptr && v->is_number()) {
    s.value = v->get<double>();
    s.state = ValueState::kPresent;
  }
  return s;
}

Setting<bool> ConfigView::Bool(const std::string& pointer) const {
  const Json* v = Get(pointer);
  auto s = Start<bool>(v, pointer);
  if (v != nullptr && v->is_boolean()) {
    s.value = v->get<bool>();
    s.state = ValueState::kPresent;
  }
  return s;
}

Setting<std::string> ConfigView::String(const std::string& pointer) const {
  const Json* v = Get(pointer);
  auto s = Start<std::string>(v, pointer);
  if (v != nullptr && v->is_string() && !s.is_auto()) {
    s.value = v->get<std::string>();
    s.state = ValueState::kPresent;
  }
  return s;
}

}  // namespace dsp
