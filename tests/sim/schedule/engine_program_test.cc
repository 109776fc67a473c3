// SPDX-License-Identifier: Apache-2.0
// The event schedule of the engines the graph passes do not model (sim/schedule/engine_program.h):
// the closed form's kernels at the closed form's prices, FP8 casts among them, and each planned
// collective where the engine runs it: FSDP2's per-block all-gathers one block ahead and its
// reduce-scatters after each block's backward (torch/distributed/fsdp/_fully_shard/
// _fsdp_param_group.py pre_forward / post_backward), TransformerEngine's KV ring beside the layer's
// attention (transformer_engine/pytorch/attention.py AttnFuncWithCPAndKVP2P).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/cost/kernel_time.h"
#include "sim/cost/step_time.h"
#include "sim/schedule/engine_program.h"
#include "sim/schedule/simulator.h"
#include "tests/sim/comm/comm_test_util.h"

namespace dsp::sim::schedule {
namespace {

using dsp::testing::CommCase;
using dsp::testing::Sizes;

constexpr const char* kZero3 =
    R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})";
constexpr const char* kZero1 =
    R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}})";

int CountNamed(const Program& p, const std::string& prefix) {
  int n = 0;
  for (const Task& t : p.tasks) n += t.name.starts_with(prefix) ? 1 : 0;
  return n;
}

int CountExact(const Program& p, const std::string& name) {
  int n = 0;
  for (const Task& t : p.tasks) n += t.name == name ? 1 : 0;
  return n;
}

const Task* Named(const Program& p, const std::string& name) {
  for (const Task& t : p.tasks) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

TEST(EngineProgramTest, Fsdp2GathersEachBlockAheadAndReduceScattersItAfterItsBackward) {
  CommCase c(kZero3, Sizes(8, 8, 1, 1, RankLayout::kMegatron), "llama-3-8b.json", Engine::kFsdp2);
  c.input.workload.gradient_bytes_per_element = 4;
  c.input.workload.grad_accum = 2;
  auto program = BuildEngineProgram(c.input);
  ASSERT_TRUE(program.ok()) << program.error().message;
  // 34 groups (32 blocks, embedding, [norm, output]) gathered before forward in each micro-step,
  // 33 again before backward (the root stays gathered), 34 reduce-scatters after backward.
  EXPECT_EQ(CountNamed(*program, "fsdp_all_gather_fwd"), 2 * 34);
  EXPECT_EQ(CountNamed(*program, "fsdp_all_gather_bwd"), 2 * 33);
  EXPECT_EQ(CountNamed(*program, "fsdp_reduce_scatter"), 2 * 34);
  // A block's first kernel waits for a gather issued before the previous block's kernels.
  const Task* first = Named(*program, "fwd layers_5_input_norm");
  ASSERT_NE(first, nullptr);
  bool waits_for_gather = false;
  for (int d : first->deps) {
    const Task& dep = program->tasks[static_cast<size_t>(d)];
    if (dep.name.starts_with("fsdp_all_gather_fwd")) {
      waits_for_gather = true;
      EXPECT_EQ(dep.layer, 5);
      EXPECT_EQ(dep.stream, StreamOf(GroupKind::kDp));
    }
  }
  EXPECT_TRUE(waits_for_gather);
  // The reduce-scatters run on their own stream, not the gathers'.
  const Task* rs = Named(*program, "fsdp_reduce_scatter layer 5");
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(rs->stream, ReduceStreamOf(GroupKind::kDp));
  EXPECT_EQ(rs->kind, CollectiveKind::kReduceScatter);
}

// Every kernel the closed form prices is a task at its price: the compute tasks sum to the closed
// form's compute, and the simulated step lands near the closed form's (8 ranks of one node).
TEST(EngineProgramTest, KernelsCostWhatTheClosedFormCharges) {
  CommCase c(kZero3, Sizes(8, 8, 1, 1, RankLayout::kMegatron), "llama-3-8b.json", Engine::kFsdp2);
  c.input.workload.gradient_bytes_per_element = 4;
  c.input.workload.grad_accum = 2;
  auto program = BuildEngineProgram(c.input);
  ASSERT_TRUE(program.ok());
  double compute = 0;
  for (const Task& t : program->tasks) {
    if (!t.collective && t.phase != Phase::kOptimizer) compute += t.compute_seconds;
  }
  const TimeReport closed = EstimateStepTime(c.input);
  EXPECT_NEAR(compute, closed.compute_seconds, 1e-9 * closed.compute_seconds);
  auto schedule = Simulate(*program, c.input);
  ASSERT_TRUE(schedule.ok());
  EXPECT_NEAR(schedule->step_seconds / closed.step_seconds, 1.0, 0.05);
}

TEST(EngineProgramTest, ContextParallelRingRunsBesideTheLayersAttention) {
  PlanInputs sizes = Sizes(16, 8, 1, 2, RankLayout::kMegatron);
  sizes.cp = 2;
  CommCase c(kZero1, sizes, "llama-3-8b.json", Engine::kMegatronLm);
  c.input.engine.megatron_sp = true;
  c.input.workload.gradient_bytes_per_element = 4;
  auto program = BuildEngineProgram(c.input);
  ASSERT_TRUE(program.ok()) << program.error().message;
  // cp - 1 = 1 KV send per layer forward, one KV + dKV send per layer backward.
  EXPECT_EQ(CountNamed(*program, "cp_kv_p2p_fwd"), 32);
  EXPECT_EQ(CountNamed(*program, "cp_kv_p2p_bwd"), 32);
  const Task* ring = Named(*program, "cp_kv_p2p_fwd layer 3");
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->kind, CollectiveKind::kSendRecv);
  EXPECT_EQ(ring->stream, StreamOf(GroupKind::kSp));
  // Issued at the layer's start, waited for by its last kernel only.
  const int ring_index = static_cast<int>(ring - program->tasks.data());
  int waiting = 0;
  for (const Task& t : program->tasks) {
    for (int d : t.deps) {
      if (d == ring_index) {
        ++waiting;
        EXPECT_EQ(t.layer, 3);
        EXPECT_TRUE(t.name.starts_with("fwd layers_3_")) << t.name;
      }
    }
  }
  EXPECT_EQ(waiting, 1);
  auto schedule = Simulate(*program, c.input);
  ASSERT_TRUE(schedule.ok()) << schedule.error().message;
}

