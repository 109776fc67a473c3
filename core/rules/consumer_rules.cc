// SPDX-License-Identifier: Apache-2.0
// What the launcher (--consumer) does with the config before DeepSpeed sees it: who fills "auto"
// values, which sections it ignores, what it requires. Silent without --consumer.
//   hf-trainer: transformers integrations/deepspeed.py HfTrainerDeepSpeedConfig.trainer_config_process
//     and trainer_config_finalize fill a fixed list, then Accelerate's DeepSpeedPlugin fills its own
//     and raises ValueError on any "auto" left ("`X` not found in kwargs", utils/dataclasses.py fill_match).
//   accelerate: Accelerator._prepare_deepspeed fills its list only (no betas/eps).
//   deepspeed, megatron-deepspeed: nothing fills "auto"; DeepSpeed's pydantic sections drop it
//     (the default applies, runtime/config_utils.py), dict-read keys keep the string.
#include <set>

#include "core/rules/ds_semantics.h"
#include "core/rules/rule_sets.h"
#include "core/util/text.h"

namespace dsp {
namespace {

using namespace ds_semantics;

// Accelerate (utils/dataclasses.py DeepSpeedPlugin.__post_init__ and set_mixed_precision,
// accelerator.py _prepare_deepspeed).
const std::set<std::string>& AccelerateFills() {
  static const std::set<std::string> keys = {
      "/train_micro_batch_size_per_gpu", "/train_batch_size", "/gradient_accumulation_steps", "/gradient_clipping",
      "/zero_optimization/stage", "/zero_optimization/offload_optimizer/device", "/zero_optimization/offload_param/device",
      "/zero_optimization/offload_optimizer/nvme_path", "/zero_optimization/offload_param/nvme_path",
      "/zero_optimization/stage3_gather_16bit_weights_on_model_save", "/fp16/enabled", "/bf16/enabled",
      "/zero_optimization/reduce_bucket_size", "/zero_optimization/stage3_prefetch_bucket_size",
      "/zero_optimization/stage3_param_persistence_threshold", "/optimizer/params/lr", "/optimizer/params/weight_decay",
      "/scheduler/params/warmup_min_lr", "/scheduler/params/warmup_max_lr", "/scheduler/params/warmup_num_steps",
      "/scheduler/params/total_num_steps"};
  return keys;
}

// The Trainer's own list (integrations/deepspeed.py), on top of Accelerate's.
const std::set<std::string>& TrainerFills() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> k = AccelerateFills();
    for (const char* extra : {"/optimizer/params/betas", "/optimizer/params/eps", "/amp/enabled", "/amp/opt_level"}) k.insert(extra);
    return k;
  }();
  return keys;
}

// Sections DeepSpeed validates with pydantic: an "auto" there is dropped and the default applies.
bool InPydanticSection(const std::string& pointer) {
  for (const char* s : {"/zero_optimization/", "/fp16/", "/bf16/", "/bfloat16/", "/compile/", "/tensor_parallel/",
                        "/tensorboard/", "/wandb/", "/csv_monitor/", "/comet/", "/comms_logger/", "/hybrid_engine/"}) {
    if (pointer.starts_with(s)) return true;
  }
  return false;
}

void FindAuto(const Json& v, const std::string& pointer, std::vector<std::string>* out) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) FindAuto(it.value(), PointerJoin(pointer, it.key()), out);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) FindAuto(v[i], PointerJoin(pointer, std::to_string(i)), out);
  } else if (v.is_string() && v.get_ref<const std::string&>() == "auto") {
    out->push_back(pointer);
  }
}

// deepspeed/__init__.py initialize reads the raw dict before DeepSpeedConfig drops "auto":
// `autotp_size = config.get("tensor_parallel", {}).get("autotp_size", 0); if autotp_size and
// autotp_size > 0:` compares a str with an int. Every launcher that does not refuse it first
// (Accelerate, the Trainer: CheckAuto) reaches it, so this holds without --consumer too.
void CheckAutotpSizeAuto(RuleContext& ctx) {
  const Consumer c = ctx.options().consumer;
  if (c == Consumer::kHfTrainer || c == Consumer::kAccelerate) return;
  const Json* v = ctx.view().Get("/tensor_parallel/autotp_size");
  if (v == nullptr || !v->is_string() || v->get_ref<const std::string&>() != "auto") return;
  ctx.Report("auto-unfilled", "/tensor_parallel/autotp_size",
             "tensor_parallel.autotp_size is \"auto\": deepspeed.initialize compares it with 0 before the config "
             "model drops \"auto\" (deepspeed/__init__.py: `autotp_size > 0`) and raises TypeError; no launcher "
             "fills it (Accelerate raises ValueError first)",
             "write the tensor-parallel size, or remove tensor_parallel");
}

