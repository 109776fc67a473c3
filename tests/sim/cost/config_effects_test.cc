// SPDX-License-Identifier: Apache-2.0
// DeepSpeed settings that move memory and time reach the cost model in the direction and by the
// amount DeepSpeed's source implies: torch_autocast (runtime/torch_autocast.py, PR #6993),
// activation_checkpointing's partition_activations and cpu_checkpointing (checkpointing.py, PR
// #8282's async copy and keep-last, contiguous_memory_optimization), communication_data_type and
// seq_parallel_communication_data_type, the node's host memory.
#include <gtest/gtest.h>

#include "sim/comm/comm_plan.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/step_time.h"
#include "tests/sim/cost/time_test_util.h"

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
  // Before 0.19.6 (copy_to_device, no offload engine) every layer's input goes, the last too.
  c.input.checkpointing = ReadCheckpointSettings(config, DeepSpeedVersion{0, 19, 5});
  EXPECT_DOUBLE_EQ(EstimateMemory(c.input).host_activations_bytes, 32 * layer);
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
  // Blocking (checkpointing.py's copy_to_device before PR #8282): all 32 layer inputs to pageable
  // host memory and back (`.to('cpu')`: the test cluster's 55 GB/s PCIe / 6, the default pageable
  // rate); there is no keep-last before 0.19.6.
  const double copy = 2 * 32 * (2.0 * 4096 * 4096) / (55e9 / 6);
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

// With sequence parallelism the engine's communication dtype becomes
// seq_parallel_communication_data_type, "fp32" by default (engine.py, constants.py).
TEST(ConfigEffectsTest, SequenceParallelGradientsReduceInTheirOwnDtype) {
  const Json config = ParseJsonOrDie(R"({"sequence_parallel_size": 4, "zero_optimization": {"stage": 1}})");
  SimCase c(config, 8, 8, "llama-3-8b.json");
  c.input.precision = ReadPrecisionSettings(config);
  EXPECT_EQ(WireBytesPerElement(c.input).gradient, 4);
  const Json bf16 = ParseJsonOrDie(R"({"sequence_parallel_size": 4, "zero_optimization": {"stage": 1},
      "seq_parallel_communication_data_type": "bf16"})");
  c.input.precision = ReadPrecisionSettings(bf16);
  EXPECT_EQ(WireBytesPerElement(c.input).gradient, 2);
  // Without sequence parallelism the key changes nothing.
  SimCase dp(ParseJsonOrDie(R"({"zero_optimization": {"stage": 1}})"), 8, 8, "llama-3-8b.json");
  dp.input.precision = ReadPrecisionSettings(ParseJsonOrDie(R"({"seq_parallel_communication_data_type": "fp32"})"));
  EXPECT_EQ(WireBytesPerElement(dp.input).gradient, 2);
}

// contiguous_memory_optimization copies the partitioned inputs into buffers of number_checkpoints
// layers, allocated whole at the first checkpoint (checkpointing.py partition_activations).
TEST(ConfigEffectsTest, ContiguousCheckpointBuffersHoldNumberCheckpointsLayers) {
  const Json config = ParseJsonOrDie(R"({"tensor_parallel": {"autotp_size": 2},
      "zero_optimization": {"stage": 1}, "activation_checkpointing": {"partition_activations": true,
      "contiguous_memory_optimization": true, "number_checkpoints": 40}})");
  SimCase c(config, 8, 8, "llama-3-8b.json");
  c.input.workload.recompute = Recompute::kFull;
  c.input.checkpointing = ReadCheckpointSettings(config, DeepSpeedVersion::Newest());
  ASSERT_TRUE(c.input.checkpointing.contiguous_memory);
  EXPECT_EQ(c.input.checkpointing.number_checkpoints, 40);
  const MemoryReport contiguous = EstimateMemory(c.input);
  c.input.checkpointing.contiguous_memory = false;
  const MemoryReport plain = EstimateMemory(c.input);
  EXPECT_DOUBLE_EQ(contiguous.activations_bytes - plain.activations_bytes,
                   8 * plain.layer_activations_bytes.front());  // 40 buffers for 32 layers
  // checkpointing.configure asserts partition_activations for it: without, it is not read.
  const Json whole = ParseJsonOrDie(R"({"activation_checkpointing": {"contiguous_memory_optimization": true,
      "number_checkpoints": 40}})");
  EXPECT_FALSE(ReadCheckpointSettings(whole, DeepSpeedVersion::Newest()).contiguous_memory);
}

