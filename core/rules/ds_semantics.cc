// SPDX-License-Identifier: Apache-2.0
#include "core/rules/ds_semantics.h"

#include <algorithm>
#include <cctype>

namespace dsp::ds_semantics {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool IsAuto(const Json& v) { return v.is_string() && v.get_ref<const std::string&>() == "auto"; }

}  // namespace

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool PyTruthy(const Json& value) {
  if (value.is_null()) return false;
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_integer()) return value.get<int64_t>() != 0;
  if (value.is_number_unsigned()) return value.get<uint64_t>() != 0;
  if (value.is_number_float()) return value.get<double>() != 0.0;
  if (value.is_string()) return !value.get_ref<const std::string&>().empty();
  return !value.empty();  // arrays and objects
}

bool DictFlag(const ConfigView& view, const std::string& pointer, bool fallback) {
  const Json* v = view.Get(pointer);
  return v == nullptr ? fallback : PyTruthy(*v);
}

std::optional<bool> PydanticBool(const ConfigView& view, const std::string& pointer, bool fallback) {
  const Json* v = view.Get(pointer);
  if (v == nullptr || IsAuto(*v)) return fallback;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number()) {
    double d = v->get<double>();
    if (d == 0.0) return false;
    if (d == 1.0) return true;
    return std::nullopt;
  }
  if (v->is_string()) {
    std::string s = Lower(Trim(v->get<std::string>()));
    if (s == "true" || s == "t" || s == "yes" || s == "y" || s == "on" || s == "1") return true;
    if (s == "false" || s == "f" || s == "no" || s == "n" || s == "off" || s == "0") return false;
  }
  return std::nullopt;
}

std::optional<int64_t> EffectiveZeroStage(const RuleContext& ctx) {
  const Setting<int64_t>& s = ctx.parallel().zero_stage;
  if (s.absent()) return 0;
  if (s.present()) return s.value;
  // "auto" in a pydantic field is dropped by DeepSpeed, but the Hugging Face Trainer fills the
  // value in first; a wrong type is the schema's finding. Either way the stage is not known here.
  return std::nullopt;
}

std::string Bf16Section(const ConfigView& view) {
  const Json* bf16 = view.Get("/bf16");
  if ((bf16 == nullptr || bf16->is_null()) && view.Has("/bfloat16")) return "/bfloat16";
  return "/bf16";
}

bool Fp16Enabled(const ConfigView& view) {
  return PydanticBool(view, "/fp16/enabled", false).value_or(false);
}

bool Bf16Enabled(const ConfigView& view) {
  return PydanticBool(view, Bf16Section(view) + "/enabled", false).value_or(false);
}

std::string OffloadDevice(const ConfigView& view, const std::string& section) {
  const Json* s = view.Get("/zero_optimization/" + section);
  if (s == nullptr || !s->is_object()) return "none";
  auto it = s->find("device");
  if (it == s->end() || !it->is_string() || IsAuto(*it)) return "none";
  return it->get<std::string>();
}

bool ZeroOffloadTurnsOnCompileOffloadParameters(const ConfigView& view) {
  return OffloadDevice(view, "offload_optimizer") == "cpu" && OffloadDevice(view, "offload_param") == "cpu";
}

std::string ShowValue(const Json& value) {
  std::string out = value.is_string() ? "\"" + value.get<std::string>() + "\"" : value.dump();
  if (out.size() > 60) out = out.substr(0, 57) + "...";
  return out;
}

bool Contains(const std::vector<std::string_view>& names, std::string_view key) {
  return std::find(names.begin(), names.end(), key) != names.end();
}

std::string PyRepr(const Json& value) {
  if (value.is_string()) return "'" + value.get<std::string>() + "'";
  if (value.is_null()) return "None";
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  return value.dump();
}

}  // namespace dsp::ds_semantics
