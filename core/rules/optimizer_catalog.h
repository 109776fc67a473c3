// SPDX-License-Identifier: Apache-2.0
// Which optimizer class DeepSpeed builds from an optimizer section, and the keyword arguments its
// constructor takes. DeepSpeed passes optimizer.params as **kwargs (runtime/engine.py
// _configure_basic_optimizer, 0.19.6), so a key outside the signature is a TypeError at
// deepspeed.initialize. Signatures are DeepSpeed 0.19.6's ops (ops/adam, ops/lamb, ops/adagrad,
// ops/lion, runtime/fp16/onebit, runtime/zero/muon) and torch 2.x's torch.optim.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/json/document.h"

namespace dsp {

struct OptimizerClass {
  std::string_view name;    // "FusedAdam", "torch.optim.AdamW"
  std::string_view source;  // "deepspeed/ops/adam/fused_adam.py"
  std::vector<std::string_view> params;  // keyword arguments a config may pass
  // Keys DeepSpeed itself passes next to **params (a user key of that name is "got multiple
  // values for keyword argument").
  std::vector<std::string_view> passed_by_deepspeed;
  bool zero_supported = false;  // in ZERO_SUPPORTED_OPTIMIZERS (runtime/zero/utils.py), exact type
  bool rejects_amsgrad = false; // raises RuntimeError("... does not support the AMSGrad variant.")
  bool torch_ranges = false;    // torch.optim's "Invalid learning rate" / eps / betas / weight_decay checks
  bool ignores_unknown = false; // Muon: DeepSpeed copies a whitelist and drops the rest
};

// What DeepSpeed makes of optimizer.type and the rest of the config.
struct OptimizerChoice {
  bool known = false;             // a DeepSpeed name (case-insensitive) or a torch.optim class (exact)
  std::string deepspeed_name;     // lower-cased DeepSpeed name ("adam", "lamb", ...), or "" for torch
  const OptimizerClass* cls = nullptr;
  std::vector<std::string_view> popped;  // keys DeepSpeed removes from params before the call
  std::string why;                // "offload_optimizer.device is cpu", "torch_adam is true", ""
};

// `type` as written; `root` is the whole config (offload, torch_adam, zenflow decide the class).
OptimizerChoice ChooseOptimizer(const std::string& type, const Json& root);

// DEEPSPEED_OPTIMIZERS (runtime/config.py) and the torch.optim classes a config can name, for
// "did you mean".
std::vector<std::string> KnownOptimizerNames();

}  // namespace dsp
