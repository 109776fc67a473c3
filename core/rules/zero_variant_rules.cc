// SPDX-License-Identifier: Apache-2.0
// ZeRO's variants that DeepSpeed checks only when it builds them, not when it reads the config:
// ZenFlow (runtime/zenflow: zenflow_stage_1_and_2.py ZenFlowZeroOptimizer, engine.py
// configure_zenflow), ZeRO++'s hierarchical partitioning (utils/groups.py
// _create_zero_param_parallel_group) and MiCS (runtime/zero/mics_utils.py _generate_mics_config).
#include <string>

#include "core/rules/ds_semantics.h"
#include "core/rules/rule_context.h"
#include "core/rules/rule_sets.h"

namespace dsp {
namespace {

using namespace ds_semantics;

constexpr const char* kZenFlow = "/zero_optimization/zenflow";

std::string ZenKey(const std::string& key) { return std::string(kZenFlow) + "/" + key; }

// ZenFlowConfig's bounds (runtime/zenflow/zenflow_config.py), checked by pydantic whenever the
// section is read, at any stage. Master (PR #8274) narrowed topk_ratio from [0, 1] to (0, 1) and
// requires a numeric update_interval >= 1; the releases take both and fail later or never.
void CheckZenFlowBounds(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const Json* section = v.Get(kZenFlow);
  if (section == nullptr || !section->is_object()) return;
  const bool master = ctx.version() >= ds_release::kZenFlowStrictBounds;
  const Json* ratio = v.Get(ZenKey("topk_ratio"));
  if (ratio != nullptr && (ratio->is_number() || ratio->is_boolean())) {
    const double r = ratio->is_boolean() ? double(ratio->get<bool>()) : ratio->get<double>();
    if (r == 0.0 || r == 1.0) {
      ctx.ReportAs(master ? Severity::kError : Severity::kNote, "zero-zenflow-bounds", ZenKey("topk_ratio"),
                   "zenflow.topk_ratio is " + ShowValue(*ratio) +
                       (master ? ": DeepSpeed master (PR #8274) requires 0 < topk_ratio < 1 and pydantic rejects the "
                                 "config when it reads it (\"Input should be " +
                                     std::string(r == 0.0 ? "greater than 0" : "less than 1") + "\")"
                               : ": DeepSpeed " + ctx.version().ToString() +
                                     " accepts it (ge=0, le=1), but master (PR #8274) rejects it: " +
                                     (r == 0.0 ? "no gradient column is ever selected" : "every column is selected, which is no selection")),
                   "use a ratio strictly between 0 and 1 (the default is 0.1)");
    }
  }
  const Json* update = v.Get(ZenKey("update_interval"));
  if (update != nullptr && ((update->is_number_integer() && !update->is_number_unsigned()) || update->is_boolean())) {
    const int64_t n = update->is_boolean() ? int64_t(update->get<bool>()) : update->get<int64_t>();
    if (n < 1) {
      ctx.ReportAs(master ? Severity::kError : Severity::kWarning, "zero-zenflow-bounds", ZenKey("update_interval"),
                   "zenflow.update_interval is " + ShowValue(*update) +
                       (master ? ": DeepSpeed master (PR #8274) requires an update_interval of at least 1 and rejects "
                                 "the config when it reads it"
                               : ": DeepSpeed " + ctx.version().ToString() +
                                     " accepts it, and ZenFlow then sets gradient_accumulation_steps to it "
                                     "(configure_zenflow); master (PR #8274) rejects it when it reads the config"),
                   "use \"auto\" or a number of steps >= 1");
    }
  }
}

// ZenFlow runs when zero_optimization.zenflow is an object (DeepSpeedZeroConfig.zenflow:
// Optional[ZenFlowConfig] = None); at stages 1 and 2 the engine builds ZenFlowZeroOptimizer.
void CheckZenFlow(RuleContext& ctx, int64_t stage) {
  const ConfigView& v = ctx.view();
  const Json* section = v.Get(kZenFlow);
  if (section == nullptr || !section->is_object() || (stage != 1 && stage != 2)) return;
  // _configure_zenflow: `if not self.cpu_offload: raise ValueError("Zenflow must be used with cpu offload")`.
  if (OffloadDevice(v, "offload_optimizer") != "cpu") {
    ctx.Report("zero-zenflow-cpu-offload", kZenFlow,
               "ZenFlow at ZeRO stage " + std::to_string(stage) +
                   " without optimizer offload to the CPU: zenflow_stage_1_and_2.py _configure_zenflow raises "
                   "ValueError(\"Zenflow must be used with cpu offload\")",
               "add \"offload_optimizer\": {\"device\": \"cpu\"} to zero_optimization, or remove zenflow");
  }
  // ZenFlowZeroOptimizer.__init__ asserts overlap_comm for the selective optimizer's offload
  // (overlap_comm defaults to false at stages 1 and 2).
  if (PydanticBool(v, ZenKey("offload"), false).value_or(false) &&
      !PydanticBool(v, "/zero_optimization/overlap_comm", false).value_or(false)) {
    ctx.Report("zero-zenflow-offload-overlap", ZenKey("offload"),
               "zenflow.offload is true but overlap_comm is not: ZenFlowZeroOptimizer asserts \"offload selective "
               "optimizer should be used with overlap_comm\" (an assert: python -O skips it)",
               "set zero_optimization.overlap_comm to true");
  }
  // _configure_zenflow: the "auto" strategy (the default) overwrites select_interval and raises a
  // Warning (an exception) when one was given as an integer; any other strategy needs a number.
  const std::string strategy = v.String(ZenKey("select_strategy")).or_default("auto");
  const Json* interval = v.Get(ZenKey("select_interval"));
  if (strategy == "auto" && interval != nullptr && interval->is_number_integer()) {
    ctx.Report("zero-zenflow-select-interval", ZenKey("select_interval"),
               "select_interval is an integer with select_strategy \"auto\": _configure_zenflow raises "
               "Warning(\"If use auto select strategy, select_interval will be set to 1 ...\"), an exception "
               "that stops deepspeed.initialize",
               "drop select_interval, or pick select_strategy \"step\" or \"epoch\"");
  } else if (strategy != "auto" && (interval == nullptr || interval->is_string())) {
    ctx.Report("zero-zenflow-select-interval", interval != nullptr ? ZenKey("select_interval") : ZenKey("select_strategy"),
               "select_strategy \"" + strategy + "\" with select_interval \"auto\" (its default): _configure_zenflow "
               "raises ValueError(\"If don't use auto select strategy, select_interval must be a number.\")",
               "give select_interval as an integer");
  }
  // configure_zenflow (zenflow/engine.py): "Select interval must be greater or equal to update interval".
  auto select = v.Int(ZenKey("select_interval"));
  auto update = v.Int(ZenKey("update_interval"));
  if (strategy != "auto" && select.present() && update.present() && select.value < update.value) {
    ctx.Report("zero-zenflow-select-interval", select.pointer,
               "select_interval " + std::to_string(select.value) + " is below update_interval " +
                   std::to_string(update.value) +
                   ": configure_zenflow raises ValueError(\"Select interval must be greater or equal to update "
                   "interval\")",
               "make select_interval at least update_interval");
  }
  if (update.present() && update.value >= 1) {
    // configure_zenflow sets gradient_accumulation_steps = update_interval after the batch check.
    ctx.Report("zero-zenflow-accumulation", update.pointer,
               "ZenFlow sets gradient_accumulation_steps to update_interval (" + std::to_string(update.value) +
                   ") after DeepSpeed checked the batch: each optimizer step accumulates that many micro-batches",
               "");
  }
}

// ZeRO++ hpZ: the secondary partition group has min(hpz, world) ranks and must divide the world
// (utils/groups.py _create_zero_param_parallel_group: _ensure_divisibility asserts).
void CheckHpz(RuleContext& ctx, int64_t stage) {
  auto hpz = ctx.view().Int("/zero_optimization/zero_hpz_partition_size");
  auto world = ctx.world();
  if (stage != 3 || !hpz.present() || hpz.value <= 1 || !world) return;
  if (hpz.value > *world) {
    ctx.Report("zero-hpz-world", hpz.pointer,
               "zero_hpz_partition_size " + std::to_string(hpz.value) + " is above the world size " +
                   std::to_string(*world) + ": DeepSpeed clamps it to " + std::to_string(*world) +
                   " (one secondary partition over every rank)",
               "");
  } else if (*world % hpz.value != 0) {
    ctx.ReportAs(Severity::kError, "zero-hpz-world", hpz.pointer,
                 "zero_hpz_partition_size " + std::to_string(hpz.value) + " does not divide the world size " +
                     std::to_string(*world) + ": _create_zero_param_parallel_group asserts the divisibility "
                     "(an assert: python -O skips it and the groups come out wrong)",
                 "use a divisor of the world size, usually the GPUs of one node");
  }
}

// MiCS: shards of mics_shard_size ranks tile each pipeline stage's ranks, and the hierarchical
// all-gather needs a shard that spans nodes (mics_utils.py _generate_mics_config and
// create_mics_comm_groups).
void CheckMics(RuleContext& ctx, int64_t stage) {
  const ConfigView& v = ctx.view();
  auto shard = v.Int("/zero_optimization/mics_shard_size");
  auto world = ctx.world();
  if (stage != 3 || !shard.present() || shard.value <= 0 || !world) return;
  const int64_t ranks = *world / std::max<int64_t>(ctx.options().pp, 1);
  if (ranks % shard.value != 0) {
    ctx.Report("zero-mics-world", shard.pointer,
               "mics_shard_size " + std::to_string(shard.value) + " does not divide the " + std::to_string(ranks) +
                   " ranks of a pipeline stage: _generate_mics_config asserts it",
               "use a divisor of world size / pipeline stages");
    return;
  }
  const auto gpn = ctx.options().gpus_per_node;
  if (gpn && *gpn > 0 && PydanticBool(v, "/zero_optimization/mics_hierarchical_params_gather", false).value_or(false) &&
      shard.value / *gpn <= 1) {
    ctx.Report("zero-mics-world", "/zero_optimization/mics_hierarchical_params_gather",
               "mics_hierarchical_params_gather with shards of " + std::to_string(shard.value) + " ranks on nodes of " +
                   std::to_string(*gpn) + " GPUs: the hierarchical all-gather asserts that a shard spans more than "
                   "one node",
               "turn mics_hierarchical_params_gather off, or make mics_shard_size a multiple of the node size above it");
  }
}

// ZeRO-Offload with an optimizer the script passes: engine.py _configure_optimizer raises
// ZeRORuntimeException("You are using ZeRO-Offload with a client provided optimizer ...") unless it
// is DeepSpeedCPUAdam or DeepSpeedCPULion or zero_force_ds_cpu_optimizer is false
// (zero_use_cpu_optimizer: offload_optimizer.device cpu or nvme). Which optimizer arrives depends on
// the launcher: Megatron-DeepSpeed's own (DeepSpeedCPUAdam only with --cpu-optimizer) whatever the
// section; a script's own without the section. The Trainer (which prepares through Accelerate) and
// Accelerate never reach the exception: Accelerator._prepare_deepspeed (accelerate/accelerator.py)
// replaces a client optimizer with DeepSpeedCPUAdam(param_groups, lr, weight_decay) whenever
// offload_optimizer.device is not "none" and zero_force_ds_cpu_optimizer is true, so the script's
// choice of optimizer is silently replaced by CPU Adam (a note).
void CheckOffloadClientOptimizer(RuleContext& ctx, int64_t stage) {
  const ConfigView& v = ctx.view();
  const std::string device = OffloadDevice(v, "offload_optimizer");
  if (stage < 1 || (device != "cpu" && device != "nvme")) return;
  if (!PydanticBool(v, "/zero_force_ds_cpu_optimizer", true).value_or(true)) return;
  const Consumer c = ctx.options().consumer;
  const bool section = v.Get("/optimizer") != nullptr;
  if (section && c != Consumer::kMegatronDeepSpeed) return;  // DeepSpeed builds DeepSpeedCPUAdam itself
  std::string who;
  Severity severity = Severity::kWarning;
  switch (c) {
    case Consumer::kHfTrainer:
    case Consumer::kAccelerate:
      ctx.ReportAs(Severity::kNote, "zero-offload-client-optimizer", "/zero_optimization/offload_optimizer/device",
                   std::string("ZeRO-Offload of the optimizer to ") + device + " without an optimizer section: " +
                       (c == Consumer::kHfTrainer ? "the Trainer builds its optimizer (create_optimizer, AdamW unless "
                                                    "--optim says otherwise) and prepares it through Accelerate, whose"
                                                  : "Accelerate's") +
                       " Accelerator._prepare_deepspeed replaces it with DeepSpeedCPUAdam (keeping lr and weight_decay), "
                       "so DeepSpeed accepts it, and whatever optimizer the script chose trains as CPU Adam",
                   "to train another optimizer with offload, set \"zero_force_ds_cpu_optimizer\": false (slow on the CPU)");
      return;
    case Consumer::kMegatronDeepSpeed:
      who = "Megatron-DeepSpeed passes its own optimizer (DeepSpeedCPUAdam only with --cpu-optimizer)";
      break;
    case Consumer::kDeepSpeed:
      who = "the script must pass optimizer= (no optimizer section), and only DeepSpeedCPUAdam or DeepSpeedCPULion pass";
      break;
    case Consumer::kUnspecified:
      who = "whoever launches passes the optimizer (no optimizer section): a script's own torch optimizer fails, "
            "while the Trainer and Accelerate swap theirs for DeepSpeedCPUAdam first; pass --consumer to check it "
            "for your launcher";
      break;
  }
  ctx.ReportAs(severity, "zero-offload-client-optimizer", "/zero_optimization/offload_optimizer/device",
               "ZeRO-Offload of the optimizer to " + device + " with a client optimizer: " + who +
                   ", and engine.py raises ZeRORuntimeException(\"You are using ZeRO-Offload with a client provided "
                   "optimizer ...\") for anything but DeepSpeedCPUAdam or DeepSpeedCPULion",
               "add an optimizer section (DeepSpeed then builds DeepSpeedCPUAdam), pass DeepSpeedCPUAdam, or set "
               "\"zero_force_ds_cpu_optimizer\": false");
}

}  // namespace

RuleSet ZeroVariantRules() {
  RuleSet set;
  set.name = "zero-variants";
  set.rules = {
      {"zero-zenflow-cpu-offload", Severity::kError, "zero", "ZenFlow without CPU optimizer offload",
       "zenflow_stage_1_and_2.py ZenFlowZeroOptimizer._configure_zenflow raises ValueError(\"Zenflow must be used "
       "with cpu offload\") when the optimizer is not offloaded to the CPU (ZeRO stages 1 and 2).",
       ""},
      {"zero-zenflow-offload-overlap", Severity::kError, "zero", "zenflow.offload without overlap_comm",
       "ZenFlowZeroOptimizer.__init__ asserts overlap_comm when zenflow.offload is true: \"offload selective "
       "optimizer should be used with overlap_comm\".",
       ""},
      {"zero-zenflow-select-interval", Severity::kError, "zero", "ZenFlow's select interval against its strategy",
       "_configure_zenflow: with select_strategy \"auto\" an integer select_interval raises Warning (an "
       "exception); with \"step\" or \"epoch\" a string one raises ValueError; configure_zenflow (zenflow/engine.py) "
       "raises ValueError when select_interval is below update_interval.",
       ""},
      {"zero-zenflow-accumulation", Severity::kNote, "zero", "ZenFlow overwrites gradient_accumulation_steps",
       "configure_zenflow (zenflow/engine.py) sets the engine's gradient_accumulation_steps to update_interval "
       "after DeepSpeedConfig checked the batch triple.",
       ""},
      {"zero-hpz-world", Severity::kNote, "zero", "zero_hpz_partition_size against the world size",
       "utils/groups.py _create_zero_param_parallel_group takes min(zero_hpz_partition_size, world) ranks per "
       "secondary group and asserts that it divides the world size (_ensure_divisibility).",
       ""},
      {"zero-offload-client-optimizer", Severity::kError, "zero", "ZeRO-Offload with a client optimizer",
       "engine.py _configure_optimizer: with offload_optimizer on cpu or nvme (zero_use_cpu_optimizer) a client "
       "optimizer that is not DeepSpeedCPUAdam or DeepSpeedCPULion raises ZeRORuntimeException unless "
       "zero_force_ds_cpu_optimizer is false. Launcher-dependent: Accelerate (and the Trainer, which prepares "
       "through it) replaces a client optimizer with DeepSpeedCPUAdam first (Accelerator._prepare_deepspeed), a "
       "note that the script's optimizer is replaced; Megatron-DeepSpeed and scripts without an optimizer section "
       "reach the exception unless they pass DeepSpeedCPUAdam (a warning: it depends on the script).",
       ""},
      {"zero-zenflow-bounds", Severity::kError, "zero", "zenflow.topk_ratio or update_interval out of range",
       "runtime/zenflow/zenflow_config.py ZenFlowConfig: master (PR #8274) declares topk_ratio with gt=0 and lt=1 "
       "and requires an update_interval of at least 1, so pydantic rejects 0 or 1 and an interval below 1 when "
       "it reads the config (at any ZeRO stage). Releases up to 0.19.6 accept both bounds (a note) and an "
       "interval below 1 (a warning: ZenFlow sets gradient_accumulation_steps to it).",
       "master (PR #8274) made them errors."},
      {"zero-mics-world", Severity::kError, "zero", "mics_shard_size against the world and the nodes",
       "runtime/zero/mics_utils.py _generate_mics_config asserts that mics_shard_size divides the ranks of a "
       "pipeline stage; the hierarchical all-gather asserts that a shard spans more than one node.",
       ""},
  };
  set.check = [](RuleContext& ctx) {
    CheckZenFlowBounds(ctx);
    const auto stage = EffectiveZeroStage(ctx);
    if (!stage) return;
    CheckZenFlow(ctx, *stage);
    CheckHpz(ctx, *stage);
    CheckMics(ctx, *stage);
    CheckOffloadClientOptimizer(ctx, *stage);
  };
  return set;
}

}  // namespace dsp
