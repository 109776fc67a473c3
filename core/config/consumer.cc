// SPDX-License-Identifier: Apache-2.0
#include "core/config/consumer.h"

namespace dsp {

std::optional<Consumer> ParseConsumer(std::string_view name) {
  if (name == "deepspeed") return Consumer::kDeepSpeed;
  if (name == "hf-trainer") return Consumer::kHfTrainer;
  if (name == "accelerate") return Consumer::kAccelerate;
  if (name == "megatron-deepspeed") return Consumer::kMegatronDeepSpeed;
  return std::nullopt;
}

std::string_view ConsumerName(Consumer consumer) {
  switch (consumer) {
    case Consumer::kUnspecified: return "unspecified";
    case Consumer::kDeepSpeed: return "deepspeed";
    case Consumer::kHfTrainer: return "hf-trainer";
    case Consumer::kAccelerate: return "accelerate";
    case Consumer::kMegatronDeepSpeed: return "megatron-deepspeed";
  }
  return "unspecified";
}

std::string_view ConsumerNames() { return "deepspeed, hf-trainer, accelerate or megatron-deepspeed"; }

std::optional<bool> Holds(Condition condition, Consumer consumer) {
  if (consumer == Consumer::kUnspecified) return std::nullopt;
  const bool megatron = consumer == Consumer::kMegatronDeepSpeed;
  switch (condition) {
    // transformers integrations/deepspeed.py deepspeed_optim_sched: an optimizer (scheduler)
    // section means DummyOptim (DummyScheduler), i.e. DeepSpeed builds it; accelerate's
    // _prepare_deepspeed requires DummyOptim when the config has the section. Megatron-DeepSpeed's
    // setup_model_and_optimizer passes optimizer= and lr_scheduler= to deepspeed.initialize.
    case Condition::kDeepSpeedBuildsOptimizer:
    case Condition::kDeepSpeedBuildsScheduler:
      return !megatron;
    // Only a script calling DeepSpeed directly configures checkpointing from this file: the
    // Trainer and Accelerate never call deepspeed.checkpointing.configure, and Megatron-DeepSpeed
    // (megatron/initialize.py) passes num_checkpoints and every flag explicitly.
    case Condition::kCheckpointingReadsThisFile:
      return consumer == Consumer::kDeepSpeed;
    // transformers fill_match and accelerate DeepSpeedPlugin.fill_match replace "auto" values and
    // never add a missing key; Megatron-DeepSpeed passes the dict it loaded.
    case Condition::kBatchKeysAsWritten:
      return true;
    // HfDeepSpeedConfig (used by the Trainer and by Accelerate's DeepSpeedPlugin) and
    // Megatron-DeepSpeed's _create_ds_config_dict read the file with json.load and pass a dict.
    case Condition::kStrictJsonLoader:
      return consumer != Consumer::kDeepSpeed;
  }
  return std::nullopt;
}

std::string_view ConditionText(Condition condition) {
  switch (condition) {
    case Condition::kDeepSpeedBuildsOptimizer:
      return "when DeepSpeed builds the optimizer from this section (no optimizer passed to deepspeed.initialize)";
    case Condition::kDeepSpeedBuildsScheduler:
      return "when DeepSpeed builds the scheduler from this section (no lr_scheduler passed to deepspeed.initialize)";
    case Condition::kCheckpointingReadsThisFile:
      return "when the script calls deepspeed.checkpointing.configure(mpu, deepspeed_config=...) without num_checkpoints";
    case Condition::kStrictJsonLoader:
      return "when the file is read with json.load (Hugging Face Trainer, Accelerate, Megatron-DeepSpeed)";
    case Condition::kBatchKeysAsWritten:
      return "when nothing adds the batch size before deepspeed.initialize (PyTorch Lightning's DeepSpeedStrategy and "
             "DeepSpeed's autotuner do)";
  }
  return "";
}

std::string_view WhyNot(Condition condition, Consumer consumer) {
  switch (condition) {
    case Condition::kDeepSpeedBuildsOptimizer:
      return "Megatron-DeepSpeed passes its own optimizer to deepspeed.initialize, so the optimizer section is ignored";
    case Condition::kDeepSpeedBuildsScheduler:
      return "Megatron-DeepSpeed passes its own lr_scheduler to deepspeed.initialize, so the scheduler section is ignored";
    case Condition::kCheckpointingReadsThisFile:
      return consumer == Consumer::kMegatronDeepSpeed
                 ? "Megatron-DeepSpeed calls deepspeed.checkpointing.configure with num_checkpoints and every flag from its command line"
                 : "the Hugging Face Trainer and Accelerate never call deepspeed.checkpointing.configure (the section is unused)";
    case Condition::kStrictJsonLoader:
      return "DeepSpeed reads the file itself, with hjson";
    case Condition::kBatchKeysAsWritten:
      return "the launcher adds the batch size";
  }
  return "";
}

}  // namespace dsp
