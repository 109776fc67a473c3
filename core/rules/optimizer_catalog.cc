// SPDX-License-Identifier: Apache-2.0
#include "core/rules/optimizer_catalog.h"

#include "core/rules/ds_semantics.h"

namespace dsp {
namespace {

using Keys = std::vector<std::string_view>;

// torch.optim keyword arguments (torch 2.x; torch/optim/*.py). foreach/maximize/capturable/
// differentiable/fused are keyword-only flags that JSON can still pass.
const OptimizerClass kTorchAdam{"torch.optim.Adam", "torch/optim/adam.py",
                                Keys{"lr", "betas", "eps", "weight_decay", "amsgrad", "foreach", "maximize",
                                  "capturable", "differentiable", "fused", "decoupled_weight_decay"},
                                {}, true, false, true};
const OptimizerClass kTorchAdamW{"torch.optim.AdamW", "torch/optim/adamw.py",
                                 Keys{"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach",
                                   "capturable", "differentiable", "fused"},
                                 {}, true, false, true};
const OptimizerClass kTorchAdagrad{"torch.optim.Adagrad", "torch/optim/adagrad.py",
                                   Keys{"lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps",
                                     "foreach", "maximize", "differentiable", "fused"},
                                   {}, true, false, true};
const OptimizerClass kTorchSgd{"torch.optim.SGD", "torch/optim/sgd.py",
                               Keys{"lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize",
                                 "foreach", "differentiable", "fused"},
                               {}, false, false, true};

// DeepSpeed 0.19.6 ops.
const OptimizerClass kFusedAdam{"FusedAdam", "deepspeed/ops/adam/fused_adam.py",
                                Keys{"lr", "bias_correction", "betas", "eps", "weight_decay", "amsgrad",
                                  "set_grad_none"},
                                Keys{"adam_w_mode"}, true, true, false};
const OptimizerClass kCpuAdam{"DeepSpeedCPUAdam", "deepspeed/ops/adam/cpu_adam.py",
                              Keys{"lr", "bias_correction", "betas", "eps", "weight_decay", "amsgrad",
                                "fp32_optimizer_states"},
                              Keys{"adamw_mode"}, true, false, false};
const OptimizerClass kZenFlowCpuAdam{"ZenFlowCPUAdam", "deepspeed/ops/adam/zenflow_cpu_adam.py",
                                     Keys{"lr", "bias_correction", "betas", "eps", "weight_decay", "amsgrad",
                                       "fp32_optimizer_states"},
                                     Keys{"adamw_mode", "overlap_step"}, true, false, false};
const OptimizerClass kFusedLamb{"FusedLamb", "deepspeed/ops/lamb/fused_lamb.py",
                                Keys{"lr", "bias_correction", "betas", "eps", "eps_inside_sqrt", "weight_decay",
                                  "max_coeff", "min_coeff", "amsgrad"},
                                {}, false, true, false};
const OptimizerClass kCpuAdagrad{"DeepSpeedCPUAdagrad", "deepspeed/ops/adagrad/cpu_adagrad.py",
                                 Keys{"lr", "eps", "weight_decay", "amsgrad", "fp32_optimizer_states"},
                                 {}, true, false, false};
const OptimizerClass kFusedLion{"FusedLion", "deepspeed/ops/lion/fused_lion.py",
                                Keys{"lr", "betas", "weight_decay", "set_grad_none"}, {}, true, false, false};
const OptimizerClass kCpuLion{"DeepSpeedCPULion", "deepspeed/ops/lion/cpu_lion.py",
                              Keys{"lr", "betas", "weight_decay", "fp32_optimizer_states"}, {}, true, false, false};
const OptimizerClass kOnebitAdam{"OnebitAdam", "deepspeed/runtime/fp16/onebit/adam.py",
                                 Keys{"lr", "freeze_step", "bias_correction", "betas", "eps", "eps_inside_sqrt",
                                   "weight_decay", "amsgrad", "cuda_aware", "comm_backend_name"},
                                 Keys{"deepspeed"}, false, true, false};
const OptimizerClass kZeroOneAdam{"ZeroOneAdam", "deepspeed/runtime/fp16/onebit/zoadam.py",
                                  Keys{"lr", "bias_correction", "betas", "eps", "eps_inside_sqrt", "weight_decay",
                                    "var_freeze_step", "var_update_scaler", "local_step_scaler",
                                    "local_step_clipper", "amsgrad", "cuda_aware", "comm_backend_name"},
                                  Keys{"deepspeed"}, false, true, false};
const OptimizerClass kOnebitLamb{"OnebitLamb", "deepspeed/runtime/fp16/onebit/lamb.py",
                                 Keys{"lr", "freeze_step", "bias_correction", "betas", "eps", "eps_inside_sqrt",
                                   "weight_decay", "max_coeff", "min_coeff", "amsgrad", "cuda_aware",
                                   "comm_backend_name", "coeff_beta", "factor_max", "factor_min",
                                   "factor_threshold"},
                                 Keys{"deepspeed"}, false, true, false};
// mup's MuAdam/MuAdamW/MuSGD forward **kwargs to torch Adam/AdamW/SGD and return those classes.
const OptimizerClass kMuAdam{"mup.MuAdam", "mup/optim.py",
                             Keys{"impl", "lr", "betas", "eps", "weight_decay", "amsgrad", "foreach", "maximize",
                               "capturable", "differentiable", "fused", "decoupled_weight_decay"},
                             {}, true, false, true};
const OptimizerClass kMuAdamW{"mup.MuAdamW", "mup/optim.py",
                              Keys{"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach",
                                "capturable", "differentiable", "fused"},
                              {}, true, false, true};
const OptimizerClass kMuSgd{"mup.MuSGD", "mup/optim.py",
                            Keys{"impl", "lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize",
                              "foreach", "differentiable", "fused"},
                            {}, false, false, true};
// engine.py builds MuonWithAuxAdam's groups from these keys only and drops every other one.
const OptimizerClass kMuon{"MuonWithAuxAdam", "deepspeed/runtime/zero/muon/muon_optimizer.py",
                           Keys{"lr", "momentum", "weight_decay", "muon_lr", "ns_method", "betas", "eps", "adam_lr"},
                           {}, true, false, false, true};

// torch.optim classes reached through the fallback getattr(torch.optim, name) (exact spelling).
const std::vector<OptimizerClass>& TorchFallbacks() {
  static const std::vector<OptimizerClass> classes = {
      {"SGD", "torch/optim/sgd.py", kTorchSgd.params, {}, false, false, true},
      {"RMSprop", "torch/optim/rmsprop.py",
       Keys{"lr", "alpha", "eps", "weight_decay", "momentum", "centered", "capturable", "foreach", "maximize",
         "differentiable"},
       {}, false, false, true},
      {"Adamax", "torch/optim/adamax.py",
       Keys{"lr", "betas", "eps", "weight_decay", "foreach", "maximize", "differentiable", "capturable"},
       {}, false, false, true},
      {"NAdam", "torch/optim/nadam.py",
       Keys{"lr", "betas", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay", "foreach",
         "maximize", "capturable", "differentiable"},
       {}, false, false, true},
      {"RAdam", "torch/optim/radam.py",
       Keys{"lr", "betas", "eps", "weight_decay", "decoupled_weight_decay", "foreach", "maximize", "capturable",
         "differentiable"},
       {}, false, false, true},
      {"Adadelta", "torch/optim/adadelta.py",
       Keys{"lr", "rho", "eps", "weight_decay", "foreach", "capturable", "maximize", "differentiable"},
       {}, false, false, true},
      {"ASGD", "torch/optim/asgd.py",
       Keys{"lr", "lambd", "alpha", "t0", "weight_decay", "foreach", "maximize", "differentiable", "capturable"},
       {}, false, false, true},
      {"LBFGS", "torch/optim/lbfgs.py",
       Keys{"lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change", "history_size", "line_search_fn"},
       {}, false, false, true},
      {"Rprop", "torch/optim/rprop.py",
       Keys{"lr", "etas", "step_sizes", "capturable", "foreach", "maximize", "differentiable"}, {}, false, false,
       true},
      {"SparseAdam", "torch/optim/sparse_adam.py", Keys{"lr", "betas", "eps", "maximize"}, {}, false, false, true},
      {"Adafactor", "torch/optim/_adafactor.py",
       Keys{"lr", "beta2_decay", "eps", "d", "weight_decay", "foreach", "maximize"}, {}, false, false, false},
  };
  return classes;
}

// DEEPSPEED_OPTIMIZERS, runtime/config.py (0.19.6).
const std::vector<std::string>& DeepSpeedNames() {
  static const std::vector<std::string> names = {"adagrad",   "adam",       "adamw",  "lamb",
                                                 "onebitadam", "onebitlamb", "zerooneadam", "muadam",
                                                 "muadamw",   "musgd",      "lion",   "muon"};
  return names;
}

}  // namespace

std::vector<std::string> KnownOptimizerNames() {
  // As users write them: DeepSpeed's names in their documented casing, then torch's.
  std::vector<std::string> out = {"Adagrad", "Adam",   "AdamW",  "Lamb",  "OneBitAdam", "OneBitLamb",
                                  "ZeroOneAdam", "MuAdam", "MuAdamW", "MuSGD", "Lion",       "Muon"};
  for (const auto& c : TorchFallbacks()) out.emplace_back(c.name);
  return out;
}

OptimizerChoice ChooseOptimizer(const std::string& type, const Json& root) {
  using namespace ds_semantics;
  OptimizerChoice out;
  ConfigView view(root);
  // config.py _initialize_params: lower-cased only when the lower-cased name is DeepSpeed's.
  std::string lower = Lower(type);
  bool deepspeed = false;
  for (const auto& n : DeepSpeedNames()) deepspeed = deepspeed || n == lower;
  // engine.py zero_use_cpu_optimizer: offload_optimizer.device cpu or nvme, at any stage (the
  // deprecated cpu_offload: true maps to device cpu).
  std::string device = OffloadDevice(view, "offload_optimizer");
  const Json* legacy = view.Get("/zero_optimization/cpu_offload");
  bool cpu = device == "cpu" || device == "nvme" || (device == "none" && legacy != nullptr && PyTruthy(*legacy));
  std::string cpu_why = "zero_optimization.offload_optimizer.device is " + (device == "none" ? std::string("cpu") : device);
  if (!deepspeed) {
    for (const auto& c : TorchFallbacks()) {
      if (c.name == type) {
        out.known = true;
        out.cls = &c;
        out.why = "DeepSpeed falls back to torch.optim." + type;
      }
    }
    return out;
  }
  out.known = true;
  out.deepspeed_name = lower;
  const Json* params = view.Get("/optimizer/params");
  auto param = [&](const char* key) -> const Json* {
    return params != nullptr && params->is_object() && params->contains(key) ? &(*params)[key] : nullptr;
  };
  if (lower == "adam" || lower == "adamw") {
    out.popped = {"torch_adam", "adam_w_mode"};
    const Json* torch_adam = param("torch_adam");
    const Json* w_mode = param("adam_w_mode");
    bool adamw = lower == "adamw" || w_mode == nullptr || PyTruthy(*w_mode);
    if (torch_adam != nullptr && PyTruthy(*torch_adam)) {
      out.cls = adamw ? &kTorchAdamW : &kTorchAdam;
      out.why = "optimizer.params.torch_adam is true";
    } else if (cpu) {
      out.popped.push_back("fp32_optimizer_states");
      out.cls = view.Get("/zero_optimization/zenflow") != nullptr && !view.Get("/zero_optimization/zenflow")->is_null()
                    ? &kZenFlowCpuAdam
                    : &kCpuAdam;
      out.why = cpu_why;
    } else {
      out.cls = &kFusedAdam;
    }
  } else if (lower == "adagrad") {
    out.cls = cpu ? &kCpuAdagrad : &kTorchAdagrad;
    if (cpu) out.why = cpu_why;
  } else if (lower == "lamb") {
    out.cls = &kFusedLamb;
  } else if (lower == "onebitadam") {
    out.cls = &kOnebitAdam;
  } else if (lower == "zerooneadam") {
    out.cls = &kZeroOneAdam;
  } else if (lower == "onebitlamb") {
    out.cls = &kOnebitLamb;
  } else if (lower == "lion") {
    out.cls = cpu ? &kCpuLion : &kFusedLion;
    if (cpu) out.why = cpu_why;
  } else if (lower == "muadam") {
    out.cls = &kMuAdam;
  } else if (lower == "muadamw") {
    out.cls = &kMuAdamW;
  } else if (lower == "musgd") {
    out.cls = &kMuSgd;
  } else if (lower == "muon") {
    out.cls = &kMuon;
  }
  return out;
}

}  // namespace dsp
