// SPDX-License-Identifier: Apache-2.0
// The launch contexts of --consumer (docs/validate.md, "Launch contexts").
#include "core/config/consumer.h"

#include <gtest/gtest.h>

namespace dsp {
namespace {

TEST(ConsumerTest, NamesRoundTrip) {
  for (Consumer c : {Consumer::kDeepSpeed, Consumer::kHfTrainer, Consumer::kAccelerate, Consumer::kMegatronDeepSpeed}) {
    EXPECT_EQ(ParseConsumer(ConsumerName(c)), c);
  }
  EXPECT_FALSE(ParseConsumer("trainer"));
}

TEST(ConsumerTest, FactsPerContext) {
  // Without --consumer nothing is known.
  EXPECT_FALSE(Holds(Condition::kDeepSpeedBuildsOptimizer, Consumer::kUnspecified).has_value());
  // Megatron-DeepSpeed passes optimizer= and lr_scheduler= (megatron/training.py setup_model_and_optimizer).
  EXPECT_EQ(Holds(Condition::kDeepSpeedBuildsOptimizer, Consumer::kMegatronDeepSpeed), false);
  EXPECT_EQ(Holds(Condition::kDeepSpeedBuildsScheduler, Consumer::kMegatronDeepSpeed), false);
  // The Trainer and Accelerate hand DeepSpeed a DummyOptim when the config has an optimizer section.
  EXPECT_EQ(Holds(Condition::kDeepSpeedBuildsOptimizer, Consumer::kHfTrainer), true);
  EXPECT_EQ(Holds(Condition::kDeepSpeedBuildsOptimizer, Consumer::kAccelerate), true);
  // Only a script calling DeepSpeed itself configures checkpointing from the file.
  EXPECT_EQ(Holds(Condition::kCheckpointingReadsThisFile, Consumer::kDeepSpeed), true);
  EXPECT_EQ(Holds(Condition::kCheckpointingReadsThisFile, Consumer::kHfTrainer), false);
  EXPECT_EQ(Holds(Condition::kCheckpointingReadsThisFile, Consumer::kMegatronDeepSpeed), false);
  // json.load everywhere but in DeepSpeed's own loader (hjson).
  EXPECT_EQ(Holds(Condition::kStrictJsonLoader, Consumer::kDeepSpeed), false);
  EXPECT_EQ(Holds(Condition::kStrictJsonLoader, Consumer::kHfTrainer), true);
  EXPECT_EQ(Holds(Condition::kStrictJsonLoader, Consumer::kMegatronDeepSpeed), true);
}

}  // namespace
}  // namespace dsp
