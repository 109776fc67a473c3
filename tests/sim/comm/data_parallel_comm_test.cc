// SPDX-License-Identifier: Apache-2.0
// PlanDataParallel by GradientSync: DeepSpeed reduces at the boundary at ZeRO 0/1
// (runtime/engine.py allreduce_gradients), reduce-scatters every micro-step at ZeRO 2
// (zero/stage_1_and_2.py reduce_ipg_grads), all-gathers the stepped partition after ZeRO 1/2 and
// gathers every module before forward and backward at ZeRO 3 (zero/partitioned_param_coordinator.py
// fetch_sub_module); Megatron-LM all-reduces 25 MB buckets behind backward
// (core/distributed/distributed_data_parallel.py, bucket_size default).
#include <cmath>

#include "tests/sim/comm/comm_test_util.h"

namespace dsp::sim {
namespace {

using testing::CommCase;
using testing::FindPlanned;
using testing::Purposes;
using testing::Sizes;

// Llama-3-8B's parameters, all of them reduced over dp without TP (samples/models/llama-3-8b.json).
constexpr double kLlama8b = 8'030'261'248;

TEST(DataParallelCommTest, ZeroTwoReduceScattersBucketsBehindBackwardThenGathersTheStep) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 2, "overlap_comm": true, "reduce_bucket_size": 5e8,
                            "allgather_bucket_size": 5e8}})",
             Sizes(8, 8), "llama-3-8b.json");
  const auto planned = c.Run(PlanDataParallel);
  ASSERT_EQ(Purposes(planned), (std::vector<std::string>{"dp_grad_reduce", "zero_param_all_gather"}));
  const PlannedCollective& reduce = planned[0];
  EXPECT_EQ(reduce.call.kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(reduce.schedule, CommSchedule::kBackwardOverlap);
  const double buckets = std::ceil(kLlama8b / 5e8);
  EXPECT_DOUBLE_EQ(reduce.calls_per_unit, buckets);
  EXPECT_DOUBLE_EQ(reduce.call.bytes_per_call, kLlama8b * 2 / buckets);
  EXPECT_EQ(planned[1].schedule, CommSchedule::kStepExposed);
}

TEST(DataParallelCommTest, ZeroOneReducesOnceAtTheBoundary) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 1, "overlap_comm": true}})",
             Sizes(8, 8), "llama-3-8b.json");
  c.input.workload.grad_accum = 4;
  const PlannedCollective* reduce = FindPlanned(c.Run(PlanDataParallel), "dp_grad_reduce");
  ASSERT_NE(reduce, nullptr);
  EXPECT_EQ(reduce->call.kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(reduce->schedule, CommSchedule::kBoundaryOverlap);
  EXPECT_DOUBLE_EQ(reduce->call.calls_per_step, reduce->calls_per_unit);  // not once per micro-step
}

TEST(DataParallelCommTest, ZeroThreeGathersEveryModuleForwardAndBackward) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3, "overlap_comm": true}})",
             Sizes(8, 8), "llama-3-8b.json");
  const auto planned = c.Run(PlanDataParallel);
  EXPECT_EQ(Purposes(planned),
            (std::vector<std::string>{"dp_grad_reduce", "zero3_all_gather_fwd", "zero3_all_gather_bwd"}));
  // Seven projections per layer over 32 layers, plus the embedding and the head.
  EXPECT_DOUBLE_EQ(FindPlanned(planned, "zero3_all_gather_fwd")->calls_per_unit, 7 * 32 + 1.0);
  EXPECT_EQ(FindPlanned(planned, "zero3_all_gather_fwd")->schedule, CommSchedule::kForwardOverlap);
}