// Only the lower_precision_safe_modules' parameters carry the autocast comm_dtype
// (torch_autocast.py init_autocast_params); a list without torch.nn.Linear reduces in fp32.
TEST(ConfigEffectsTest, AutocastSafeModulesDecideTheWireDtype) {
  const Json def = ParseJsonOrDie(R"({"zero_optimization": {"stage": 2},
      "torch_autocast": {"enabled": true, "dtype": "bfloat16"}})");
  SimCase c(def, 8, 8, "llama-3-8b.json");
  c.input.precision = ReadPrecisionSettings(def);
  // nn.Embedding and the norms are not Linear: fp32. lm_head is a Linear: bf16.
  const double psi = 8'030'261'248, fp32 = 128256.0 * 4096 + 65 * 4096;
  EXPECT_NEAR(WireBytesPerElement(c.input).gradient, 2 * (1 - fp32 / psi) + 4 * fp32 / psi, 1e-12);
  const Json conv = ParseJsonOrDie(R"({"zero_optimization": {"stage": 2}, "torch_autocast": {"enabled": true,
      "dtype": "bfloat16", "lower_precision_safe_modules": ["torch.nn.Conv1d"]}})");
  c.input.precision = ReadPrecisionSettings(conv);
  EXPECT_FALSE(c.input.precision.autocast_linear_low_precision);
  EXPECT_EQ(WireBytesPerElement(c.input).gradient, 4);
  const Json linear = ParseJsonOrDie(R"({"torch_autocast": {"enabled": true,
      "lower_precision_safe_modules": ["torch.nn.Linear"]}})");
  EXPECT_TRUE(ReadPrecisionSettings(linear).autocast_linear_low_precision);
}

// A node's host memory is shared by its ranks' offloaded states and host checkpoints.
TEST(ConfigEffectsTest, HostCheckpointsMustFitTheNodesHostMemory) {
  const Json config = ParseJsonOrDie(R"({"zero_optimization": {"stage": 1},
      "activation_checkpointing": {"cpu_checkpointing": true}})");
  SimCase c(config, 8, 8, "llama-3-8b.json");
  c.input.workload.recompute = Recompute::kFull;
  c.input.checkpointing = ReadCheckpointSettings(config, DeepSpeedVersion::Newest());
  const double per_rank = 31 * 2.0 * 4096 * 4096;
  c.cluster.host_memory_bytes = 8 * per_rank + 1;
  MemoryReport m = EstimateMemory(c.input);
  EXPECT_DOUBLE_EQ(m.node_host_bytes, 8 * per_rank);
  EXPECT_TRUE(m.host_fits);
  EXPECT_TRUE(m.fits);
  c.cluster.host_memory_bytes = 8 * per_rank - 1;
  m = EstimateMemory(c.input);
  EXPECT_FALSE(m.host_fits);
  EXPECT_FALSE(m.fits);
}

// bf16 master weights (PR #7700, base_optimizer.py _configure_master_weights): a 2-byte master
// copy, and with bf16_optimizer_states 2-byte moments; bf16 gradients need no cast at the step.
TEST(ConfigEffectsTest, Bf16MasterWeightsAndOptimizerStatesShrinkTheOptimizerPartition) {
  const Json both = ParseJsonOrDie(R"({"zero_optimization": {"stage": 1}, "optimizer": {"type": "AdamW"},
      "bf16": {"enabled": true, "bf16_master_weights_and_grads": true, "bf16_optimizer_states": true}})");
  const Json master = ParseJsonOrDie(R"({"zero_optimization": {"stage": 1}, "optimizer": {"type": "AdamW"},
      "bf16": {"enabled": true, "bf16_master_weights_and_grads": true}})");
  EXPECT_EQ(ReadOptimizerStateBytes(both, ReadPrecisionSettings(both)), 6);
  EXPECT_EQ(ReadOptimizerStateBytes(master, ReadPrecisionSettings(master)), 10);
  // ZeRO-0 has no ZeRO optimizer to take them.
  const Json zero0 = ParseJsonOrDie(R"({"bf16": {"enabled": true, "bf16_master_weights_and_grads": true}})");
  EXPECT_FALSE(ReadPrecisionSettings(zero0).low_precision_master);
  SimCase c(both, 8, 8, "llama-3-8b.json");
  c.input.precision = ReadPrecisionSettings(both);
  c.input.workload.optimizer_state_bytes_per_param = ReadOptimizerStateBytes(both, c.input.precision);
  const MemoryReport m = EstimateMemory(c.input);
  const double psi = 8'030'261'248;
  EXPECT_NEAR(m.optimizer_states_bytes, 6 * psi / 8, 1);
  EXPECT_EQ(m.optimizer_step_transient_bytes, 0);
  // The GPU optimizer streams 2K + 8 bytes per parameter of its partition: 20 instead of 32.
  const double bf16_step = GpuOptimizerStepSeconds(c.input);
  c.input.workload.optimizer_state_bytes_per_param = 12;
  EXPECT_NEAR(bf16_step / GpuOptimizerStepSeconds(c.input), 20.0 / 32.0, 1e-12);
}

}  // namespace
}  // namespace dsp::sim
