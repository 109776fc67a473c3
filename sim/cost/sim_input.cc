// SPDX-License-Identifier: Apache-2.0
// zero_optimization as DeepSpeedZeroConfig reads it (deepspeed/runtime/zero/config.py and
// offload_config.py at edaa722, DeepSpeed 0.19.6): pydantic drops "auto" before
// validation, so "auto" means the default; the legacy boolean form and the deprecated
// cpu_offload / cpu_offload_param keys are folded in; the resolved values are what the ZeRO
// optimizers use (offload_param only at stage 3, no offload at stage 0, ratio only at stage 3).
#include "sim/cost/sim_input.h"

#include <algorithm>

#include <cctype>

#include <string>

#include "core/config/config_view.h"
#include "core/config/parallel_config.h"
#include "core/rules/ds_semantics.h"

namespace dsp::sim {
namespace {

constexpr const char* kZero = "/zero_optimization/";

// A pydantic number field with an optional alias; the alias (stage3_*) is read first, as pydantic
// does when both spellings are given. Negative values are rejected by DeepSpeed (ge=0); keep the
// default then.
double ZeroNumber(const ConfigView& v, const std::string& name, const std::string& alias,
                  double fallback) {
  for (const std::string& key : {alias, name}) {
    if (key.empty()) continue;
    Setting<double> s = v.Number(kZero + key);
    if (s.present() && s.value >= 0) return s.value;
  }
  return fallback;
}

bool OffloadsTo(const ConfigView& v, const std::string& section, const std::string& legacy_key) {
  const std::string device = ds_semantics::OffloadDevice(v, section);
  if (device == "cpu" || device == "nvme") return true;
  // The deprecated boolean moves into the section only when the section is not given.
  const Json* given = v.Get(kZero + section);
  if (given != nullptr && !given->is_null()) return false;
  return ds_semantics::PydanticBool(v, kZero + legacy_key, false).value_or(false);
}

}  // namespace

bool AutoSpFallsBack(const ParallelConfig& pc) {
  const bool autosp =
      std::find(pc.compile_passes.begin(), pc.compile_passes.end(), "autosp") != pc.compile_passes.end();
  return pc.deepcompile && autosp && pc.zero_stage.or_default(0) >= 2;
}

ParamCounts ModelParamCounts(const SimInput& input) {
  return input.param_counts != nullptr ? *input.param_counts : CountParameters(*input.model);
}

int64_t SequenceShards(const SimInput& in) {
  if (in.plan == nullptr) return 1;
  return AutoSpFallsBack(in.plan->parallel) ? 1 : std::max<int64_t>(in.plan->sizes.sp, 1);
}

ZeroSettings ReadZeroSettings(const Json& config) {
  ConfigView v(config);
  ZeroSettings z;
  const ParallelConfig pc = ReadParallelConfig(v);
  const int64_t stage = pc.zero_stage.or_default(0);
  z.stage = stage >= 0 && stage <= 3 ? static_cast<int>(stage) : 0;

  if (pc.zero_legacy_bool) {
    // "zero_optimization": true -> stage 1 with allgather_bucket_size = top-level allgather_size.
    Setting<double> size = v.Number("/allgather_size");
    if (size.present() && size.value >= 0) z.allgather_bucket_size = size.value;
    z.overlap_comm = false;
    return z;
  }

  z.offload_optimizer = z.stage >= 1 && OffloadsTo(v, "offload_optimizer", "cpu_offload");
  z.offload_param = z.stage == 3 && OffloadsTo(v, "offload_param", "cpu_offload_param");
  if (z.stage == 3) {
    Setting<double> ratio = v.Number(std::string(kZero) + "offload_optimizer/ratio");
    if (ratio.present() && ratio.value >= 0 && ratio.value <= 1) z.offload_ratio = ratio.value;
  }
  // overlap_comm: None -> dynamic default (stage == 3), config.py overlap_comm_valid.
  z.overlap_comm =
      ds_semantics::PydanticBool(v, std::string(kZero) + "overlap_comm", z.stage == 3).value_or(z.stage == 3);
  z.reduce_bucket_size = ZeroNumber(v, "reduce_bucket_size", "", z.reduce_bucket_size);
  z.allgather_bucket_size = ZeroNumber(v, "allgather_bucket_size", "", z.allgather_bucket_size);
  z.prefetch_bucket_size =
      ZeroNumber(v, "prefetch_bucket_size", "stage3_prefetch_bucket_size", z.prefetch_bucket_size);
  z.max_live_parameters =
      ZeroNumber(v, "max_live_parameters", "stage3_max_live_parameters", z.max_live_parameters);
  z.param_persistence_threshold = ZeroNumber(v, "param_persistence_threshold",
                                             "stage3_param_persistence_threshold",
                                             z.param_persistence_threshold);
  z.max_reuse_distance =
      ZeroNumber(v, "max_reuse_distance", "stage3_max_reuse_distance", z.max_reuse_distance);
  z.sub_group_size = ZeroNumber(v, "sub_group_size", "", z.sub_group_size);
  if (z.stage == 3) {
    z.quantized_weights =
        ds_semantics::PydanticBool(v, std::string(kZero) + "zero_quantized_weights", false).value_or(false);
    z.quantized_gradients =
        ds_semantics::PydanticBool(v, std::string(kZero) + "zero_quantized_gradients", false).value_or(false);
    const double hpz = ZeroNumber(v, "zero_hpz_partition_size", "", 1);
    z.hpz_partition_size = hpz >= 1 ? static_cast<int64_t>(hpz) : 1;
    Setting<double> mics = v.Number(std::string(kZero) + "mics_shard_size");
    if (mics.present() && mics.value >= 1) z.mics_shard_size = static_cast<int64_t>(mics.value);
  }
  if (z.stage == 1 || z.stage == 2) {
    z.round_robin_gradients =
        ds_semantics::PydanticBool(v, std::string(kZero) + "round_robin_gradients", false).value_or(false);
  }
  z.optimizer_pin_memory =
      ds_semantics::PydanticBool(v, std::string(kZero) + "offload_optimizer/pin_memory", true).value_or(true);
  z.param_pin_memory =
      ds_semantics::PydanticBool(v, std::string(kZero) + "offload_param/pin_memory", true).value_or(true);
  const auto lists = [&pc](const char* pass) {
    return std::find(pc.compile_passes.begin(), pc.compile_passes.end(), pass) != pc.compile_passes.end();
  };
  z.deepcompile = pc.deepcompile && z.stage >= 1 && !lists("autosp") && !lists("autotp");
  // DeepCompile's ZeRO-3 registers every parameter with ds_persist = False (compile/init_z3.py
  // init_z3: "Disable persistent param"): stage3_param_persistence_threshold has no effect and
  // every parameter is gathered before use and released after.
  if (z.deepcompile && z.stage == 3) z.param_persistence_threshold = 0;
  z.deepcompile_offload_opt_states =
      z.deepcompile && z.stage == 3 && ds_semantics::PydanticBool(v, "/compile/offload_opt_states", false).value_or(false);
  if (z.deepcompile && z.stage == 3) {
    for (const char* key : {"/compile/offload_parameters", "/compile/offload_opt_states", "/compile/offload_activation"}) {
      if (ds_semantics::PydanticBool(v, key, false).value_or(false)) z.deepcompile_gathers_in_place = true;
    }
    if (ds_semantics::ZeroOffloadTurnsOnCompileOffloadParameters(v)) z.deepcompile_gathers_in_place = true;
  }
  return z;
}

ZeroSettings ReadZeroSettings(const Json& config, const DeepSpeedVersion& version) {
  ZeroSettings z = ReadZeroSettings(config);
  ConfigView v(config);
  // pin_memory defaulted to false before 0.19.5 (offload_config.py, PR #8207).
  const bool pin_default = version >= ds_release::kOffloadPinMemoryDefault;
  z.optimizer_pin_memory =
      ds_semantics::PydanticBool(v, std::string(kZero) + "offload_optimizer/pin_memory", pin_default)
          .value_or(pin_default);
  z.param_pin_memory =
      ds_semantics::PydanticBool(v, std::string(kZero) + "offload_param/pin_memory", pin_default)
          .value_or(pin_default);
  if (z.stage != 3) return z;
  // stage3.py: the bucket is reduce-scattered only with contiguous_gradients and reduce_scatter
  // on; contiguous_gradients defaulted to false for stage 3 until 0.4.3, reduce_scatter to false
  // in 0.3.16 alone (both fixed upstream; first tags from `git tag --contains`).
  const bool contiguous_default = version >= ds_release::kZero3ContiguousGradientsDefault;
  const bool reduce_scatter_default =
      !(version >= ds_release::kZero3ReduceScatterDefaultOff &&
        version < ds_release::kZero3ReduceScatterDefaultFixed);
  const bool contiguous = ds_semantics::PydanticBool(v, std::string(kZero) + "contiguous_gradients",
                                                     contiguous_default)
                              .value_or(contiguous_default);
  const bool reduce_scatter =
      ds_semantics::PydanticBool(v, std::string(kZero) + "reduce_scatter", reduce_scatter_default)
          .value_or(reduce_scatter_default);
  z.stage3_reduce_scatter = contiguous && reduce_scatter;
  return z;
}

CheckpointSettings ReadCheckpointSettings(const Json& config, const DeepSpeedVersion& version) {
  ConfigView v(config);
  CheckpointSettings c;
  // A dict-parsed section: Python truthiness (checkpointing.py reads the config dict).
  c.partition_activations = ds_semantics::DictFlag(v, "/activation_checkpointing/partition_activations");
  c.cpu_checkpointing = ds_semantics::DictFlag(v, "/activation_checkpointing/cpu_checkpointing");
  c.async_copy = c.cpu_checkpointing && !c.partition_activations &&
                 version >= ds_release::kAsyncCpuCheckpointing;
  // checkpointing.configure asserts partition_activations and number_checkpoints for it.
  c.contiguous_memory =
      c.partition_activations &&
      ds_semantics::DictFlag(v, "/activation_checkpointing/contiguous_memory_optimization");
  Setting<double> n = v.Number("/activation_checkpointing/number_checkpoints");
  if (n.present() && n.value >= 1) c.number_checkpoints = static_cast<int64_t>(n.value);
  return c;
}

PrecisionSettings ReadPrecisionSettings(const Json& config) {
  ConfigView v(config);
  PrecisionSettings p;
  p.torch_autocast = ds_semantics::DictFlag(v, "/torch_autocast/enabled");
  // config.py get_communication_data_type: fp32, fp16 or bf16 (validate rejects anything else).
  auto dtype_bytes = [&](const std::string& pointer) -> double {
    auto s = v.String(pointer);
    if (!s.present()) return 0;
    const std::string& t = s.value;
    if (t == "fp32" || t == "float32") return 4;
    if (t == "fp16" || t == "bf16" || t == "float16" || t == "bfloat16") return 2;
    return 0;
  };
  p.communication_bytes = dtype_bytes("/communication_data_type");
  // bf16 master weights and gradients, optionally bf16 optimizer states (ZeRO 1-3, PR #7700).
  const bool zero = ReadParallelConfig(v).zero_stage.or_default(0) >= 1;
  p.low_precision_master = zero && ds_semantics::Bf16Enabled(v) &&
                           ds_semantics::PydanticBool(v, "/bf16/bf16_master_weights_and_grads", false).value_or(false);
  p.bf16_optimizer_states = p.low_precision_master &&
                            ds_semantics::PydanticBool(v, "/bf16/bf16_optimizer_states", false).value_or(false);
  if (const double sp = dtype_bytes("/seq_parallel_communication_data_type"); sp > 0) {
    p.seq_parallel_communication_bytes = sp;
  }
  if (p.torch_autocast) {
    // DtypeEnum spellings of fp32 (torch_autocast.dtype); the rest are 16-bit.
    auto dtype = v.String("/torch_autocast/dtype");
    if (dtype.present()) {
      const std::string& t = dtype.value;
      if (t == "torch.float32" || t == "fp32" || t == "float32" || t == "float") p.autocast_bytes = 4;
    }
    const Json* modules = v.Get("/torch_autocast/lower_precision_safe_modules");
    if (modules != nullptr && modules->is_array()) {
      p.autocast_linear_low_precision = false;
      for (const Json& m : *modules) {
        if (m.is_string() && (m.get<std::string>() == "torch.nn.Linear" ||
                              m.get<std::string>() == "torch.nn.modules.linear.Linear")) {
          p.autocast_linear_low_precision = true;
        }
      }
    }
  }
  return p;
}

double ReadOptimizerStateBytes(const Json& config) {
  ConfigView v(config);
  auto type = v.String("/optimizer/type");
  if (!type.present()) return 12;
  std::string t = type.value;
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // fp32 master weights (4 bytes) plus the optimizer's own fp32 states.
  if (t == "sgd") {
    auto momentum = v.Number("/optimizer/params/momentum");
    return momentum.present() && momentum.value != 0 ? 8 : 4;
  }
  double k = 12;  // Adam, AdamW, FusedAdam, CPUAdam, LAMB, 1-bit Adam/LAMB, 0/1 Adam: two states
  if (t == "lion" || t == "adagrad" || t == "rmsprop") k = 8;  // one state
  return k;
}

double ReadOptimizerStateBytes(const Json& config, const PrecisionSettings& precision) {
  double k = ReadOptimizerStateBytes(config);
  if (precision.low_precision_master) {
    // bf16.bf16_master_weights_and_grads (PR #7700): a bf16 master copy (2 bytes, not 4);
    // bf16_optimizer_states also keeps the moments in bf16 (base_optimizer.py
    // _configure_master_weights, engine.py's DeepSpeedCPUAdam fp32_optimizer_states=False).
    double states = k - 4;
    if (precision.bf16_optimizer_states) states /= 2;
    k = 2 + states;
  }
  return k;
}

double EngineOptimizerStateBytes(const EngineSettings& engine, double config_bytes) {
  if (!engine.bf16_params && !engine.bf16_optimizer_states) return config_bytes;
  const double states = std::max(config_bytes - 4.0, 0.0);
  return 2.0 + (engine.bf16_optimizer_states ? states / 2 : states);
}

bool EngineFp32Gradients(const EngineSettings& engine, bool bf16, int zero_stage) {
  return Fp32GradientBuffer(engine.engine, bf16, zero_stage) && !engine.bf16_grad_buffer && !engine.bf16_params;
}

}  // namespace dsp::sim