void CheckAuto(RuleContext& ctx) {
  Consumer c = ctx.options().consumer;
  std::vector<std::string> autos;
  FindAuto(ctx.view().root(), "", &autos);
  for (const std::string& p : autos) {
    std::string name = DottedName(p);
    if (p == "/tensor_parallel/autotp_size" && c != Consumer::kHfTrainer && c != Consumer::kAccelerate) continue;
    if (c == Consumer::kHfTrainer || c == Consumer::kAccelerate) {
      const auto& fills = c == Consumer::kHfTrainer ? TrainerFills() : AccelerateFills();
      if (fills.contains(p)) continue;
      ctx.Report("auto-unfilled", p,
                 name + " is \"auto\", which " + std::string(c == Consumer::kHfTrainer ? "neither the Trainer nor Accelerate fills" : "Accelerate does not fill") +
                     ": Accelerate raises ValueError(\"`" + name + "` not found in kwargs. Please specify `" + name +
                     "` without `auto` ...\")",
                 "write the value" + std::string(c == Consumer::kAccelerate && (p == "/optimizer/params/betas" || p == "/optimizer/params/eps")
                                                     ? " (the Trainer fills betas and eps; plain Accelerate does not)"
                                                     : ""));
      continue;
    }
    if (c != Consumer::kDeepSpeed && c != Consumer::kMegatronDeepSpeed) continue;
    if (InPydanticSection(p)) {
      ctx.ReportAs(Severity::kWarning, "auto-unfilled", p,
                   name + " is \"auto\" and nothing fills it under --consumer " + std::string(ConsumerName(c)) +
                       ": DeepSpeedConfigModel drops \"auto\" values, so DeepSpeed silently uses the default" +
                       (p == "/fp16/enabled" || p == "/bf16/enabled" ? " (false: the run is not in 16-bit)" : ""),
                   "write the value you want");
      continue;
    }
    if (c == Consumer::kMegatronDeepSpeed && (p.starts_with("/optimizer/") || p.starts_with("/scheduler/"))) continue;
    ctx.Report("auto-unfilled", p,
               name + " is \"auto\" and nothing fills it under --consumer " + std::string(ConsumerName(c)) +
                   ": DeepSpeed reads the string as the value (for a batch size, config.py's `assert train_batch > 0` "
                   "raises TypeError)",
               "write the value; \"auto\" is a Hugging Face Trainer / Accelerate placeholder");
  }
}

void CheckSections(RuleContext& ctx) {
  Consumer c = ctx.options().consumer;
  const ConfigView& v = ctx.view();
  if (c == Consumer::kMegatronDeepSpeed) {
    for (const char* s : {"/optimizer", "/scheduler"}) {
      if (v.Get(s) == nullptr) continue;
      ctx.Report("consumer-section-ignored", s,
                 std::string("the ") + (s + 1) + " section is ignored: " +
                     std::string(WhyNot(s[1] == 'o' ? Condition::kDeepSpeedBuildsOptimizer : Condition::kDeepSpeedBuildsScheduler, c)) +
                     " (megatron/training.py setup_model_and_optimizer)",
                 s[1] == 'o' ? "set the optimizer with Megatron's --optimizer, --lr, --adam-beta1/2, --weight-decay"
                             : "set the schedule with Megatron's --lr-decay-style, --lr-warmup-iters");
    }
  }
  if ((c == Consumer::kHfTrainer || c == Consumer::kAccelerate || c == Consumer::kMegatronDeepSpeed) &&
      v.Get("/activation_checkpointing") != nullptr) {
    ctx.Report("consumer-section-ignored", "/activation_checkpointing",
               "the activation_checkpointing section is not used: " +
                   std::string(WhyNot(Condition::kCheckpointingReadsThisFile, c)),
               c == Consumer::kMegatronDeepSpeed
                   ? "use --deepspeed-activation-checkpointing with --checkpoint-num-layers, --partition-activations, ..."
                   : "use TrainingArguments(gradient_checkpointing=True) or model.gradient_checkpointing_enable()");
  }
  // accelerate utils/dataclasses.py DeepSpeedPlugin.__post_init__ (the Trainer goes through it too).
  if ((c == Consumer::kHfTrainer || c == Consumer::kAccelerate) && v.Get("/zero_optimization") == nullptr) {
    ctx.Report("consumer-zero-section-required", "",
               "no zero_optimization section: Accelerate's DeepSpeedPlugin raises ValueError(\"Please specify the ZeRO "
               "optimization config in the DeepSpeed config.\")",
               "add \"zero_optimization\": {\"stage\": 0} (or the stage you want)");
  }
}

}  // namespace

RuleSet ConsumerRules() {
  RuleSet set;
  set.name = "consumer";
  set.rules = {
      {"auto-unfilled", Severity::kError, "consumer", "an \"auto\" value the launcher does not fill",
       "Only with --consumer. hf-trainer: the Trainer fills the batch keys, gradient_clipping, "
       "optimizer lr/betas/eps/weight_decay, the warmup scheduler's four keys, fp16/bf16/amp "
       "enabled, amp opt_level and three ZeRO bucket sizes from the model's hidden size; Accelerate "
       "adds the ZeRO stage, offload devices and nvme paths and stage3_gather_16bit_weights_on_model_save, "
       "and raises ValueError on any other \"auto\". accelerate: the same without betas, eps and amp. "
       "deepspeed and megatron-deepspeed: nothing fills \"auto\"; DeepSpeed's pydantic sections drop it "
       "and use the default (a warning: fp16.enabled \"auto\" means fp16 off), other keys keep the "
       "string and fail (an error).",
       ""},
      {"consumer-section-ignored", Severity::kNote, "consumer", "a section the launcher never hands to DeepSpeed",
       "megatron-deepspeed passes its own optimizer and lr_scheduler, so the optimizer and scheduler "
       "sections are ignored; the Trainer and Accelerate never call deepspeed.checkpointing.configure, "
       "and Megatron-DeepSpeed passes every checkpointing setting from its command line, so "
       "activation_checkpointing is unused.",
       ""},
      {"consumer-zero-section-required", Severity::kError, "consumer",
       "no zero_optimization section under the Trainer or Accelerate",
       "DeepSpeedPlugin.__post_init__ (accelerate/utils/dataclasses.py) raises \"Please specify the "
       "ZeRO optimization config in the DeepSpeed config.\" when the section is missing.",
       ""},
  };
  set.check = [](RuleContext& ctx) {
    CheckAutotpSizeAuto(ctx);
    if (ctx.options().consumer == Consumer::kUnspecified) return;
    CheckAuto(ctx);
    CheckSections(ctx);
  };
  return set;
}

}  // namespace dsp
