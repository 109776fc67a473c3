// SPDX-License-Identifier: Apache-2.0
// Precision : the fp16/bf16 sections (runtime/precision_config.py),
// data_types and the communication dtypes (runtime/config.py, engine.py), Apex AMP next to them,
// and torch_autocast (runtime/config.py get_torch_autocast_*, runtime/torch_autocast.py), whose
// rules changed twice across releases.
#include <cmath>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "core/rules/ds_semantics.h"
#include "core/rules/rule_context.h"
#include "core/rules/rule_sets.h"

namespace dsp {
namespace {

using namespace ds_semantics;

bool IsAutoValue(const Json& v) {
  return v.is_string() && v.get_ref<const std::string&>() == "auto";
}

// DtypeEnum (runtime/config.py): every accepted spelling and the canonical name.
const char* DtypeCanonical(const std::string& name) {
  static const std::vector<std::pair<const char*, const char*>> kNames = {
      {"torch.float16", "fp16"}, {"fp16", "fp16"},         {"float16", "fp16"},  {"half", "fp16"},
      {"torch.float32", "fp32"}, {"fp32", "fp32"},         {"float32", "fp32"},  {"float", "fp32"},
      {"torch.int8", "int8"},    {"int8", "int8"},         {"torch.bfloat16", "bf16"},
      {"bf16", "bf16"},          {"bfloat16", "bf16"},
  };
  for (const auto& [spelling, canonical] : kNames) {
    if (name == spelling) return canonical;
  }
  return nullptr;
}

constexpr const char* kDtypeNames =
    "\"fp16\"/\"float16\"/\"half\"/\"torch.float16\", \"bf16\"/\"bfloat16\"/\"torch.bfloat16\", "
    "\"fp32\"/\"float32\"/\"float\"/\"torch.float32\" or \"int8\"/\"torch.int8\"";

std::string TorchDtype(const std::string& canonical) {
  if (canonical == "fp16") return "torch.float16";
  if (canonical == "bf16") return "torch.bfloat16";
  if (canonical == "int8") return "torch.int8";
  return "torch.float32";
}

// What Python's float(str) accepts: decimal numbers (underscores between digits allowed), inf,
// infinity, nan. Returns nullopt when float() would raise.
std::optional<double> PyFloatFromString(const std::string& text) {
  static const std::regex kFloat(
      R"(^\s*[+-]?((\d(_?\d)*)?\.?(\d(_?\d)*)?([eE][+-]?\d(_?\d)*)?|inf|infinity|nan)\s*$)",
      std::regex::icase);
  std::smatch m;
  if (!std::regex_match(text, m, kFloat)) return std::nullopt;
  std::string clean;
  for (char c : text) {
    if (c != '_' && !std::isspace(static_cast<unsigned char>(c))) clean += c;
  }
  std::string lower = Lower(clean);
  if (lower.find_first_of("0123456789") == std::string::npos &&
      lower.find("inf") == std::string::npos && lower.find("nan") == std::string::npos) {
    return std::nullopt;  // "", ".", "e5"
  }
  if (lower.find_first_of("0123456789") != std::string::npos) {
    // A mantissa needs a digit: ".e5" has none before the exponent.
    size_t e = lower.find('e');
    std::string mantissa = lower.substr(0, e);
    if (mantissa.find_first_of("0123456789") == std::string::npos) return std::nullopt;
  }
  return std::strtod(clean.c_str(), nullptr);
}

// Whether Python's int() accepts the value (a number, or a decimal string).
bool PyIntAccepts(const Json& v) {
  if (v.is_number()) return true;
  if (!v.is_string()) return false;
  static const std::regex kInt(R"(^\s*[+-]?\d(_?\d)*\s*$)");
  return std::regex_match(v.get_ref<const std::string&>(), kInt);
}

void CheckFp16Bf16(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const std::string bf16 = Bf16Section(v);
  if (Fp16Enabled(v) && Bf16Enabled(v)) {
    ctx.Report("precision-fp16-bf16", bf16 + "/enabled",
               "fp16.enabled and " + DottedName(bf16 + "/enabled") +
                   " are both true: DeepSpeed asserts \"bfloat16 and fp16 modes cannot be "
                   "simultaneously enabled\"",
               "enable one of them: bf16 on GPUs that support it (A100, H100, ...), fp16 "
               "otherwise");
  }
  const Json* bf16_value = v.Get("/bf16");
  if (bf16_value != nullptr && !bf16_value->is_null() && v.Has("/bfloat16")) {
    ctx.ReportKey("precision-bfloat16-ignored", "/bfloat16",
                  "both \"bf16\" and the legacy \"bfloat16\" are given: DeepSpeed reads bf16 and "
                  "ignores bfloat16 entirely",
                  "merge the settings into bf16 and remove bfloat16");
  }
}

void CheckLossScale(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const Json* fp16 = v.Get("/fp16");
  if (fp16 == nullptr || !fp16->is_object()) return;

  // _validate_loss_scale (mode="before"): runs whether or not fp16 is enabled.
  std::optional<double> loss_scale = 0.0;
  if (const Json* ls = v.Get("/fp16/loss_scale"); ls != nullptr && !IsAutoValue(*ls)) {
    std::string problem;
    loss_scale.reset();
    if (ls->is_boolean()) {
      problem = "fp16.loss_scale must be a number, not bool";
    } else if (ls->is_number()) {
      loss_scale = ls->get<double>();
    } else if (ls->is_string()) {
      loss_scale = PyFloatFromString(ls->get<std::string>());
      if (!loss_scale) problem = "fp16.loss_scale must be a number";
    } else {
      problem = "fp16.loss_scale must be a number";
    }
    if (loss_scale && !std::isfinite(*loss_scale)) {
      problem = "fp16.loss_scale must be a finite number (not inf/-inf/nan)";
    } else if (loss_scale && *loss_scale < 0) {
      problem = "fp16.loss_scale must be >= 0 (0 enables dynamic loss scaling)";
    }
    if (!problem.empty()) {
      ctx.Report("fp16-loss-scale-invalid", "/fp16/loss_scale",
                 "fp16.loss_scale is " + ShowValue(*ls) + ": DeepSpeed raises \"" + problem + "\"",
                 "use 0 for dynamic loss scaling, or a positive static scale such as 1024");
      loss_scale.reset();
    }
  }

  // _reject_non_integer_scale_params, then the dynamic-scaling check.
  struct Param {
    const char* key;
    int64_t fallback;
    std::optional<double> value;
  };
  std::vector<Param> params = {{"loss_scale_window", 1000, std::nullopt},
                               {"min_loss_scale", 1, std::nullopt}};
  for (auto& p : params) {
    const std::string ptr = std::string("/fp16/") + p.key;
    const Json* value = v.Get(ptr);
    if (value == nullptr || IsAutoValue(*value)) {
      p.value = static_cast<double>(p.fallback);
      continue;
    }
    std::string field = std::string("fp16.") + p.key;
    std::string problem;
    if (value->is_boolean()) {
      problem = field + " must be an integer, not bool";
    } else if (!PyIntAccepts(*value)) {
      problem = field + " must be an integer";
    } else if (value->is_number()) {
      p.value = value->get<double>();
    } else {
      p.value = std::strtod(value->get<std::string>().c_str(), nullptr);
    }
    if (!problem.empty()) {
      ctx.Report("fp16-scale-param-invalid", ptr,
                 field + " is " + ShowValue(*value) + ": DeepSpeed raises \"" + problem + "\"",
                 std::string("write an integer, e.g. \"") + p.key + "\": " +
                     std::to_string(p.fallback));
    }
  }

  bool enabled = Fp16Enabled(v);
  if (!enabled || !loss_scale || *loss_scale != 0.0) return;
  for (const auto& p : params) {
    if (!p.value || *p.value > 0) continue;
    std::string field = std::string("fp16.") + p.key;
    ctx.Report("fp16-dynamic-scale-nonpositive", std::string("/fp16/") + p.key,
               field + " is " + ShowValue(*v.Get(std::string("/fp16/") + p.key)) +
                   " with dynamic loss scaling (loss_scale 0): DeepSpeed raises \"" + field +
                   " must be > 0 when dynamic loss scaling is enabled (loss_scale=0)\"" +
                   (std::string(p.key) == "loss_scale_window"
                        ? " (it is a modulus in DynamicLossScaler.update_scale)"
                        : " (it is the loss-scale floor)"),
               std::string("use a positive value (default ") + std::to_string(p.fallback) +
                   "), or a static loss_scale");
  }
}

void CheckDataTypes(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const Json* dt = v.Get("/data_types");
  if (dt == nullptr || !dt->is_object()) return;
  for (const char* key : {"grad_accum_dtype", "param_dtype", "buffer_dtype"}) {
    const std::string ptr = std::string("/data_types/") + key;
    const Json* value = v.Get(ptr);
    if (value == nullptr || value->is_null()) continue;
    const char* canonical = value->is_string() ? DtypeCanonical(value->get<std::string>()) : nullptr;
    if (canonical == nullptr) {
      ctx.Report("data-types-invalid", ptr,
                 std::string("data_types.") + key + " is " + ShowValue(*value) +
                     ": DeepSpeed resolves it with DtypeEnum at engine start and raises "
                     "ValueError (not a valid DtypeEnum)",
                 std::string("use one of ") + kDtypeNames + ", or null");
      continue;
    }
    if (std::string(key) != "param_dtype") continue;
    std::string mode = Fp16Enabled(v) ? "fp16" : (Bf16Enabled(v) ? "bf16" : "fp32");
    if (canonical == mode) continue;
    ctx.Report("precision-param-dtype", ptr,
               "data_types.param_dtype='" + value->get<std::string>() +
                   "' conflicts with the enabled precision mode (model dtype " + TorchDtype(mode) +
                   "): the engine asserts this before building the optimizer",
               "set the matching fp16/bf16 'enabled' flag or omit data_types.param_dtype");
  }
}

void CheckCommDtypes(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  for (const char* key : {"communication_data_type", "seq_parallel_communication_data_type"}) {
    const std::string ptr = std::string("/") + key;
    const Json* value = v.Get(ptr);
    if (value == nullptr || value->is_null()) continue;
    std::string got;
    if (value->is_string()) {
      std::string lower = Lower(value->get<std::string>());
      if (lower == "fp32" || lower == "fp16" || lower == "bf16") continue;
      got = "DeepSpeed raises \"Invalid communication_data_type. Supported data types: ['fp16', "
            "'bf16', 'fp32']. Got: " + lower + "\"";
    } else {
      got = "DeepSpeed calls .lower() on it and fails with AttributeError";
    }
    ctx.Report("comm-dtype-invalid", ptr,
               std::string(key) + " is " + ShowValue(*value) + ": " + got,
               std::string("use \"fp32\", \"fp16\" or \"bf16\" (case-insensitive), or null") +
                   (std::string(key) == "communication_data_type"
                        ? " to follow the training precision"
                        : " (the default is fp32)"));
  }
}

void CheckAmp(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  if (!DictFlag(v, "/amp/enabled")) return;
  auto stage = EffectiveZeroStage(ctx);
  if (!stage || *stage != 0) return;  // with ZeRO, zero-amp reports the earlier assertion
  bool fp16 = Fp16Enabled(v);
  if (!fp16 && !Bf16Enabled(v)) return;
  ctx.Report("precision-amp-with-fp16-bf16", "/amp/enabled",
             std::string("Apex AMP is enabled together with ") + (fp16 ? "fp16" : "bf16") +
                 ": DeepSpeed raises NotImplementedError \"Cannot enable both amp with (legacy) "
                 "fp16 or bfloat16 mode\"",
             "use either the amp section or fp16/bf16, not both (fp16 performs like amp O2)");
}

// torch_autocast is dict-parsed: its values are read with dict.get and Python truthiness.
void CheckAutocast(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const Json* section = v.Get("/torch_autocast");
  if (section == nullptr || !section->is_object()) return;
  const DeepSpeedVersion& version = ctx.version();
  bool enabled = DictFlag(v, "/torch_autocast/enabled");

  if (version < ds_release::kAutocastWithZero) {
    if (enabled) {
      ctx.Report("autocast-unsupported-version", "/torch_autocast/enabled",
                 "torch_autocast does not exist in DeepSpeed " + version.ToString() +
                     ": it arrived in " + ds_release::kAutocastWithZero.ToString() +
                     " (PR #6993), and older releases ignore the unknown top-level key, so "
                     "training runs without autocast",
                 "use fp16/bf16 for mixed precision, or target DeepSpeed >= " +
                     ds_release::kAutocastWithZero.ToString() + " (--deepspeed-version)");
    }
    return;
  }

  // get_torch_autocast_dtype: parsed whenever the key is present, enabled or not.
  const Json* dtype = v.Get("/torch_autocast/dtype");
  if (dtype != nullptr) {
    const char* c = dtype->is_string() ? DtypeCanonical(dtype->get<std::string>()) : nullptr;
    if (c == nullptr) {
      ctx.Report("autocast-dtype-invalid", "/torch_autocast/dtype",
                 "torch_autocast.dtype is " + ShowValue(*dtype) +
                     ": DeepSpeed parses it with DtypeEnum when it reads the config and raises "
                     "ValueError",
                 std::string("use \"bfloat16\" or \"float16\" (DtypeEnum also accepts ") +
                     kDtypeNames + ")");
    }
  } else if (enabled) {
    auto stage = EffectiveZeroStage(ctx);
    bool z0 = stage && *stage == 0;
    std::string msg =
        "torch_autocast is enabled without a dtype: DeepSpeed passes dtype=None to torch.autocast, "
        "so torch's device default applies (float16 on CUDA, bfloat16 on CPU), although the "
        "DeepSpeed docs name bfloat16 as the default";
    if (z0) {
      msg += "; and without ZeRO the engine creates its GradScaler only when dtype is exactly "
             "float16, so CUDA runs in float16 with no loss scaling";
    }
    ctx.ReportAs(z0 ? Severity::kWarning : Severity::kNote, "autocast-no-dtype",
                 "/torch_autocast/enabled", std::move(msg),
                 "write the dtype you mean: \"dtype\": \"bfloat16\" (or \"float16\")");
  }

  // get_lower_precision_safe_modules: iterates the value and requires strings (config time);
  // init_autocast_params imports each "package.Class" (engine start, only when enabled).
  if (const Json* mods = v.Get("/torch_autocast/lower_precision_safe_modules"); mods != nullptr) {
    const std::string ptr = "/torch_autocast/lower_precision_safe_modules";
    if (mods->is_array()) {
      for (size_t i = 0; i < mods->size(); ++i) {
        const Json& m = (*mods)[i];
        const std::string item = ptr + "/" + std::to_string(i);
        if (!m.is_string()) {
          ctx.Report("autocast-modules-invalid", item,
                     "lower_precision_safe_modules[" + std::to_string(i) + "] is " + ShowValue(m) +
                         ": DeepSpeed raises \"Invalid module names for torch autocast: ... "
                         "Expected list of strings.\"",
                     "list class names as strings, e.g. \"torch.nn.Linear\"");
          continue;
        }
        const std::string name = m.get<std::string>();
        size_t dot = name.rfind('.');
        bool malformed = dot == std::string::npos || dot == 0 || dot + 1 == name.size() ||
                         name.find("..") != std::string::npos;
        bool bare_nn = name.starts_with("nn.");
        if (!malformed && !bare_nn) continue;
        std::string why =
            malformed ? "is not a dotted \"package.Class\" name, so its rsplit('.') into module "
                        "and class fails"
                      : "names the module \"nn\", which is not importable on its own";
        ctx.ReportAs(enabled ? Severity::kError : Severity::kWarning, "autocast-module-name", item,
                     "lower_precision_safe_modules[" + std::to_string(i) + "] \"" + name + "\" " +
                         why + ": with autocast enabled DeepSpeed raises \"Failed to import lower "
                         "precision safe module " + name + "\" at engine start",
                     bare_nn ? "write the full import path, \"torch." + name + "\""
                             : "write the full import path of the class, e.g. \"torch.nn.Linear\"");
      }
    } else {
      // A string or an object iterates (characters, keys) without the config-time error and
      // fails at import; anything else is not iterable and fails at once.
      bool late = mods->is_string() || mods->is_object();
      ctx.ReportAs(late && !enabled ? Severity::kWarning : Severity::kError,
                   "autocast-modules-invalid", ptr,
                   "torch_autocast.lower_precision_safe_modules is " + ShowValue(*mods) +
                       ", not a list of strings: " +
                       (late ? "DeepSpeed iterates its " +
                                   std::string(mods->is_string() ? "characters" : "keys") +
                                   " and, with autocast enabled, fails to import each as a module"
                             : std::string("DeepSpeed fails while reading the config (TypeError: "
                                           "not iterable)")),
                   "write a list: [\"torch.nn.Linear\"]");
    }
  }

  if (!enabled) return;

  // _validate_auto_cast_settings (torch_autocast.py).
  if (PydanticBool(v, "/zero_optimization/zero_quantized_weights", false).value_or(false)) {
    ctx.Report("autocast-quantized-weights", "/zero_optimization/zero_quantized_weights",
               "torch_autocast is enabled together with zero_quantized_weights: DeepSpeed asserts "
               "\"Cannot enable both torch autocast and zero quantized weights\"",
               "disable one of them");
  }
  if (version < ds_release::kAutocastLowPrecision) {
    bool fp16 = Fp16Enabled(v), bf16 = Bf16Enabled(v);
    if (fp16 || bf16) {
      ctx.Report("autocast-low-precision", "/torch_autocast/enabled",
                 "torch_autocast is enabled together with " + std::string(fp16 ? "fp16" : "bf16") +
                     ": DeepSpeed " + version.ToString() + " asserts \"Cannot enable both torch "
                     "autocast and " + (fp16 ? "fp16" : "bfloat16") + "\" (allowed from " +
                     ds_release::kAutocastLowPrecision.ToString() + ")",
                 "disable " + std::string(fp16 ? "fp16" : "bf16") +
                     " and keep the model in fp32 under autocast, or target DeepSpeed >= " +
                     ds_release::kAutocastLowPrecision.ToString());
    }
  }
  if (version < ds_history::kAutocastRelaxed) {
    auto comm = v.String("/communication_data_type");
    std::string c = comm.present() ? Lower(comm.value) : "";
    if (c == "fp16" || c == "bf16") {
      ctx.Report("autocast-comm-dtype", comm.pointer,
                 "communication_data_type is " + comm.value + " with torch_autocast: DeepSpeed " +
                     version.ToString() +
                     " asserts \"Communication data type must be float32 for torch autocast\" "
                     "(relaxed in " + ds_history::kAutocastRelaxed.ToString() + ")",
                 "remove communication_data_type (autocast picks the reduction dtype per "
                 "parameter), or target DeepSpeed >= " + ds_history::kAutocastRelaxed.ToString());
    }
  }
}

// runtime/engine.py DeepSpeedEngine._do_sanity_check: `if self.bfloat16_enabled() and not
// get_accelerator().is_bf16_supported(): raise ValueError("Type bf16 is not supported on your
// device.")`. CUDA_Accelerator.is_bf16_supported calls torch.cuda.is_bf16_supported(), which before
// torch 2.4 answers False below compute capability 8.0 (pytorch/pytorch#124996: False on a V100 with
// torch 2.2.2); from 2.4 its including_emulation=True default answers True wherever a bf16 tensor can
// be created, so DeepSpeed starts and runs bf16 emulated, without bf16 tensor cores.
void CheckBf16Hardware(RuleContext& ctx) {
  const ValidateOptions& o = ctx.options();
  if (o.gpu_compute_capability == 0 || o.gpu_compute_capability >= 80 || !Bf16Enabled(ctx.view())) return;
  const std::string gpu = (o.gpu_name.empty() ? std::string("the GPU") : o.gpu_name) + " (compute capability " +
                          std::to_string(o.gpu_compute_capability / 10) + "." +
                          std::to_string(o.gpu_compute_capability % 10) + ")";
  const auto torch24 = PackageVersion::Parse("2.4");
  const bool old_torch = o.torch_version && *o.torch_version < *torch24;
  const std::string pointer = ctx.view().Has("/bf16/enabled") ? "/bf16/enabled" : "/bf16";
  if (old_torch) {
    ctx.Report("precision-bf16-unsupported-gpu", pointer,
               "bf16 on " + gpu + " with torch " + o.torch_version->text +
                   ": torch.cuda.is_bf16_supported() is False below compute capability 8.0, and "
                   "DeepSpeedEngine._do_sanity_check raises ValueError(\"Type bf16 is not supported on your device.\")",
               "use fp16 (\"fp16\": {\"enabled\": true}) on this GPU");
    return;
  }
  ctx.ReportAs(Severity::kWarning, "precision-bf16-unsupported-gpu", pointer,
               "bf16 on " + gpu + ", which has no bf16 tensor cores: with torch >= 2.4 "
                   "torch.cuda.is_bf16_supported() counts emulation and DeepSpeed starts, running every bf16 "
                   "matmul emulated, far slower than fp16; with an older torch DeepSpeedEngine._do_sanity_check "
                   "raises ValueError(\"Type bf16 is not supported on your device.\")" +
                   (o.torch_version ? "" : " (which of the two depends on the torch version)"),
               "use fp16 on this GPU");
}

}  // namespace

RuleSet PrecisionRules() {
  RuleSet set;
  set.name = "precision";
  set.rules = {
      {"precision-fp16-bf16", Severity::kError, "precision", "fp16 and bf16 both enabled",
       "DeepSpeedConfig._initialize_params asserts \"bfloat16 and fp16 modes cannot be "
       "simultaneously enabled\". bf16 settings come from \"bf16\", or from the legacy "
       "\"bfloat16\" key when \"bf16\" is absent or null.",
       ""},
      {"precision-bfloat16-ignored", Severity::kWarning, "precision",
       "both bf16 and the legacy bfloat16 key",
       "get_bfloat16_config reads \"bfloat16\" only when \"bf16\" is absent or null, so with both "
       "present every setting under bfloat16 is ignored.",
       ""},
      {"fp16-loss-scale-invalid", Severity::kError, "precision",
       "fp16.loss_scale is not a finite number >= 0",
       "DeepSpeedFP16Config._validate_loss_scale rejects booleans, values float() cannot parse, "
       "inf/nan and negative numbers (0 selects dynamic loss scaling). It runs whenever the fp16 "
       "section is present, enabled or not.",
       ""},
      {"fp16-scale-param-invalid", Severity::kError, "precision",
       "fp16.loss_scale_window / min_loss_scale not an integer",
       "DeepSpeedFP16Config._reject_non_integer_scale_params rejects booleans (pydantic would "
       "coerce them to 0/1), non-finite floats and values int() cannot parse.",
       ""},
      {"fp16-dynamic-scale-nonpositive", Severity::kError, "precision",
       "dynamic loss scaling with loss_scale_window or min_loss_scale <= 0",
       "With fp16.enabled and loss_scale 0, DeepSpeedFP16Config requires loss_scale_window > 0 "
       "(it is a modulus in DynamicLossScaler.update_scale) and min_loss_scale > 0 (the scale "
       "floor). Static loss scaling skips the check.",
       ""},
      {"data-types-invalid", Severity::kError, "precision",
       "data_types entry that is not a DtypeEnum name",
       "data_types.grad_accum_dtype, param_dtype and buffer_dtype are kept as raw strings and "
       "resolved with DtypeEnum when the engine starts; other values raise ValueError there.",
       ""},
      {"precision-param-dtype", Severity::kError, "precision",
       "data_types.param_dtype disagrees with fp16/bf16",
       "engine.py _assert_valid_mixed_precision_config requires data_types.param_dtype, when set, "
       "to equal the dtype the fp16/bf16 flags imply (fp32 when neither is enabled): "
       "\"data_types.param_dtype='X' conflicts with the enabled precision mode\".",
       ""},
      {"comm-dtype-invalid", Severity::kError, "precision",
       "communication_data_type outside fp32/fp16/bf16",
       "get_communication_data_type lower-cases communication_data_type and "
       "seq_parallel_communication_data_type and accepts fp32, fp16, bf16 or null; anything else "
       "raises \"Invalid communication_data_type\" while the config is read.",
       ""},
      {"precision-amp-with-fp16-bf16", Severity::kError, "precision",
       "Apex AMP together with fp16 or bf16",
       "Without ZeRO, engine.py _do_optimizer_sanity_check raises NotImplementedError \"Cannot "
       "enable both amp with (legacy) fp16 or bfloat16 mode\" (with ZeRO, zero-amp fires first).",
       ""},
      {"autocast-unsupported-version", Severity::kWarning, "precision",
       "torch_autocast on a DeepSpeed release without it",
       "DeepSpeed reads top-level keys with dict.get, so before the torch_autocast section existed "
       "it is silently ignored and training runs without autocast.",
       "0.17.2 (PR #6993) introduced torch_autocast."},
      {"autocast-dtype-invalid", Severity::kError, "precision",
       "torch_autocast.dtype is not a DtypeEnum name",
       "get_torch_autocast_dtype parses the value with DtypeEnum whenever the key is present "
       "(even with autocast disabled, even when null) and raises ValueError otherwise. Accepted: "
       "torch.float16, fp16, float16, half, torch.bfloat16, bf16, bfloat16, torch.float32, fp32, "
       "float32, float, int8, torch.int8 (case-sensitive).",
       ""},
      {"autocast-no-dtype", Severity::kNote, "precision", "torch_autocast enabled without dtype",
       "Without a dtype key the config value is None and the engine calls torch.autocast(dtype="
       "None): torch's device default (float16 on CUDA), not the bfloat16 the DeepSpeed docs "
       "claim. Without ZeRO the engine creates its GradScaler only for dtype == float16, so a "
       "missing dtype on CUDA means float16 without loss scaling (reported as a warning then).",
       ""},
      {"autocast-modules-invalid", Severity::kError, "precision",
       "torch_autocast.lower_precision_safe_modules is not a list of strings",
       "get_lower_precision_safe_modules iterates the value and raises \"Invalid module names for "
       "torch autocast ... Expected list of strings.\" when an element is not a string; a value "
       "that is not iterable fails at once. A string or object iterates its characters or keys "
       "and fails later, at import (warning while autocast is disabled).",
       ""},
      {"autocast-module-name", Severity::kWarning, "precision",
       "a lower_precision_safe_modules entry is not an importable package.Class path",
       "init_autocast_params splits each name at its last dot, imports the module and takes the "
       "class; a name without a dot (\"Linear\") or with a bare \"nn.\" prefix fails with "
       "\"Failed to import lower precision safe module\". This happens only when autocast is "
       "enabled, so the finding is an error then and a warning otherwise.",
       ""},
      {"autocast-quantized-weights", Severity::kError, "precision",
       "torch_autocast with zero_quantized_weights",
       "torch_autocast.py _validate_auto_cast_settings asserts \"Cannot enable both torch "
       "autocast and zero quantized weights\" when autocast is enabled.",
       ""},
      {"autocast-low-precision", Severity::kError, "precision",
       "torch_autocast with fp16/bf16 on 0.17.2 <= DeepSpeed < 0.18.3",
       "In that window _validate_auto_cast_settings asserts \"Cannot enable both torch autocast "
       "and fp16\" / \"... and bfloat16\". From 0.18.3 the combination is allowed (tests combine "
       "bf16.enabled with torch_autocast).",
       "0.17.2 (PR #6993) added the assertions with torch.autocast support; 0.18.3 (PR #7700, "
       "low-precision master params/grads/optimizer states) removed them."},
      {"precision-bf16-unsupported-gpu", Severity::kError, "precision", "bf16 on a GPU without bf16 (V100, T4)",
       "With a cluster file (simulate, plan, which print it as a note): DeepSpeedEngine._do_sanity_check (runtime/engine.py) raises "
       "ValueError(\"Type bf16 is not supported on your device.\") when torch.cuda.is_bf16_supported() is False, "
       "which torch before 2.4 answers below compute capability 8.0. From torch 2.4 the function counts "
       "emulation and returns True, so DeepSpeed starts and bf16 runs emulated (a warning). Without a "
       "torch version (simulate and plan take none) the finding is a warning naming both; an error only "
       "where the options carry a torch below 2.4.",
       ""},
      {"autocast-comm-dtype", Severity::kError, "precision",
       "torch_autocast with a 16-bit communication_data_type on 0.17.2 <= DeepSpeed < 0.17.6",
       "The first torch.autocast integration asserted \"Communication data type must be float32 "
       "for torch autocast\" (and that all parameters are fp32).",
       "0.17.2 (PR #6993) added the assertion; 0.17.6 (PR #7543) removed it."},
  };
  set.check = [](RuleContext& ctx) {
    CheckFp16Bf16(ctx);
    CheckLossScale(ctx);
    CheckDataTypes(ctx);
    CheckCommDtypes(ctx);
    CheckAmp(ctx);
    CheckAutocast(ctx);
    CheckBf16Hardware(ctx);
  };
  return set;
}

}  // namespace dsp
