// DeepSpeed settings that move memory and time reach the cost model in the direction and by the
// amount DeepSpeed's source implies: torch_autocast (runtime/torch_autocast.py, PR #6993),
// activation_checkpointing's partition_activations and cpu_checkpointing (checkpointing.py, PR
// #8282's async copy and keep-last), communication_data_type.
#include <gtest/gtest.h>

#include "sim/memory_model.h"
#include "sim/step_time.h"
#include "tests/sim/time_test_util.h"

namespace dsp::sim {
namespace {

using testing::ParseJsonOrDie;
using testing::SimCase;

const CollectiveCall* Find(const TimeReport& r, std::string_view purpose) {
  for (const CollectiveCall& c : r.collectives) {
    if (c.purpose == purpose) return &c;
  }
  return nullptr;
}

TEST(ConfigEffectsTest, AutocastKeepsFp32ParametersAndGradientsWithoutAMasterCopy) {
  const Json config = ParseJsonOrDie(R"({"zero_optimization": {"stage": 1},
      "torch_autocast": {"enabled": true, "dtype": "bfloat16"}})");
  SimCase c(config, 8, 8, "llama-3-8b.json");
  c.input.precision = ReadPrecisionSettings(config);
  ASSERT_TRUE(c.input.precision.torch_autocast);
  const MemoryReport r = EstimateMemory(c.input);
  const double psi = 8'030'261'248;
  EXPECT_DOUBLE_EQ(r.parameters_bytes, 4 * psi);  // every rank, fp32
  EXPECT_DOUBLE_EQ(r.gradients_bytes, 4 * psi);
  EXPECT_DOUBLE_EQ(r.optimizer_states_bytes, 8 * psi / 8);  // two Adam moments over dp
  // Gradients of the Linear weights reduce in bf16, the embedding and norms in fp32.
  const TimeReport t = EstimateStepTime(c.input);
  c.input.precision.torch_autocast = false;
  const TimeReport mixed = EstimateStepTime(c.input);
  const double with = Find(t, "dp_grad_reduce")->bytes_per_call * Find(t, "dp_grad_reduce")->calls_per_step;
  const double without =
      Find(mixed, "dp_grad_reduce")->bytes_per_call * Find(mixed, "dp_grad_reduce")->calls_per_step;
  const double embedding = 128256.0 * 4096;  // Llama-3-8B's embedding (norms are ~0.003 %)
  EXPECT_NEAR(with / without, 1 + embedding / psi, 1e-4);
}

TEST(ConfigEffectsTest, CpuCheckpointingMovesAllButTheLastLayerToTheHost) {
  const Json config = ParseJsonOrDie(R"({"zero_optimization": {"stage": 1},
      "activation_checkpointing": {"cpu_checkpointing": true}})");
  SimCase c(config, 8, 8, "llama-3-8b.json");
  c.input.workload.recompute = Recompute::kFull;
  const MemoryReport on_gpu = EstimateMemory(c.input);
  c.input.checkpointing = ReadCheckpointSettings(config, DeepSpeedVersion::Newest());
  ASSERT_TRUE(c.input.checkpointing.cpu_checkpointing);
  const MemoryReport offloaded = EstimateMemory(c.input);
  const double layer = 2.0 * 4096 * 4096;  // one layer's input, 2 T h bytes
  EXPECT_DOUBLE_EQ(offloaded.host_activations_bytes, 31 * layer);
  EXPECT_DOUBLE_EQ(on_gpu.activations_bytes - offloaded.activations_bytes, 31 * layer);
  EXPECT_DOUBLE_EQ(offloaded.cpu_bytes - on_gpu.cpu_bytes, 31 * layer);
  // Without recompute nothing is checkpointed, so nothing moves.
  c.input.workload.recompute = Recompute::kSelective;
  EXPECT_EQ(EstimateMemory(c.input).host_activations_bytes, 0);
}

TEST(ConfigEffectsTest, AsyncCheckpointCopiesHideWhereBlockingOnesCostTheCopy) {
  const Json config = ParseJsonOrDie(R"({"zero_optimization": {"stage": 1},
      "activation_checkpointing": {"cpu_checkpointing": true}})");
  SimCase c(config, 8, 8, "llama-3-8b.json");
  c.input.workload.recompute = Recompute::kFull;
  const double none = EstimateStepTime(c.input).step_seconds;
  c.input.checkpointing = ReadCheckpointSettings(config, DeepSpeedVersion{0, 19, 5});
  ASSERT_FALSE(c.input.checkpointing.async_copy);
  const TimeReport blocking = EstimateStepTime(c.input);
  c.input.checkpointing = ReadCheckpointSettings(config, DeepSpeedVersion{0, 19, 6});
  ASSERT_TRUE(c.input.checkpointing.async_copy);
  const TimeReport async = EstimateStepTime(c.input);
  // Blocking: 31 layer inputs to the host and back over PCIe (the test cluster's 55 GB/s).
  const double copy = 2 * 31 * (2.0 * 4096 * 4096) / 55e9;
  EXPECT_NEAR(blocking.step_seconds - none, copy, 1e-12);
  EXPECT_NEAR(blocking.checkpoint_offload_seconds, copy, 1e-12);
  // Async: hidden behind this compute-heavy step.
  EXPECT_DOUBLE_EQ(async.step_seconds, none);
  // partition_activations keeps the copy blocking (PR #8282 made only the whole-tensor path async).
  const Json partitioned = ParseJsonOrDie(R"({"activation_checkpointing":
      {"cpu_checkpointing": true, "partition_activations": true}})");
  EXPECT_FALSE(ReadCheckpointSettings(partitioned, DeepSpeedVersion::Newest()).async_copy);
}

TEST(ConfigEffectsTest, PartitionActivationsSplitsCheckpointsOverTp) {
  const Json config = ParseJsonOrDie(R"({"tensor_parallel": {"autotp_size": 2},
      "zero_optimization": {"stage": 1}, "activation_checkpointing": {"partition_activations": true}})");
  SimCase c(config, 8, 8, "llama-3-8b.json");
  c.input.workload.recompute = Recompute::kFull;
  const MemoryReport whole = EstimateMemory(c.input);
  const TimeReport whole_time = EstimateStepTime(c.input);
  c.input.checkpointing = ReadCheckpointSettings(config, DeepSpeedVersion::Newest());
  const MemoryReport split = EstimateMemory(c.input);
  EXPECT_DOUBLE_EQ(split.layer_activations_bytes.front(), whole.layer_activations_bytes.front() / 2);
  EXPECT_EQ(Find(whole_time, "ckpt_partition_all_gather"), nullptr);
  const CollectiveCall* ag = Find(EstimateStepTime(c.input), "ckpt_partition_all_gather");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->group_size, 2);
  EXPECT_EQ(ag->calls_per_step, 32);  // one per layer, before its recomputation
}

TEST(ConfigEffectsTest, CommunicationDataTypeSetsTheGradientBytes) {
  const Json config = ParseJsonOrDie(R"({"zero_optimization": {"stage": 2},
      "communication_data_type": "fp32"})");
  SimCase c(config, 8, 8, "llama-3-8b.json");
  const double bf16 = Find(EstimateStepTime(c.input), "dp_grad_reduce")->seconds;
  c.input.precision = ReadPrecisionSettings(config);
  EXPECT_EQ(c.input.precision.communication_bytes, 4);
  const double fp32 = Find(EstimateStepTime(c.input), "dp_grad_reduce")->seconds;
  EXPECT_GT(fp32, 1.9 * bf16);
}

}  // namespace
}  // namespace dsp::sim
