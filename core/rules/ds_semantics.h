// SPDX-License-Identifier: Apache-2.0
// How DeepSpeed itself reads the values the zero/precision/gradient/compile/sequence-parallel/
// checkpointing rules look at. DeepSpeed mixes three reading styles, and a rule has to emulate the
// one that applies, or it reports a different config than the one DeepSpeed runs:
//   * pydantic sections (zero_optimization, fp16, bf16, compile, ...): "auto" is dropped before
//     validation (the default applies) and bools are parsed leniently ("true", "yes", 1, ...);
//   * dict-parsed sections (torch_autocast, amp, activation_checkpointing, optimizer): the raw
//     value is used with Python truthiness, so "false" (a non-empty string) is true;
//   * a few derived facts: the ZeRO stage (legacy boolean folded in), which bf16 key is read, the
//     precision mode the engine infers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/deepspeed_version.h"
#include "core/json/document.h"
#include "core/rules/rule_context.h"

namespace dsp {

// Release constants live in core/config/deepspeed_version.h; the short names are kept here.
namespace ds_history {
using ds_release::kAutocastRelaxed;
using ds_release::kLowPrecisionMaster;
using ds_release::kCompilePasses;
using ds_release::kCompileAutoTp;
using ds_release::kGradientAllreduceOp;
using ds_release::kAsyncCpuCheckpointing;
using ds_release::kCompileAutoEpNonMoe;
}  // namespace ds_history

namespace ds_semantics {

// Python truthiness of a JSON value as DeepSpeed's dict-parsed sections see it: null, false, 0,
// "" and empty containers are false; everything else (including the string "false") is true.
bool PyTruthy(const Json& value);

// A dict-parsed flag (get_scalar_param): absent -> `fallback`, otherwise Python truthiness.
bool DictFlag(const ConfigView& view, const std::string& pointer, bool fallback = false);

// A pydantic `bool` field: absent or "auto" -> `fallback`; lax parsing as pydantic does (true/false,
// 0/1, "yes"/"no"/"on"/"off"/"t"/"f"/"y"/"n"/"1"/"0", case-insensitive); nullopt when pydantic
// would reject the value (the schema check reports that).
std::optional<bool> PydanticBool(const ConfigView& view, const std::string& pointer, bool fallback);

// The ZeRO stage DeepSpeed uses: 0 when zero_optimization or its stage is absent, the legacy boolean
// folded in; nullopt when it is "auto" or not an integer (unknown until the Trainer fills it in).
std::optional<int64_t> EffectiveZeroStage(const RuleContext& ctx);

// "/bf16", or "/bfloat16" when only the legacy key is given (DeepSpeed reads `bfloat16` only when
// `bf16` is absent or null).
std::string Bf16Section(const ConfigView& view);

// fp16.enabled / bf16.enabled as DeepSpeed reads them (false when unparseable).
bool Fp16Enabled(const ConfigView& view);
bool Bf16Enabled(const ConfigView& view);

// ZeRO offload device of zero_optimization.<section> ("none" when absent or null).
std::string OffloadDevice(const ConfigView& view, const std::string& section);

// engine.py get_deepcompile_backend (0.19.6) turns compile.offload_parameters on itself when
// zero_optimization offloads both the optimizer and the parameters to cpu.
bool ZeroOffloadTurnsOnCompileOffloadParameters(const ConfigView& view);

// A short rendering of a JSON value for messages: strings quoted, others dumped, long values cut.
std::string ShowValue(const Json& value);

// Python's repr() of a JSON scalar, as DeepSpeed's f"{x!r}" prints it: 'text', True, None, 3.
std::string PyRepr(const Json& value);

// Whether `key` is one of a signature's keyword names.
bool Contains(const std::vector<std::string_view>& names, std::string_view key);

// Lower-cased ASCII copy.
std::string Lower(std::string text);

}  // namespace ds_semantics
}  // namespace dsp