// --fp8 adds the recipe's cast kernels to each layer (sim/cost/flops.cc ApplyFp8): TransformerEngine's
// cast-transposes of o_proj's and down_proj's inputs appear as their own task.
TEST(EngineProgramTest, Fp8CastsAreTasksOfEachLayer) {
  CommCase c(kZero1, Sizes(8, 8, 1, 1, RankLayout::kMegatron), "llama-3-8b.json", Engine::kMegatronLm);
  auto bf16 = BuildEngineProgram(c.input);
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(CountNamed(*bf16, "fwd layers_0_fp8_cast"), 0);
  c.input.engine.fp8 = true;
  auto fp8 = BuildEngineProgram(c.input);
  ASSERT_TRUE(fp8.ok());
  const Task* cast = Named(*fp8, "fwd layers_0_fp8_cast");
  ASSERT_NE(cast, nullptr);
  EXPECT_GT(cast->compute_seconds, 0);
  EXPECT_EQ(CountNamed(*fp8, "bwd layers_31_fp8_cast"), 1);
}

// Megatron-Core's MoE (token_dispatcher.py MoEAlltoAllTokenDispatcher): the dispatch and combine
// all-to-alls sit on the MoE layers' chain only (DeepSeek-V2-Lite's first layer is dense), the
// routing counts move in forward alone, and the simulated step stays near the closed form.
TEST(EngineProgramTest, MegatronExpertCollectivesRunOnTheMoeLayersOnly) {
  PlanInputs sizes = Sizes(16, 8, 1, 2, RankLayout::kMegatron);
  sizes.ep = 8;
  sizes.etp = 2;
  CommCase c(kZero1, sizes, "deepseek-v2-lite.json", Engine::kMegatronLm);
  c.input.engine.megatron_sp = true;
  c.input.engine.moe_grouped_gemm = true;
  c.input.workload.gradient_bytes_per_element = 4;
  auto program = BuildEngineProgram(c.input);
  ASSERT_TRUE(program.ok()) << program.error().message;
  EXPECT_EQ(CountExact(*program, "ep_dispatch layer 0"), 0);
  EXPECT_EQ(CountExact(*program, "ep_dispatch layer 1"), 2);  // forward and backward
  EXPECT_EQ(CountExact(*program, "etp_dispatch_all_gather layer 1"), 2);
  for (const Task& t : program->tasks) {
    if (t.name.starts_with("ep_split_counts")) {
      EXPECT_EQ(t.phase, Phase::kForward) << t.name;
    }
  }
  auto schedule = Simulate(*program, c.input);
  ASSERT_TRUE(schedule.ok()) << schedule.error().message;
  EXPECT_NEAR(schedule->step_seconds / EstimateStepTime(c.input).step_seconds, 1.0, 0.05);
}

TEST(EngineProgramTest, PipelinesAreNotSimulated) {
  CommCase c(kZero1, Sizes(16, 8, 2, 1, RankLayout::kMegatron), "llama-3-8b.json", Engine::kMegatronLm);
  auto program = BuildEngineProgram(c.input);
  ASSERT_FALSE(program.ok());
  EXPECT_NE(program.error().message.find("pp > 1"), std::string::npos);
}

}  // namespace
}  // namespace dsp::sim::schedule
