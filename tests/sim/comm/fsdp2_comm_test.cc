// SPDX-License-Identifier: Apache-2.0
// PlanFsdp2: PyTorch FSDP2 as torchtitan runs it. torchtitan v0.2.2
// torchtitan/models/llama3/infra/parallelize.py apply_fsdp wraps tok_embeddings, every block and
// [norm, output] in their own fully_shard groups with MixedPrecisionPolicy(param_dtype=bf16,
// reduce_dtype=fp32) and reshard_after_forward = not pp_enabled ("default"), [norm, output] never
// resharded; torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py gathers a group before its
// forward (and backward when resharded) and _fsdp_collectives.py foreach_reduce reduce-scatters
// its gradients in reduce_dtype; torch/distributed/pipelining/stage.py backward_maybe_with_nosync
// leaves the reduce-scatter to the end of the step under a pipeline.
#include "tests/sim/comm/comm_test_util.h"

namespace dsp::sim {
namespace {

using testing::CommCase;
using testing::FindPlanned;
using testing::Purposes;
using testing::Sizes;

constexpr double kLlama8b = 8'030'261'248;  // samples/models/llama-3-8b.json, untied embedding
constexpr double kLmHead = 128'256.0 * 4096;

CommCase& Fsdp2(CommCase& c) {
  c.input.workload.gradient_bytes_per_element = 4;  // reduce_dtype fp32 (Fp32GradientBuffer)
  return c;
}

TEST(Fsdp2CommTest, FullShardGathersEachBlockInBf16TwiceAndReduceScattersItInFp32) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})",
             Sizes(8, 8, 1, 1, RankLayout::kMegatron), "llama-3-8b.json", Engine::kFsdp2);
  const auto planned = Fsdp2(c).Run(PlanDataParallel);
  ASSERT_EQ(Purposes(planned),
            (std::vector<std::string>{"fsdp_all_gather_fwd", "fsdp_all_gather_bwd", "fsdp_reduce_scatter"}));
  const double groups = 32 + 2;  // 32 blocks, tok_embeddings, [norm, output]
  const PlannedCollective& fwd = planned[0];
  EXPECT_EQ(fwd.call.kind, CollectiveKind::kAllGather);
  EXPECT_EQ(fwd.schedule, CommSchedule::kForwardOverlap);
  EXPECT_DOUBLE_EQ(fwd.calls_per_unit, groups);
  EXPECT_NEAR(fwd.call.bytes_per_call * groups, 2 * kLlama8b, 1e3);  // every parameter, bf16
  // Backward regathers all but the root group, whose lm_head stays gathered.
  EXPECT_DOUBLE_EQ(planned[1].calls_per_unit, groups - 1);
  EXPECT_NEAR(planned[1].call.bytes_per_call * (groups - 1), 2 * (kLlama8b - kLmHead), 1e3);
  const PlannedCollective& rs = planned[2];
  EXPECT_EQ(rs.call.kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(rs.schedule, CommSchedule::kBackwardOverlap);  // every micro-batch
  EXPECT_NEAR(rs.call.bytes_per_call * groups, 4 * kLlama8b, 1e3);  // fp32
  EXPECT_EQ(rs.call.group_size, 8);
}

TEST(Fsdp2CommTest, ZeroTwoKeepsTheGatheredParametersForBackward) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 2}})",
             Sizes(8, 8, 1, 1, RankLayout::kMegatron), "llama-3-8b.json", Engine::kFsdp2);
  const auto planned = Fsdp2(c).Run(PlanDataParallel);
  EXPECT_EQ(Purposes(planned), (std::vector<std::string>{"fsdp_all_gather_fwd", "fsdp_reduce_scatter"}));
}

TEST(Fsdp2CommTest, UnderAPipelineGathersAndReducesOncePerStep) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})",
             Sizes(16, 8, 2, 1, RankLayout::kMegatron), "llama-3-8b.json", Engine::kFsdp2);
  c.input.workload.grad_accum = 8;
  const auto planned = Fsdp2(c).Run(PlanDataParallel);
  ASSERT_EQ(Purposes(planned), (std::vector<std::string>{"fsdp_all_gather_fwd", "fsdp_reduce_scatter"}));
  EXPECT_EQ(planned[0].schedule, CommSchedule::kBoundaryOverlap);
  EXPECT_EQ(planned[1].schedule, CommSchedule::kBoundaryOverlap);
  EXPECT_DOUBLE_EQ(planned[1].call.calls_per_step, 16 + 1);  // 16 blocks and one outside group, once
}

TEST(Fsdp2CommTest, ShardsOverDataAndContextParallelRanks) {
  PlanInputs sizes = Sizes(16, 8, 1, 1, RankLayout::kMegatron);
  sizes.cp = 2;
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})",
             sizes, "llama-3-8b.json", Engine::kFsdp2);
  const auto planned = Fsdp2(c).Run(PlanDataParallel);
  const PlannedCollective* rs = FindPlanned(planned, "fsdp_reduce_scatter");
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(rs->call.group, GroupKind::kSpDp);  // dp_shard x cp
  EXPECT_EQ(rs->call.group_size, 16);
}

