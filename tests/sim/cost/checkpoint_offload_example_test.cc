// SPDX-License-Identifier: Apache-2.0
// The worked example of docs/cost-model.md ("async activation-checkpoint offload"): Qwen3-8B on
// one H200 at 32K tokens with samples/configs/cpu-checkpointing.json, without cpu_checkpointing,
// with DeepSpeed 0.19.5's blocking copies and with 0.19.6's async ones (PR #8282). The figures
// the docs print are asserted here, so the table cannot drift from the model.
#include <gtest/gtest.h>

#include "core/util/file_io.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/step_time.h"
#include "tests/sim/cost/time_test_util.h"

namespace dsp::sim {
namespace {

Cluster H200() {
  auto text = ReadFile(std::string(DSP_SOURCE_DIR) + "/samples/clusters/h200.json");
  return ParseCluster(Json::parse(text.value(), nullptr, true, true)).value();
}

struct Outcome {
  MemoryReport memory;
  TimeReport time;
};

Outcome Simulated(bool cpu_checkpointing, const DeepSpeedVersion& version) {
  Json config = testing::LoadSampleConfig("cpu-checkpointing.json");
  config["activation_checkpointing"]["cpu_checkpointing"] = cpu_checkpointing;
  testing::SimCase c(config, 1, 8, "qwen3-8b.json");
  c.cluster = H200();
  c.input.workload.seq_len = 32768;
  c.input.workload.recompute = Recompute::kFull;
  c.input.zero = ReadZeroSettings(config, version);
  c.input.checkpointing = ReadCheckpointSettings(config, version);
  c.input.precision = ReadPrecisionSettings(config);
  c.input.workload.optimizer_state_bytes_per_param = ReadOptimizerStateBytes(config, c.input.precision);
  c.input.engine.deepspeed_version = version;
  return {EstimateMemory(c.input), EstimateStepTime(c.input)};
}

TEST(CheckpointOffloadExampleTest, AsyncKeepsBlockingsSavingAtNoCost) {
  const Outcome none = Simulated(false, DeepSpeedVersion{0, 19, 6});
  const Outcome blocking = Simulated(true, DeepSpeedVersion{0, 19, 5});
  const Outcome async = Simulated(true, DeepSpeedVersion{0, 19, 6});
  // bf16 master weights and moments: 2 + 4 bytes of optimizer state per parameter.
  EXPECT_NEAR(none.memory.optimizer_states_bytes, 6 * 8'190'735'360.0, 1);
  // transformers' loss holds 14 bytes per logit at its backward: 32768 x 151936 x 14 = 69.7 GB of
  // the activations, and none of the three fits one H200 (docs/cost-model.md says why).
  EXPECT_FALSE(none.memory.fits);
  EXPECT_NEAR(none.memory.activations_bytes / 1e9, 80.44, 0.005);
  EXPECT_NEAR(blocking.memory.activations_bytes / 1e9, 70.77, 0.005);
  EXPECT_NEAR(async.memory.activations_bytes / 1e9, 71.04, 0.005);
  EXPECT_NEAR(none.memory.peak_bytes / 1e9, 164.35, 0.005);
  EXPECT_NEAR(blocking.memory.peak_bytes / 1e9, 154.68, 0.005);
  EXPECT_NEAR(async.memory.peak_bytes / 1e9, 154.95, 0.005);
  // Layer inputs are 2 x 32768 x 4096 bytes: 36 move when blocking, 35 with keep-last.
  const double layer = 2.0 * 32768 * 4096;
  EXPECT_DOUBLE_EQ(blocking.memory.host_activations_bytes, 36 * layer);
  EXPECT_DOUBLE_EQ(async.memory.host_activations_bytes, 35 * layer);
  // PCIe traffic per step, both ways: reported whether or not it hides.
  EXPECT_DOUBLE_EQ(blocking.time.checkpoint_copy_bytes, 2 * 36 * layer);
  EXPECT_DOUBLE_EQ(async.time.checkpoint_copy_bytes, 2 * 35 * layer);
  EXPECT_EQ(none.time.checkpoint_copy_bytes, 0);
  EXPECT_NEAR(async.time.checkpoint_copy_seconds, 2 * 35 * layer / 50e9, 1e-12);
  EXPECT_EQ(async.time.checkpoint_offload_seconds, 0);
  EXPECT_NEAR(none.time.step_seconds, 6.2493, 0.0005);
  EXPECT_NEAR(async.time.step_seconds, none.time.step_seconds, 1e-9);
  // Blocking: 36 inputs to pageable memory and back at PCIe / 6 (50 GB/s / 6).
  EXPECT_NEAR(blocking.time.step_seconds - none.time.step_seconds, 2 * 36 * layer / (50e9 / 6), 1e-9);
  EXPECT_NEAR(blocking.time.step_seconds / none.time.step_seconds, 1.371, 0.005);
}

}  // namespace
}  // namespace dsp::sim
