// SPDX-License-Identifier: Apache-2.0
// ZeRO : the `zero_optimization` section as DeepSpeedZeroConfig validates
// it (deepspeed/runtime/zero/config.py, offload_config.py), the ZeRO assertions of
// DeepSpeedConfig._do_error_check (config.py) and the ones the engine makes while it builds the
// optimizer (engine.py _do_optimizer_sanity_check, _configure_basic_optimizer,
// _configure_zero_optimizer), and what DeepSpeed accepts but silently does not use.
#include <array>
#include <string>
#include <vector>

#include "core/rules/ds_semantics.h"
#include "core/rules/rule_context.h"
#include "core/rules/rule_sets.h"

namespace dsp {
namespace {

using namespace ds_semantics;

constexpr const char* kZero = "/zero_optimization";

std::string ZeroKey(const std::string& key) { return std::string(kZero) + "/" + key; }

// The stage when it is known and valid (0..3); an invalid stage is reported once, by
// zero-stage-invalid, and the other rules stay quiet about it.
std::optional<int64_t> KnownStage(const RuleContext& ctx) {
  auto s = EffectiveZeroStage(ctx);
  if (!s || *s < 0 || *s > 3) return std::nullopt;
  return s;
}

std::string StageText(int64_t stage) { return "ZeRO stage " + std::to_string(stage); }

// A key of zero_optimization that pydantic sees: present and not "auto" (dropped before validation).
bool GivenInZero(const ConfigView& v, const std::string& key) {
  const Json* value = v.Get(ZeroKey(key));
  return value != nullptr && !(value->is_string() && value->get_ref<const std::string&>() == "auto");
}

void CheckStage(RuleContext& ctx) {
  const ParallelConfig& pc = ctx.parallel();
  if (pc.zero_legacy_bool) {
    bool on = pc.zero_stage.value == 1;
    ctx.Report("zero-legacy-bool", kZero,
               std::string("\"zero_optimization\": ") + (on ? "true" : "false") +
                   " is the deprecated boolean form: DeepSpeed reads it as stage " +
                   (on ? "1 (with allgather_bucket_size taken from the top-level allgather_size, "
                         "default 5e8)"
                       : "0 (ZeRO disabled)") +
                   " and logs \"this format of ZeRO optimization setup is deprecated\"",
               on ? "write \"zero_optimization\": {\"stage\": 1}"
                  : "remove zero_optimization, or write \"zero_optimization\": {\"stage\": 0}");
    return;
  }
  const Setting<int64_t>& s = pc.zero_stage;
  if (s.present() && (s.value < 0 || s.value > 3)) {
    ctx.Report("zero-stage-invalid", s.pointer,
               "zero_optimization.stage is " + std::to_string(s.value) +
                   ": DeepSpeed accepts 0 (disabled), 1 (optimizer states), 2 (+ gradients) or 3 "
                   "(+ parameters); pydantic's ZeroStageEnum rejects anything else, and "
                   "_do_error_check asserts \"Maximum supported ZeRO stage is 3\"",
               "use a stage between 0 and 3");
  }
}

void CheckOffload(RuleContext& ctx, std::optional<int64_t> stage) {
  const ConfigView& v = ctx.view();
  const Json* opt = v.Get(ZeroKey("offload_optimizer"));
  const Json* param = v.Get(ZeroKey("offload_param"));
  std::string opt_dev = OffloadDevice(v, "offload_optimizer");
  std::string param_dev = OffloadDevice(v, "offload_param");

  // offload_ratio_check: any offload_optimizer object (whatever its device) with ratio < 1.
  auto ratio = v.Number(ZeroKey("offload_optimizer/ratio"));
  if (opt != nullptr && opt->is_object() && ratio.present() && ratio.value < 1.0 && stage &&
      *stage != 3) {
    ctx.Report("zero-partial-offload-stage", ratio.pointer,
               "offload_optimizer.ratio is " + ShowValue(*v.Get(ratio.pointer)) + " with " +
                   StageText(*stage) +
                   ": DeepSpeed asserts \"Partial offloading only supported for ZeRO Stage 3.\"",
               "set zero_optimization.stage to 3, or remove ratio (the default 1.0 offloads all "
               "optimizer states)");
  }

  if (param != nullptr && param->is_object() && param_dev != "none" && stage && *stage < 3) {
    std::string at = v.Has(ZeroKey("offload_param/device")) ? ZeroKey("offload_param/device")
                                                              : ZeroKey("offload_param");
    ctx.Report("zero-offload-param-unused", at,
               "offload_param (device " + param_dev + ") does nothing at " + StageText(*stage) +
                   ": only stage 3 partitions parameters, so only stage 3 can offload them; "
                   "DeepSpeed accepts the section and silently keeps parameters on the GPU",
               "set zero_optimization.stage to 3 to offload parameters, or remove offload_param "
               "(offload_optimizer works with stages 1, 2 and 3)");
  }

  auto super = PydanticBool(v, ZeroKey("offload_optimizer/super_offload"), false);
  if (opt != nullptr && opt->is_object() && super.value_or(false) && stage && *stage != 3) {
    ctx.Report("zero-super-offload-stage", ZeroKey("offload_optimizer/super_offload"),
               "offload_optimizer.super_offload is only read by the ZeRO-3 optimizer "
               "(SuperOffloadOptimizer_Stage3); at " + StageText(*stage) +
                   " DeepSpeed ignores it silently",
               "set zero_optimization.stage to 3, or remove super_offload");
  }

  if (opt != nullptr && opt->is_object() && opt_dev == "nvme" && stage &&
      (*stage == 1 || *stage == 2)) {
    ctx.Report("zero-nvme-optimizer-as-cpu", ZeroKey("offload_optimizer/device"),
               "offload_optimizer.device is nvme at " + StageText(*stage) +
                   ": the ZeRO-1/2 optimizer treats every device other than none as CPU offload, "
                   "so optimizer states go to host memory and nvme_path is never used",
               "write \"device\": \"cpu\" (same behaviour), or use stage 3 for NVMe offload "
               "(ZeRO-Infinity)");
  }

  // NVMe swapping needs a folder; only stage 3 swaps (stage 1/2 and offload_param below 3 are
  // reported above).
  if (!stage || *stage == 3) {
    for (const char* section : {"offload_param", "offload_optimizer"}) {
      const Json* sec = v.Get(ZeroKey(section));
      if (sec == nullptr || !sec->is_object() || OffloadDevice(v, section) != "nvme") continue;
      const Json* path = v.Get(ZeroKey(std::string(section) + "/nvme_path"));
      if (path != nullptr && !path->is_null()) continue;
      bool is_param = std::string(section) == "offload_param";
      ctx.Report("zero-nvme-path-missing", ZeroKey(std::string(section) + "/device"),
                 std::string(section) + ".device is nvme but nvme_path is " +
                     (path == nullptr ? "not set" : "null") + ": " +
                     (is_param ? "zero.Init asserts \"\\\"nvme_path\\\" in DeepSpeed Config cannot "
                                 "be None if remote device is nvme\""
                               : "the ZeRO-3 optimizer builds its swap folder with "
                                 "os.path.join(nvme_path, ...) and fails with a TypeError"),
                 "set " + std::string(section) +
                     ".nvme_path to a directory on a local NVMe drive, e.g. \"/local_nvme\"");
    }
  }
}

// fp16/bf16 low-precision master weights (config.py _do_error_check; base_optimizer.py
// _configure_master_weights).
void CheckMasterWeights(RuleContext& ctx, std::optional<int64_t> stage) {
  const ConfigView& v = ctx.view();
  const std::string bf16 = Bf16Section(v);
  const std::string fp16_master_ptr = "/fp16/fp16_master_weights_and_grads";
  const std::string bf16_master_ptr = bf16 + "/bf16_master_weights_and_grads";
  const std::string bf16_states_ptr = bf16 + "/bf16_optimizer_states";
  bool fp16_master = PydanticBool(v, fp16_master_ptr, false).value_or(false);
  bool bf16_master = PydanticBool(v, bf16_master_ptr, false).value_or(false);
  bool bf16_states = PydanticBool(v, bf16_states_ptr, false).value_or(false);
  const bool modern = ctx.version() >= ds_history::kLowPrecisionMaster;

  if (!modern) {
    for (const std::string& p : {bf16_master_ptr, bf16_states_ptr}) {
      if (!v.Has(p)) continue;
      ctx.ReportKey("zero-master-weights-unavailable", p,
                    DottedName(p) + " does not exist in DeepSpeed " + ctx.version().ToString() +
                        ": it arrived in " + ds_history::kLowPrecisionMaster.ToString() +
                        " (PR #7700), and the bf16 section rejects unknown keys (pydantic: extra "
                        "inputs are not permitted)",
                    "remove it, or target DeepSpeed >= " +
                        ds_history::kLowPrecisionMaster.ToString() + " (--deepspeed-version)");
    }
    bf16_master = bf16_states = false;
  }

  if (stage) {
    if (fp16_master && (modern ? *stage == 0 : *stage != 2)) {
      ctx.Report("zero-master-weights-stage", fp16_master_ptr,
                 modern ? "fp16.fp16_master_weights_and_grads needs ZeRO: DeepSpeed asserts "
                          "\"Fp16_master_weights_and_grads is only supported with ZeRO Stage 1, "
                          "2, or 3.\" (the stage is 0)"
                        : "fp16.fp16_master_weights_and_grads needs ZeRO stage 2 in DeepSpeed " +
                              ctx.version().ToString() +
                              ": it asserts \"Fp16_master_weights_and_grads is only supported "
                              "with ZeRO Stage 2 for now.\" (the stage is " +
                              std::to_string(*stage) + ")",
                 modern ? "set zero_optimization.stage to 1, 2 or 3, or remove the flag"
                        : "set zero_optimization.stage to 2, or remove the flag");
    }
    if (bf16_master && *stage == 0) {
      ctx.Report("zero-master-weights-stage", bf16_master_ptr,
                 DottedName(bf16_master_ptr) +
                     " needs ZeRO: DeepSpeed asserts \"Bf16_master_weights_and_grads is only "
                     "supported with ZeRO Stage 1, 2, or 3.\" (the stage is 0)",
                 "set zero_optimization.stage to 1, 2 or 3, or remove the flag");
    }
    if (bf16_states && *stage == 0) {
      ctx.Report("zero-master-weights-stage", bf16_states_ptr,
                 DottedName(bf16_states_ptr) +
                     " needs ZeRO: DeepSpeed asserts \"bf16_optimizer_states is only supported "
                     "with ZeRO Stage 1, 2, or 3.\" (the stage is 0)",
                 "set zero_optimization.stage to 1, 2 or 3, or remove the flag");
    }
  }
  if (bf16_states && !bf16_master) {
    ctx.Report("zero-bf16-states-without-master", bf16_states_ptr,
               DottedName(bf16_states_ptr) +
                   " is true but bf16_master_weights_and_grads is not: DeepSpeed asserts "
                   "\"bf16_optimizer_states requires bf16_master_weights_and_grads to be "
                   "enabled.\"",
               "set " + DottedName(bf16_master_ptr) + " to true as well, or remove "
               "bf16_optimizer_states");
  }

  // The ZeRO optimizers keep low-precision master weights only together with CPU offload and
  // DeepSpeedCPUAdam (unless bf16 optimizer states stay on the GPU).
  if (!stage || *stage == 0) return;
  std::string device = OffloadDevice(v, "offload_optimizer");
  bool offload = device == "cpu" || device == "nvme";
  if (fp16_master && bf16_master) {
    ctx.Report("zero-master-weights-offload", bf16_master_ptr,
               "fp16_master_weights_and_grads and bf16_master_weights_and_grads are both true: "
               "the ZeRO optimizer asserts \"fp16_master_weights_and_gradients and "
               "bf16_master_weights_and_gradients are mutually exclusive.\"",
               "keep the one that matches the enabled precision");
    return;
  }
  const std::string* culprit = nullptr;
  if (fp16_master) culprit = &fp16_master_ptr;
  if (bf16_master && !bf16_states) culprit = &bf16_master_ptr;
  std::string zs = *stage == 3 ? "ZeRO-3" : "ZeRO-" + std::to_string(*stage);
  if (culprit != nullptr && !offload) {
    ctx.Report("zero-master-weights-offload", *culprit,
               DottedName(*culprit) +
                   " keeps master weights in 16 bit while the optimizer states stay fp32, which "
                   "DeepSpeed supports only on the CPU: the " + zs +
                   " optimizer asserts \"Master weights feature requires " + zs +
                   " Offload with DeepSpeedCPUAdam\" (offload_optimizer.device is " + device + ")",
               std::string("add \"offload_optimizer\": {\"device\": \"cpu\"} with an Adam/AdamW "
                           "optimizer") +
                   (bf16_master ? ", or also set bf16_optimizer_states to keep the states on the "
                                  "GPU in bf16"
                                : ""));
    return;
  }
  auto type = v.String("/optimizer/type");
  if (culprit != nullptr && type.present()) {
    std::string t = Lower(type.value);
    if (t != "adam" && t != "adamw") {
      ctx.ReportIf(Condition::kDeepSpeedBuildsOptimizer, "zero-master-weights-offload", type.pointer,
                 DottedName(*culprit) + " with CPU offload needs DeepSpeedCPUAdam, which DeepSpeed "
                 "builds only for optimizer type Adam or AdamW; with \"" + type.value +
                     "\" the " + zs + " optimizer asserts \"Master weights feature requires " + zs +
                     " Offload with DeepSpeedCPUAdam\"",
                 "use \"type\": \"AdamW\" (or Adam), or remove " + DottedName(*culprit));
    }
  }
}

void CheckOptimizerCompat(RuleContext& ctx, std::optional<int64_t> stage) {
  const ConfigView& v = ctx.view();
  if (!stage || *stage == 0) return;

  // Apex AMP (engine.py _do_optimizer_sanity_check); the amp section is dict-parsed.
  if (DictFlag(v, "/amp/enabled")) {
    ctx.Report("zero-amp", "/amp/enabled",
               "Apex AMP is enabled together with " + StageText(*stage) +
                   ": DeepSpeed asserts \"Amp and ZeRO are not currently compatible, please use "
                   "(legacy) fp16 mode which performs similar to amp opt_mode=O2\"",
               "replace the amp section with \"fp16\": {\"enabled\": true} (or bf16), or set "
               "zero_optimization.stage to 0");
  }

  // 1-bit optimizers (engine.py _configure_basic_optimizer); DeepSpeed lower-cases known names.
  auto type = v.String("/optimizer/type");
  if (type.present()) {
    std::string t = Lower(type.value);
    const char* what = t == "onebitadam"    ? "1bit-Adam"
                       : t == "zerooneadam" ? "0/1 Adam"
                       : t == "onebitlamb"  ? "1bit-Lamb"
                                            : nullptr;
    if (what != nullptr) {
      ctx.ReportIf(Condition::kDeepSpeedBuildsOptimizer, "zero-onebit-optimizer", type.pointer,
                 "optimizer " + type.value + " with " + StageText(*stage) +
                     ": DeepSpeed asserts \"" + what + " is not compatible with ZeRO\"",
                 "use ZeRO stage 0 with the 1-bit optimizer, or switch to Adam/AdamW (ZeRO++ "
                 "zero_quantized_gradients also compresses gradient communication)");
    }
  }

  // No optimizer: the engine falls back to DummyOptim (engine.py _configure_zero_optimizer).
  const Json* opt_type = v.Get("/optimizer/type");
  if (opt_type == nullptr || opt_type->is_null()) {
    const std::string& at = ctx.parallel().zero_stage.pointer;
    // The Trainer, Accelerate and Megatron-DeepSpeed always pass an optimizer: nothing to say. A
    // script of its own may or may not pass one (deepspeed.initialize(optimizer=...)): a warning.
    const Consumer consumer = ctx.options().consumer;
    if (consumer == Consumer::kHfTrainer || consumer == Consumer::kAccelerate ||
        consumer == Consumer::kMegatronDeepSpeed) {
      return;
    }
    const Severity severity = Severity::kWarning;
    if (*stage <= 2) {
      ctx.ReportAs(severity, "zero-no-optimizer", at,
                 StageText(*stage) + " without an optimizer section: unless the training script "
                 "passes optimizer= to deepspeed.initialize (the Hugging Face Trainer does), "
                 "DeepSpeed asserts \"zero stage " + std::to_string(*stage) +
                     " requires an optimizer\"",
                 "add \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 1e-4}}, or pass "
                 "a client optimizer");
    } else {
      ctx.ReportAs(severity, "zero-no-optimizer", at,
                 "ZeRO stage 3 without an optimizer section: unless the training script passes "
                 "optimizer= to deepspeed.initialize (the Hugging Face Trainer does), DeepSpeed "
                 "builds a parameter-partitioning engine for inference only, and engine.backward() "
                 "asserts \"must provide optimizer during init in order to use backward\"",
                 "add \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 1e-4}} for "
                 "training, or pass a client optimizer");
    }
  }
}

// Deprecated fields and aliases (config_utils.py DeepSpeedConfigModel; pydantic populate_by_name).
void CheckFieldSpellings(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const Json* zero = v.Get(kZero);
  if (zero == nullptr || !zero->is_object()) return;

  struct Deprecated {
    const char* old_key;
    const char* new_field;
    std::vector<const char*> spellings;  // every key that sets the new field
    const char* fix;
  };
  const std::array<Deprecated, 3> deprecated = {{
      {"cpu_offload", "offload_optimizer", {"offload_optimizer"},
       "remove cpu_offload; \"offload_optimizer\": {\"device\": \"cpu\"} replaces it"},
      {"cpu_offload_param", "offload_param", {"offload_param"},
       "remove cpu_offload_param; \"offload_param\": {\"device\": \"cpu\"} replaces it"},
      {"stage3_gather_fp16_weights_on_model_save", "gather_16bit_weights_on_model_save",
       {"gather_16bit_weights_on_model_save", "stage3_gather_16bit_weights_on_model_save"},
       "remove stage3_gather_fp16_weights_on_model_save; gather_16bit_weights_on_model_save "
       "replaces it"},
  }};
  for (const auto& d : deprecated) {
    if (!GivenInZero(v, d.old_key)) continue;
    for (const char* spelling : d.spellings) {
      if (!GivenInZero(v, spelling)) continue;
      ctx.ReportKey("zero-deprecated-and-new", ZeroKey(d.old_key),
                    std::string("zero_optimization gives the deprecated ") + d.old_key +
                        " and its replacement " + spelling +
                        ": DeepSpeed asserts \"Cannot provide deprecated parameter '" + d.old_key +
                        "' and replacing parameter '" + d.new_field + "' together\"",
                    d.fix);
      break;
    }
  }

  const std::array<std::pair<const char*, const char*>, 9> aliases = {{
      {"prefetch_bucket_size", "stage3_prefetch_bucket_size"},
      {"param_persistence_threshold", "stage3_param_persistence_threshold"},
      {"model_persistence_threshold", "stage3_model_persistence_threshold"},
      {"max_live_parameters", "stage3_max_live_parameters"},
      {"max_reuse_distance", "stage3_max_reuse_distance"},
      {"gather_16bit_weights_on_model_save", "stage3_gather_16bit_weights_on_model_save"},
      {"module_granularity_threshold", "stage3_module_granularity_threshold"},
      {"use_all_reduce_for_fetch_params", "stage3_use_all_reduce_for_fetch_params"},
      {"allgather_sequential", "stage3_allgather_sequential"},
  }};
  for (const auto& [name, alias] : aliases) {
    if (!GivenInZero(v, name) || !GivenInZero(v, alias)) continue;
    ctx.ReportKey("zero-alias-and-name", ZeroKey(name),
                  std::string("zero_optimization gives both ") + name + " and its alias " + alias +
                      ": pydantic takes the value of " + alias + " (" +
                      ShowValue(*v.Get(ZeroKey(alias))) + ") and rejects " + name +
                      " as an extra input (\"Extra inputs are not permitted\"), so DeepSpeed "
                      "refuses to start",
                  std::string("keep one spelling: remove ") + name + " or " + alias);
  }
}

// PipelineEngine.__init__ (runtime/pipe/engine.py, 0.19.6) asserts
// zero_optimization_stage() < ZeroStageEnum.gradients: "ZeRO-2 and ZeRO-3 are incompatible with
// pipeline parallelism". The pipeline stages come from the command line (--pp), not the config.
void CheckPipeline(RuleContext& ctx, std::optional<int64_t> stage) {
  const int64_t pp = ctx.options().pp;
  if (!stage || *stage < 2 || pp <= 1 || ctx.options().pipeline_allows_sharded_zero) return;
  ctx.Report("zero-stage-pipeline", ctx.parallel().zero_stage.present() ? ctx.parallel().zero_stage.pointer : kZero,
             "ZeRO stage " + std::to_string(*stage) + " with " + std::to_string(pp) +
                 " pipeline stages: DeepSpeed's PipelineEngine asserts \"ZeRO-2 and ZeRO-3 are incompatible "
                 "with pipeline parallelism\" when the engine is built",
             "use ZeRO stage 0 or 1 with pipeline parallelism (DeepSpeed partitions optimizer states "
             "over each stage's data-parallel group), or drop the pipeline stages");
}

void CheckMisc(RuleContext& ctx, std::optional<int64_t> stage) {
  const ConfigView& v = ctx.view();
  if (PydanticBool(v, ZeroKey("legacy_stage1"), false).value_or(false) && stage && *stage >= 1) {
    ctx.Report("zero-legacy-stage1", ZeroKey("legacy_stage1"),
               "legacy_stage1 is true: DeepSpeed raises \"The deprecated version of ZeRO Stage 1 "
               "is not supported in deepspeed >= 0.5.9\" when it builds the ZeRO optimizer",
               "remove legacy_stage1 (the current stage 1 implementation replaces it)");
  }
  if (PydanticBool(v, ZeroKey("elastic_checkpoint"), false).value_or(false) && stage &&
      *stage == 3) {
    ctx.Report("zero-elastic-checkpoint-stage3", ZeroKey("elastic_checkpoint"),
               "elastic_checkpoint with ZeRO stage 3: DeepSpeed logs \"ZeRO-3 elastic "
               "checkpointing is deprecated and no longer supported. Use Universal Checkpointing "
               "instead.\" and the flag does nothing",
               "remove elastic_checkpoint; load checkpoints on a different world size with "
               "Universal Checkpointing (\"checkpoint\": {\"load_universal\": true})");
  }

  // reduce_bucket_size 0: zero/config.py accepts it (Field ge=0) in every release ds-plan knows,
  // and the optimizer divides by it when it first reports a bucket (report_ipg_memory_usage:
  // (100 * elem_count) // reduce_bucket_size), in the first backward at stage 1/2
  // (reduce_independent_p_g_buckets_and_remove_grads) and in every one at stage 3
  // (independent_gradient_partition_epilogue); DeepSpeed issue #8260. PR #8266 (after edaa722)
  // rejects it when the config is read.
  // The crash is confirmed from 0.19.1 (issue #8260); older releases are not verified: a warning.
  if (auto bucket = v.Int(ZeroKey("reduce_bucket_size"));
      bucket.present() && bucket.value == 0 && ctx.version() >= ds_release::kReduceBucketPositive) {
    // PR #8266: DeepSpeedZeroConfig.reduce_bucket_size is gt=0, read at every stage.
    ctx.Report("zero-reduce-bucket-zero", bucket.pointer,
               "reduce_bucket_size is 0: DeepSpeed master (PR #8266) rejects it when it reads the config "
               "(DeepSpeedZeroConfig.reduce_bucket_size must be > 0, pydantic \"Input should be greater than 0\"), "
               "at every ZeRO stage; the releases accept it and fail in the first backward instead",
               "give a positive bucket size in elements (the default is 5e8)");
  } else if (bucket.present() && bucket.value == 0 && stage && *stage >= 1) {
    const bool confirmed = ctx.version() >= DeepSpeedVersion{0, 19, 1};
    ctx.ReportAs(confirmed ? Severity::kError : Severity::kWarning, "zero-reduce-bucket-zero", bucket.pointer,
                 "reduce_bucket_size is 0: DeepSpeed " + ctx.version().ToString() +
                     (confirmed ? " accepts it and then raises ZeroDivisionError in the first backward "
                                  "(report_ipg_memory_usage divides by the bucket size); master since PR #8266 "
                                  "rejects it when it reads the config"
                                : " accepts it; from 0.19.1 on the first backward raises ZeroDivisionError "
                                  "(report_ipg_memory_usage), and this release is not verified"),
                 "give a positive bucket size in elements (the default is 5e8)");
  }

  // overlap_comm's dynamic default (zero/config.py overlap_comm_valid: None -> stage == 3).
  if (stage && (*stage == 1 || *stage == 2) && !ctx.parallel().zero_legacy_bool) {
    const Json* oc = v.Get(ZeroKey("overlap_comm"));
    bool unset = oc == nullptr || (oc->is_string() && oc->get_ref<const std::string&>() == "auto");
    bool effective = unset ? false : PydanticBool(v, ZeroKey("overlap_comm"), false).value_or(false);
    if (unset) {
      ctx.Report("zero-overlap-comm-default", ZeroKey("overlap_comm"),
                 "overlap_comm is not set, and its default depends on the stage (true only at "
                 "stage 3): at " + StageText(*stage) +
                     " gradient reduction waits for the backward pass instead of overlapping it",
                 "set \"overlap_comm\": true to overlap reduction with the backward pass (it uses "
                 "more reduce-bucket memory), or false to make the choice explicit");
    } else if (effective && ctx.options().pp > 1) {
      ctx.Report("zero-overlap-comm-default", ZeroKey("overlap_comm"),
                 "overlap_comm is true, but with pipeline parallelism DeepSpeed logs \"Pipeline "
                 "parallelism does not support overlapped communication, will be disabled.\" and "
                 "turns it off",
                 "set \"overlap_comm\": false to match what runs");
    }
  }
}

}  // namespace

RuleSet ZeroRules() {
  RuleSet set;
  set.name = "zero";
  set.rules = {
      {"zero-stage-invalid", Severity::kError, "zero", "zero_optimization.stage outside 0..3",
       "DeepSpeedZeroConfig.stage is a ZeroStageEnum (0 disabled, 1 optimizer states, 2 gradients, "
       "3 weights), so pydantic rejects other integers; DeepSpeedConfig._do_error_check also "
       "asserts \"Maximum supported ZeRO stage is 3\".",
       ""},
      {"zero-legacy-bool", Severity::kWarning, "zero", "zero_optimization written as a boolean",
       "get_zero_config (zero/config.py) still accepts \"zero_optimization\": true/false: true "
       "becomes stage 1 with allgather_bucket_size from the top-level allgather_size (default "
       "5e8), false becomes stage 0. DeepSpeed logs that this format is deprecated.",
       ""},
      {"zero-partial-offload-stage", Severity::kError, "zero",
       "offload_optimizer.ratio < 1 below ZeRO stage 3",
       "The offload_ratio_check validator of DeepSpeedZeroConfig asserts \"Partial offloading only "
       "supported for ZeRO Stage 3.\" whenever an offload_optimizer section has ratio < 1.0 and "
       "the stage is not 3 (whatever the device); pydantic wraps it in a ValidationError.",
       ""},
      {"zero-offload-param-unused", Severity::kWarning, "zero",
       "offload_param below ZeRO stage 3 is silently unused",
       "offload_param is documented as \"Valid only with stage 3\" but nothing rejects it: only "
       "the stage-3 optimizer and zero.Init read it, so at stages 0-2 parameters stay on the GPU "
       "and the memory plan is wrong.",
       ""},
      {"zero-super-offload-stage", Severity::kWarning, "zero",
       "offload_optimizer.super_offload outside ZeRO stage 3",
       "super_offload selects SuperOffloadOptimizer_Stage3 in the engine's stage-3 branch; stages "
       "1 and 2 never read it, and nothing reports that.",
       ""},
      {"zero-nvme-optimizer-as-cpu", Severity::kWarning, "zero",
       "offload_optimizer.device nvme at ZeRO stage 1/2 behaves like cpu",
       "DeepSpeedZeroOptimizer (stage_1_and_2.py) sets cpu_offload for any device other than "
       "\"none\"; only the stage-3 optimizer swaps optimizer states to NVMe. At stage 1/2, nvme "
       "therefore keeps the states in host memory and ignores nvme_path.",
       ""},
      {"zero-nvme-path-missing", Severity::kError, "zero", "NVMe offload without nvme_path",
       "With offload_param.device nvme, zero.Init (partition_parameters.py) asserts that "
       "nvme_path is set; with offload_optimizer.device nvme, the stage-3 optimizer joins "
       "nvme_path into its swap folder and fails on None. Checked at stage 3, the only stage that "
       "swaps to NVMe.",
       ""},
      {"zero-master-weights-unavailable", Severity::kError, "zero",
       "bf16 master-weight keys on a DeepSpeed release that lacks them",
       "bf16.bf16_master_weights_and_grads and bf16.bf16_optimizer_states arrived with PR #7700; "
       "before that the bf16 section (pydantic, unknown keys forbidden) rejects them.",
       "0.18.3 (PR #7700) added both keys."},
      {"zero-master-weights-stage", Severity::kError, "zero",
       "16-bit master weights without the ZeRO stage they need",
       "DeepSpeedConfig._do_error_check asserts that fp16.fp16_master_weights_and_grads, "
       "bf16.bf16_master_weights_and_grads and bf16.bf16_optimizer_states are only used with ZeRO "
       "stage 1, 2 or 3. The check runs whether or not fp16/bf16 is enabled.",
       "Before 0.18.3 (PR #7700) fp16_master_weights_and_grads required exactly stage 2 (\"only "
       "supported with ZeRO Stage 2 for now\"); 0.18.3 allowed stages 1-3 and added the bf16 "
       "flags."},
      {"zero-bf16-states-without-master", Severity::kError, "zero",
       "bf16_optimizer_states without bf16_master_weights_and_grads",
       "DeepSpeedConfig._do_error_check asserts \"bf16_optimizer_states requires "
       "bf16_master_weights_and_grads to be enabled.\"",
       "Added in 0.18.3 (PR #7700)."},
      {"zero-master-weights-offload", Severity::kError, "zero",
       "16-bit master weights without CPU offload and DeepSpeedCPUAdam",
       "ZeRO optimizers (base_optimizer.py _configure_master_weights) reject fp16 and bf16 master "
       "weights together, and keep 16-bit master weights with fp32 optimizer states only with "
       "ZeRO-Offload and DeepSpeedCPUAdam (\"Master weights feature requires ZeRO-N Offload with "
       "DeepSpeedCPUAdam\"). bf16 master weights with bf16_optimizer_states may stay on the GPU. "
       "DeepSpeed builds DeepSpeedCPUAdam for optimizer types Adam and AdamW with CPU offload.",
       ""},
      {"zero-amp", Severity::kError, "zero", "Apex AMP together with ZeRO",
       "engine.py _do_optimizer_sanity_check asserts \"Amp and ZeRO are not currently compatible, "
       "please use (legacy) fp16 mode which performs similar to amp opt_mode=O2\".",
       ""},
      {"zero-onebit-optimizer", Severity::kError, "zero",
       "1-bit Adam, 0/1 Adam or 1-bit LAMB together with ZeRO",
       "engine.py _configure_basic_optimizer asserts that OneBitAdam, ZeroOneAdam and OneBitLamb "
       "(type names are matched case-insensitively) are not used with ZeRO stage >= 1: "
       "\"1bit-Adam is not compatible with ZeRO\" and the like.",
       ""},
      {"zero-deprecated-and-new", Severity::kError, "zero",
       "a deprecated ZeRO key together with its replacement",
       "DeepSpeedConfigModel moves a deprecated field's value to its replacement and asserts "
       "\"Cannot provide deprecated parameter 'X' and replacing parameter 'Y' together\" when both "
       "are given (cpu_offload/offload_optimizer, cpu_offload_param/offload_param, "
       "stage3_gather_fp16_weights_on_model_save/gather_16bit_weights_on_model_save, whose alias "
       "stage3_gather_16bit_weights_on_model_save counts too). The key's presence is what counts, "
       "even with a false or null value.",
       ""},
      {"zero-alias-and-name", Severity::kError, "zero",
       "a ZeRO field given under both its name and its alias",
       "DeepSpeedZeroConfig accepts e.g. prefetch_bucket_size or its alias "
       "stage3_prefetch_bucket_size (populate_by_name). Given both, pydantic reads the alias and "
       "treats the field name as an extra key, which extra=\"forbid\" rejects.",
       ""},
      {"zero-legacy-stage1", Severity::kError, "zero", "legacy_stage1 is true",
       "engine.py _configure_zero_optimizer raises \"The deprecated version of ZeRO Stage 1 is not "
       "supported in deepspeed >= 0.5.9\" when legacy_stage1 is set and ZeRO is enabled.",
       ""},
      {"zero-elastic-checkpoint-stage3", Severity::kWarning, "zero",
       "elastic_checkpoint with ZeRO stage 3",
       "The elastic_checkpoint_deprecated validator logs that ZeRO-3 elastic checkpointing is no "
       "longer supported; Universal Checkpointing replaces it.",
       ""},
      {"zero-no-optimizer", Severity::kWarning, "zero", "ZeRO without an optimizer section",
       "Without an optimizer in the config or passed to deepspeed.initialize, the engine uses "
       "DummyOptim: at stage 1/2 _configure_zero_optimizer asserts \"zero stage N requires an "
       "optimizer\"; at stage 3 it builds an inference-only engine whose backward() asserts. Fine "
       "when the script passes a client optimizer: nothing under --consumer hf-trainer, accelerate or "
       "megatron-deepspeed (they always pass one), a warning otherwise.",
       ""},
      {"zero-stage-pipeline", Severity::kError, "zero", "ZeRO stage 2 or 3 with pipeline stages",
       "PipelineEngine.__init__ (runtime/pipe/engine.py) asserts that the ZeRO stage is below "
       "ZeroStageEnum.gradients: \"ZeRO-2 and ZeRO-3 are incompatible with pipeline "
       "parallelism\". Pipeline stages are not part of the config; ds-plan reads them from --pp.",
       ""},
      {"zero-reduce-bucket-zero", Severity::kError, "zero", "reduce_bucket_size of 0",
       "zero/config.py accepts reduce_bucket_size >= 0, and the ZeRO optimizers divide by it when "
       "they report the first gradient bucket (report_ipg_memory_usage): ZeroDivisionError in the "
       "first backward at stages 1-3 (DeepSpeed issue #8260). PR #8266 (master) makes the field "
       "positive, so master rejects 0 when it reads the config, at every stage.",
       ""},
      {"zero-overlap-comm-default", Severity::kNote, "zero",
       "overlap_comm's stage-dependent default",
       "overlap_comm defaults to None and the overlap_comm_valid validator turns that into "
       "(stage == 3): stages 1 and 2 do not overlap gradient reduction unless asked. With "
       "pipeline parallelism the engine turns overlap_comm off at stages 1/2.",
       ""},
  };
  set.check = [](RuleContext& ctx) {
    CheckStage(ctx);
    auto stage = KnownStage(ctx);
    CheckOffload(ctx, stage);
    CheckMasterWeights(ctx, stage);
    CheckOptimizerCompat(ctx, stage);
    CheckFieldSpellings(ctx);
    CheckMisc(ctx, stage);
    CheckPipeline(ctx, stage);
  };
  return set;
}

}  // namespace dsp