// megatron/core/distributed/param_and_grad_buffer.py: with use_distributed_optimizer a bucket's
// gradients are reduce-scattered (start_grad_sync) and the parameters all-gathered
// (start_param_sync) over the data-parallel group with context parallelism folded in
// (distributed_data_parallel.py intra_dp_cp_group); bf16 gradients accumulate in fp32.
TEST(Fsdp2CommTest, MegatronDistributedOptimizerReduceScattersFp32AndGathersBf16OverDpTimesCp) {
  PlanInputs sizes = Sizes(16, 8, 1, 1, RankLayout::kMegatron);
  sizes.cp = 2;
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}})",
             sizes, "llama-3-8b.json", Engine::kMegatronLm);
  c.input.workload.gradient_bytes_per_element = 4;
  const auto planned = c.Run(PlanDataParallel);
  const PlannedCollective* rs = FindPlanned(planned, "dp_grad_reduce");
  const PlannedCollective* ag = FindPlanned(planned, "dist_opt_param_all_gather");
  ASSERT_NE(rs, nullptr);
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(rs->call.kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(rs->call.group_size, 16);
  EXPECT_NEAR(rs->call.bytes_per_call * rs->calls_per_unit, 4 * kLlama8b, 1e3);
  EXPECT_NEAR(ag->call.bytes_per_call * ag->calls_per_unit, 2 * kLlama8b, 1e3);
  // Without the distributed optimizer (stage 0): one all-reduce per bucket, no gather.
  CommCase ddp(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", sizes, "llama-3-8b.json",
               Engine::kMegatronLm);
  const auto plain = ddp.Run(PlanDataParallel);
  EXPECT_EQ(FindPlanned(plain, "dp_grad_reduce")->call.kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(FindPlanned(plain, "dist_opt_param_all_gather"), nullptr);
}

// torchao v0.12.0 float8/fsdp_utils.py WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather: with
// enable_fsdp_float8_all_gather each linear weight's shard is cast to float8 and its 1-byte data
// gathered; embeddings, norms and the output projection stay bf16. One amax all-reduce per step
// (precompute_float8_dynamic_scale_for_fsdp).
TEST(Fsdp2CommTest, Float8AllGatherMovesLinearWeightsInOneByte) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})",
             Sizes(8, 8, 1, 1, RankLayout::kMegatron), "llama-3-8b.json", Engine::kFsdp2);
  c.input.engine.fp8 = true;
  c.input.engine.fp8_param_gather = true;
  const auto planned = Fsdp2(c).Run(PlanDataParallel);
  const PlannedCollective* fwd = FindPlanned(planned, "fsdp_all_gather_fwd");
  ASSERT_NE(fwd, nullptr);
  const double linear = 32.0 * (4096.0 * 10240 + 3.0 * 4096 * 14336);
  EXPECT_NEAR(fwd->call.bytes_per_call * fwd->calls_per_unit, 2 * kLlama8b - linear, 1e3);
  const PlannedCollective* amax = FindPlanned(planned, "fsdp_float8_amax_all_reduce");
  ASSERT_NE(amax, nullptr);
  EXPECT_EQ(amax->schedule, CommSchedule::kStepExposed);
}

// Megatron-Core --fp8-param-gather (core_v0.13.0 param_and_grad_buffer.py points each Float8Tensor at
// a uint8 bucket): the distributed optimizer all-gathers the GEMM weights at 1 byte.
TEST(Fsdp2CommTest, MegatronFp8ParamGatherMovesGemmWeightsInOneByte) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}})",
             Sizes(8, 8, 1, 1, RankLayout::kMegatron), "llama-3-8b.json", Engine::kMegatronLm);
  c.input.workload.gradient_bytes_per_element = 4;
  c.input.engine.fp8 = true;
  c.input.engine.fp8_param_gather = true;
  const auto planned = c.Run(PlanDataParallel);
  const PlannedCollective* ag = FindPlanned(planned, "dist_opt_param_all_gather");
  ASSERT_NE(ag, nullptr);
  const double linear = 32.0 * (4096.0 * 10240 + 3.0 * 4096 * 14336);
  EXPECT_NEAR(ag->call.bytes_per_call * ag->calls_per_unit, 2 * kLlama8b - linear, 1e3);
  // Two pipeline stages: each gathers its half, the linear weights still at 1 byte.
  CommCase staged(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}})",
                  Sizes(16, 8, 2, 1, RankLayout::kMegatron), "llama-3-8b.json", Engine::kMegatronLm);
  staged.input.workload.gradient_bytes_per_element = 4;
  staged.input.engine.fp8 = true;
  staged.input.engine.fp8_param_gather = true;
  const PlannedCollective* half = FindPlanned(staged.Run(PlanDataParallel), "dist_opt_param_all_gather");
  ASSERT_NE(half, nullptr);
  EXPECT_NEAR(half->call.bytes_per_call * half->calls_per_unit, (2 * kLlama8b - linear) / 2, 1e3);
  // A MoE model without --ep: the routed experts are GEMM weights too, gathered at 1 byte.
  CommCase moe(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}})",
               Sizes(8, 8, 1, 1, RankLayout::kMegatron), "mixtral-8x7b.json", Engine::kMegatronLm);
  moe.input.engine.fp8 = true;
  const auto bf16_planned = moe.Run(PlanDataParallel);
  moe.input.engine.fp8_param_gather = true;
  const auto fp8_planned = moe.Run(PlanDataParallel);
  const PlannedCollective* bf16_moe = FindPlanned(bf16_planned, "dist_opt_param_all_gather");
  const PlannedCollective* fp8_moe = FindPlanned(fp8_planned, "dist_opt_param_all_gather");
  ASSERT_NE(bf16_moe, nullptr);
  ASSERT_NE(fp8_moe, nullptr);
  const double experts = 32.0 * 8 * 3 * 4096 * 14336;  // Mixtral's routed experts
  EXPECT_GT(bf16_moe->call.bytes_per_call * bf16_moe->calls_per_unit - fp8_moe->call.bytes_per_call * fp8_moe->calls_per_unit,
            experts);
}

}  // namespace
}  // namespace dsp::sim
