// SPDX-License-Identifier: Apache-2.0
// Activation checkpointing : the `activation_checkpointing` section as
// deepspeed.checkpointing reads it (runtime/activation_checkpointing/config.py, checkpointing.py).
// The section is dict-parsed without validation, and it takes effect only when the training code
// calls deepspeed.checkpointing.configure(mpu, deepspeed_config=...) (Megatron-DeepSpeed does; the
// Hugging Face Trainer uses torch's checkpointing instead). configure() makes the assertions below.
// The misspelling "partitioned_activations" (which DeepSpeed's own format string uses) is an
// unknown key and gets a "did you mean" from the structure check.
#include <algorithm>
#include <optional>
#include <string>

#include "core/model/model_spec.h"
#include "core/rules/ds_semantics.h"
#include "core/rules/rule_context.h"
#include "core/rules/rule_sets.h"

namespace dsp {
namespace {

using namespace ds_semantics;

constexpr const char* kCheckpointingSection = "/activation_checkpointing";

std::string CheckpointingKey(const char* key) { return std::string(kCheckpointingSection) + "/" + key; }

// Values are read with get_scalar_param and used with Python truthiness: "false" is true.
void CheckFlagTypes(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  for (const char* key : {"partition_activations", "contiguous_memory_optimization",
                          "cpu_checkpointing", "synchronize_checkpoint_boundary", "profile"}) {
    const Json* value = v.Get(CheckpointingKey(key));
    if (value == nullptr || !value->is_string()) continue;
    // What the string says, as a reader would take it ("auto" says nothing).
    std::optional<bool> parsed;
    if (value->get_ref<const std::string&>() != "auto") parsed = PydanticBool(v, CheckpointingKey(key), false);
    bool inverted = parsed.has_value() && !*parsed && PyTruthy(*value);
    ctx.ReportAs(inverted ? Severity::kError : Severity::kWarning, "ckpt-flag-not-bool", CheckpointingKey(key),
                 std::string("activation_checkpointing.") + key + " is the string " +
                     ShowValue(*value) + ": DeepSpeed does not validate this section and tests the "
                     "value's truthiness, so any non-empty string counts as true" +
                     (inverted ? ", the opposite of what it says" : ""),
                 std::string("write a JSON boolean: \"") + key + "\": " +
                     (parsed.value_or(PyTruthy(*value)) ? "true" : "false"));
  }
}

void CheckContiguous(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  if (!DictFlag(v, CheckpointingKey("contiguous_memory_optimization"))) return;
  if (!DictFlag(v, CheckpointingKey("partition_activations"))) {
    ctx.Report("ckpt-contiguous-without-partition", CheckpointingKey("contiguous_memory_optimization"),
               "contiguous_memory_optimization is on but partition_activations is not: "
               "deepspeed.checkpointing.configure() asserts \"Contiguous Checkpointing is only "
               "available with partitioned activations\"",
               "set \"partition_activations\": true, or turn contiguous_memory_optimization off");
  }
  const Json* count = v.Get(CheckpointingKey("number_checkpoints"));
  if (count == nullptr || count->is_null()) {
    ctx.ReportIf(Condition::kCheckpointingReadsThisFile, "ckpt-contiguous-without-count", CheckpointingKey("contiguous_memory_optimization"),
               std::string("contiguous_memory_optimization is on but number_checkpoints is ") +
                   (count == nullptr ? "not set" : "null") +
                   ": deepspeed.checkpointing.configure() asserts \"Must specify the number of "
                   "layers with contiguous memory checkpointing\" (the count sizes the buffer)",
               "set \"number_checkpoints\" to the number of checkpointed layers, e.g. the model's "
               "num_hidden_layers");
  }
}

// The contiguous buffers hold number_checkpoints inputs and reset only in a backward
// (checkpointing.py partition_activations indexes contiguous_data_buffers[i][data_offsets[i]];
// CheckpointFunction.backward clears them): with every layer checkpointed, the first forward past
// that count raises IndexError. A warning: the training script picks which layers it checkpoints
// and may pass num_checkpoints to configure() itself.
void CheckContiguousCount(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const ModelSpec* model = ctx.options().model;
  if (model == nullptr || model->num_hidden_layers <= 0) return;
  if (!DictFlag(v, CheckpointingKey("contiguous_memory_optimization")) || !DictFlag(v, CheckpointingKey("partition_activations"))) return;
  Setting<double> count = v.Number(CheckpointingKey("number_checkpoints"));
  if (!count.present() || count.value < 1) return;
  const int64_t pp = std::max<int64_t>(ctx.options().pp, 1);
  const int64_t per_stage = (model->num_hidden_layers + pp - 1) / pp;
  // 1F1B: the first stage runs min(pp, accumulation steps) forwards before its first backward.
  int64_t in_flight = 1;
  if (pp > 1) {
    Setting<int64_t> gas = v.IntNullUnset("/gradient_accumulation_steps");
    in_flight = gas.present() && gas.value >= 1 ? std::min(pp, gas.value) : pp;
  }
  const int64_t needed = per_stage * in_flight;
  if (static_cast<double>(needed) <= count.value) return;
  ctx.Report("ckpt-contiguous-too-few", CheckpointingKey("number_checkpoints"),
             "number_checkpoints is " + ShowValue(*v.Get(CheckpointingKey("number_checkpoints"))) + " but " +
                 std::to_string(needed) + " layer inputs are checkpointed before the first backward (" +
                 std::to_string(per_stage) + " layers per pipeline stage" +
                 (in_flight > 1 ? " x " + std::to_string(in_flight) + " micro-batches in flight" : std::string()) +
                 "): with every layer checkpointed, partition_activations indexes past its " +
                 "contiguous buffers and raises IndexError",
             "set \"number_checkpoints\": " + std::to_string(needed) +
                 " (or checkpoint fewer layers and pass num_checkpoints to deepspeed.checkpointing.configure)");
}

void CheckCpuCheckpointing(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  if (!DictFlag(v, CheckpointingKey("cpu_checkpointing")) || DictFlag(v, CheckpointingKey("partition_activations"))) return;
  bool async = ctx.version() >= ds_history::kAsyncCpuCheckpointing;
  ctx.Report("ckpt-cpu-without-partition", CheckpointingKey("cpu_checkpointing"),
             std::string("cpu_checkpointing without partition_activations: DeepSpeed accepts it "
                         "(the configure() docstring saying it \"only works with "
                         "partition_activation\" is out of date) and offloads the whole, "
                         "unpartitioned checkpoint inputs to CPU") +
                 (async ? " on a side stream that overlaps the copy with compute"
                        : " with blocking copies"),
             "fine as is; add \"partition_activations\": true to offload only each rank's "
             "model-parallel slice");
}

}  // namespace

RuleSet CheckpointingRules() {
  RuleSet set;
  set.name = "activation_checkpointing";
  set.rules = {
      {"ckpt-contiguous-without-partition", Severity::kError, "activation_checkpointing",
       "contiguous_memory_optimization without partition_activations",
       "deepspeed.checkpointing.configure() asserts \"Contiguous Checkpointing is only available "
       "with partitioned activations\" when the config turns on contiguous_memory_optimization "
       "without partition_activations.",
       ""},
      {"ckpt-contiguous-without-count", Severity::kError, "activation_checkpointing",
       "contiguous_memory_optimization without number_checkpoints",
       "configure() asserts \"Must specify the number of layers with contiguous memory "
       "checkpointing\" (runtime/activation_checkpointing/checkpointing.py, 0.19.6): the "
       "contiguous buffers are sized as numel x number_checkpoints. Only reached when the script "
       "calls deepspeed.checkpointing.configure(mpu, deepspeed_config=...) without "
       "num_checkpoints; Megatron-DeepSpeed and GPT-NeoX pass num_checkpoints, the Hugging Face "
       "Trainer and Accelerate never call configure. A warning without --consumer.",
       ""},
      {"ckpt-contiguous-too-few", Severity::kWarning, "activation_checkpointing",
       "number_checkpoints below the layers checkpointed before a backward",
       "partition_activations copies each checkpointed input into contiguous_data_buffers, a list "
       "of number_checkpoints buffers indexed by a counter that only a backward resets: the "
       "(number_checkpoints + 1)-th checkpoint of a forward raises IndexError. Counted with "
       "--model: the layers of a pipeline stage, times the micro-batches 1F1B runs before the "
       "first backward.",
       ""},
      {"ckpt-cpu-without-partition", Severity::kNote, "activation_checkpointing",
       "cpu_checkpointing without partition_activations",
       "Accepted: without partitioning, CheckpointFunction copies the full checkpoint inputs to "
       "CPU (get_cpu_activations_for_backward; asynchronously through the shared offload engine "
       "from 0.19.6). With partition_activations only each model-parallel rank's slice moves.",
       "0.19.6 (PR #8282) made the non-partitioned offload asynchronous (pinned side stream)."},
      {"ckpt-flag-not-bool", Severity::kWarning, "activation_checkpointing",
       "an activation_checkpointing flag written as a string",
       "The section is read with get_scalar_param and the flags are used as Python truth values, "
       "so \"false\" or \"0\" (non-empty strings) switch a feature on. An error when the string "
       "says false, a warning otherwise.",
       ""},
  };
  set.check = [](RuleContext& ctx) {
    const Json* section = ctx.view().Get(kCheckpointingSection);
    if (section == nullptr || !section->is_object()) return;
    CheckFlagTypes(ctx);
    CheckContiguous(ctx);
    CheckContiguousCount(ctx);
    CheckCpuCheckpointing(ctx);
  };
  return set;
}

}  // namespace dsp
