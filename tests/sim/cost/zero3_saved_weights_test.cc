// SPDX-License-Identifier: Apache-2.0
// ZeRO-3's gathered expert weights that autograd keeps until backward: transformers 5's fused
// experts pass gate_up_proj.transpose(-2, -1) and down_proj.transpose(-2, -1) to torch._grouped_mm
// (integrations/moe.py grouped_mm_experts_forward), and the saved views hold the storage that
// DeepSpeed's release (partition_parameters.py free_param: param.data = torch.empty(0)) leaves
// behind; DeepSpeed guards F.linear only (runtime/zero/linear.py LinearFunctionForZeroStage3).
#include "sim/cost/zero3_saved_weights.h"

#include <gtest/gtest.h>

#include "tests/sim/cost/memory_test_util.h"

namespace dsp::sim {
namespace {

using testing::MemoryCase;

constexpr const char* kZero3 =
    R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})";

// Qwen3-30B-A3B: 48 MoE layers of 128 experts x 3 x 2048 x 768.
constexpr double kRoutedQwen3_30b = 48.0 * 128 * 3 * 2048 * 768;

MemoryReport RunQwen(const std::string& config, Recompute recompute, Engine engine = Engine::kDeepSpeed) {
  MemoryCase c(config, 16, "qwen3-30b-a3b.json");
  c.workload.seq_len = 1024;
  c.workload.recompute = recompute;
  c.engine.engine = engine;
  return c.Run();
}

TEST(Zero3SavedWeightsTest, EveryMoeLayersGatheredExpertsAtTheTurnToBackward) {
  const MemoryReport none = RunQwen(kZero3, Recompute::kNone);
  // Gathered in full (ZeRO-3 partitions them 16 ways at rest), 2 bytes each.
  EXPECT_DOUBLE_EQ(none.zero3_saved_weights_bytes, 2 * kRoutedQwen3_30b);
  // They sit in the activations at the step's peak and at the loss's.
  MemoryCase without(kZero3, 16, "qwen3-30b-a3b.json");
  without.workload.seq_len = 1024;
  without.model.family = ModelFamily::kGptOss;  // experts the grouped matmul takes whole: no views
  const MemoryReport other = without.Run();
  EXPECT_DOUBLE_EQ(other.zero3_saved_weights_bytes, 0);
  EXPECT_DOUBLE_EQ(none.activations_bytes - other.activations_bytes, 2 * kRoutedQwen3_30b);
  EXPECT_DOUBLE_EQ(none.loss_activations_bytes - other.loss_activations_bytes, 2 * kRoutedQwen3_30b);
}

// Under AutoEP a rank gathers its own experts only (over the expert-data-parallel group): an eighth
// of them with autoep_size 8, which its GroupedExperts hand grouped_mm as views too.
TEST(Zero3SavedWeightsTest, AutoEpKeepsTheRanksOwnExperts) {
  const std::string ep8 =
      R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3},
          "expert_parallel": {"enabled": true, "autoep_size": 8}})";
  EXPECT_DOUBLE_EQ(RunQwen(ep8, Recompute::kNone).zero3_saved_weights_bytes, 2 * kRoutedQwen3_30b / 8);
}

TEST(Zero3SavedWeightsTest, OnlyEagerZero3WithoutLayerCheckpointing) {
  // Checkpointed layers save nothing in forward; their recomputation's views live through the
  // layer's own backward only, when the experts are gathered anyway.
  EXPECT_DOUBLE_EQ(RunQwen(kZero3, Recompute::kFull).zero3_saved_weights_bytes, 0);
  // Stages 1 and 2 never free a parameter; FSDP2 is not DeepSpeed's release.
  const std::string zero2 =
      R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 2}})";
  EXPECT_DOUBLE_EQ(RunQwen(zero2, Recompute::kNone).zero3_saved_weights_bytes, 0);
  EXPECT_DOUBLE_EQ(RunQwen(kZero3, Recompute::kNone, Engine::kFsdp2).zero3_saved_weights_bytes, 0);
  // DeepCompile's graph gathers and releases the parameters itself.
  const std::string compiled =
      R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3},
          "compile": {"deepcompile": true}})";
  EXPECT_DOUBLE_EQ(RunQwen(compiled, Recompute::kNone).zero3_saved_weights_bytes, 0);
  // A dense model has no experts to keep.
  MemoryCase dense(kZero3, 16, "llama-3-8b.json");
  EXPECT_DOUBLE_EQ(dense.Run().zero3_saved_weights_bytes, 0);
}

}  // namespace
}  // namespace dsp::sim
