// SPDX-License-Identifier: Apache-2.0
// Who consumes the config (--consumer): some of DeepSpeed's errors depend on how the config reaches
// deepspeed.initialize, not on the file. Each launch context fixes who builds the optimizer and the
// scheduler, which loader reads the file, and which DeepSpeed calls the script makes. The facts
// below are read from each framework's source; docs/validate.md ("Launch contexts") cites them.
#pragma once

#include <optional>
#include <string_view>

namespace dsp {

enum class Consumer {
  kUnspecified,        // no --consumer: context-dependent checks are warnings naming their condition
  kDeepSpeed,          // the script calls deepspeed.initialize(model, model_parameters, config) itself
  kHfTrainer,          // transformers Trainer (TrainingArguments.deepspeed)
  kAccelerate,         // accelerate launch with a DeepSpeed plugin config file
  kMegatronDeepSpeed,  // Megatron-DeepSpeed's pretrain (megatron/training.py)
};

// A fact a check depends on.
enum class Condition {
  // DeepSpeed builds the optimizer from the optimizer section (engine.py _configure_basic_optimizer):
  // no client optimizer reaches deepspeed.initialize.
  kDeepSpeedBuildsOptimizer,
  // DeepSpeed builds the scheduler from the scheduler section (_scheduler_from_config).
  kDeepSpeedBuildsScheduler,
  // The script calls deepspeed.checkpointing.configure(mpu, deepspeed_config=...) without
  // num_checkpoints, so number_checkpoints comes from this file.
  kCheckpointingReadsThisFile,
  // The batch keys reach deepspeed.initialize as written: no launcher adds missing ones
  // (PyTorch Lightning's DeepSpeedStrategy and DeepSpeed's autotuner do; the Trainer, Accelerate
  // and Megatron-DeepSpeed only replace "auto").
  kBatchKeysAsWritten,
  // The file is read with json.load before DeepSpeed sees it (no comments, no hjson, 2.0 stays a float).
  kStrictJsonLoader,
};

std::optional<Consumer> ParseConsumer(std::string_view name);
std::string_view ConsumerName(Consumer consumer);
// "deepspeed, hf-trainer, accelerate or megatron-deepspeed"
std::string_view ConsumerNames();

// Whether `condition` holds in `consumer`'s launch context; nullopt without --consumer.
std::optional<bool> Holds(Condition condition, Consumer consumer);

// The condition in words, for messages: "when DeepSpeed builds the optimizer from this section".
std::string_view ConditionText(Condition condition);
// Why it does not hold in `consumer`, for notes: "Megatron-DeepSpeed passes its own optimizer ...".
std::string_view WhyNot(Condition condition, Consumer consumer);

}  // namespace dsp