// Without AutoEP a MoE layer's routed experts are modules like any other: transformers' Mixtral
// holds an nn.Linear per expert weight, each gathered by its own hook over dp, and after a
// recomputed forward backward gathers again each module whose reuse distance reaches
// max_reuse_distance (zero/partitioned_param_coordinator.py __params_to_release, 0.19.6): the
// modules used before the last 5e8 parameters of the layer's recompute and backward.
TEST(DataParallelCommTest, ZeroThreeGathersEachExpertAndRegathersThemAfterRecompute) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3, "overlap_comm": true}})",
             Sizes(8, 8), "mixtral-8x7b.json");
  c.input.workload.recompute = Recompute::kFull;
  const auto planned = c.Run(PlanDataParallel);
  const PlannedCollective* fwd = FindPlanned(planned, "zero3_all_gather_fwd");
  const PlannedCollective* bwd = FindPlanned(planned, "zero3_all_gather_bwd");
  ASSERT_NE(fwd, nullptr);
  ASSERT_NE(bwd, nullptr);
  // q, k, v, o and 8 x (w1, w2, w3) per layer over 32 layers, plus the embedding and the head; the
  // router (4096 x 8) is under param_persistence_threshold. Forward and the recompute.
  const double calls = (4 + 8 * 3) * 32 + 1.0;
  EXPECT_DOUBLE_EQ(fwd->calls_per_unit, 2 * calls);
  // Layer order q, k, v, o, the experts: the last 9 expert weights (9 x 58.7M >= 5e8 needs the 9th)
  // stay gathered, the 15 before them and the attention are gathered again.
  const double expert = 14336.0 * 4096, attention = 2 * 4096.0 * 4096 + 2 * 4096.0 * 1024;
  EXPECT_NEAR(bwd->calls_per_unit, calls * (15 * expert + attention) / (24 * expert + attention), 1e-6);
  EXPECT_EQ(fwd->call.bytes_per_call, bwd->call.bytes_per_call);
}

// The host work of eager ZeRO-3's hooks (cluster host.zero3_fetch_seconds) is paid once per module
// fetched, on the gather stream: Llama's modules are its gathers; Mixtral's 8 experts are 24 more
// nn.Linear modules per layer. DeepCompile has no hooks.
TEST(DataParallelCommTest, ZeroThreeHooksAddTheirHostTimeOncePerFetchedModule) {
  const std::string config = R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3, "overlap_comm": true}})";
  auto gather_seconds = [&](const char* model, double host, bool deepcompile) {
    CommCase c(config, Sizes(8, 8), model);
    c.cluster.host.zero3_fetch_seconds = host;
    c.input.zero.deepcompile = deepcompile;
    const auto planned = c.Run(PlanDataParallel);
    return FindPlanned(planned, "zero3_all_gather_fwd")->seconds_per_unit;
  };
  EXPECT_NEAR(gather_seconds("llama-3-8b.json", 1e-3, false) - gather_seconds("llama-3-8b.json", 0, false),
              (7 * 32 + 1) * 1e-3, 1e-9);
  EXPECT_NEAR(gather_seconds("mixtral-8x7b.json", 1e-3, false) - gather_seconds("mixtral-8x7b.json", 0, false),
              ((4 + 8 * 3) * 32 + 1) * 1e-3, 1e-9);
  EXPECT_DOUBLE_EQ(gather_seconds("llama-3-8b.json", 1e-3, true), gather_seconds("llama-3-8b.json", 0, true));
}

TEST(DataParallelCommTest, MegatronDdpAllReducesTwentyFiveMegabyteBucketsBehindBackward) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})",
             Sizes(8, 8, 1, 1, RankLayout::kMegatron), "llama-3-8b.json", Engine::kMegatronLm);
  c.input.workload.gradient_bytes_per_element = 4;  // bf16 main_grad accumulates in fp32
  const auto planned = c.Run(PlanDataParallel);
  ASSERT_EQ(Purposes(planned), std::vector<std::string>{"dp_grad_reduce"});
  EXPECT_EQ(planned[0].schedule, CommSchedule::kBoundaryOverlap);
  EXPECT_DOUBLE_EQ(planned[0].calls_per_unit, std::ceil(kLlama8b / (2.5e7 / 4)));
}

// Every trainable parameter has a gradient DeepSpeed reduces (engine.py allreduce_gradients walks
// all of them): MLA's low-rank projections and their norms (DeepSeek-V2-Lite's kv_a_proj_with_mqa,
// kv_a_layernorm) and Gated DeltaNet's layers are reduced with the rest.
TEST(DataParallelCommTest, EveryParameterFamilyIsReduced) {
  for (const char* model : {"deepseek-v2-lite.json", "qwen3-next-80b-a3b-thinking.json"}) {
    CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
        "zero_optimization": {"stage": 1, "overlap_comm": true}})",
               Sizes(8, 8), model);
    const PlannedCollective* reduce = FindPlanned(c.Run(PlanDataParallel), "dp_grad_reduce");
    ASSERT_NE(reduce, nullptr) << model;
    const double total = static_cast<double>(ModelParamCounts(c.input).total);
    EXPECT_NEAR(reduce->call.bytes_per_call * reduce->calls_per_unit, 2 * total, 1e3) << model;
  }
}

}  // namespace
}  // namespace dsp::sim
