// SPDX-License-Identifier: Apache-2.0
// EstimateMemory under the fsdp2 and megatron-lm engines' own behaviours: FSDP2's fp32 sharded
// parameters and gradients and its gathered groups (torch/distributed/fsdp/_fully_shard/
// _fsdp_param.py FSDPParam: sharded_param in the original dtype, unsharded_accumulated_grad in
// reduce_dtype; torchtitan v0.2.2 apply_fsdp), Megatron's distributed optimizer
// (docs/user-guide/features/dist_optimizer.md: bf16 parameters with fp32 gradients, 6 + 12/d bytes
// per parameter) and TransformerEngine's fp8 weight copies (transformer_engine/pytorch/module/
// linear.py weight_workspace).
#include <algorithm>

#include "sim/cost/param_sharding.h"
#include "tests/sim/cost/memory_test_util.h"

namespace dsp::sim {
namespace {

using testing::MemoryCase;
using testing::ModelStates;

constexpr double kLlama8b = 8'030'261'248;

TEST(MemoryModelEnginesTest, Fsdp2KeepsSixteenBytesPerParameterShardedAndNoBf16Copy) {
  MemoryCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})",
               8, "llama-3-8b.json");
  c.engine.engine = Engine::kFsdp2;
  c.workload.gradient_bytes_per_element = 4;  // reduce_dtype fp32
  const MemoryReport r = c.Run();
  EXPECT_DOUBLE_EQ(r.parameters_bytes, 0);  // the fp32 shard is the optimizer's master
  EXPECT_NEAR(r.gradients_bytes, 4 * kLlama8b / 8, 1e3);
  EXPECT_NEAR(r.optimizer_states_bytes, 12 * kLlama8b / 8, 1e3);
  EXPECT_NEAR(ModelStates(r), 16 * kLlama8b / 8, 1e3);
  // Gathered: two bf16 groups and the root lm_head, plus one group's bf16 gradient and its fp32
  // reduce-scatter input, a group counted as the largest (Llama-3-8B's embedding, 525 M elements).
  const double e = 128'256.0 * 4096;
  EXPECT_NEAR(r.zero_buffers_bytes, 2 * (2 * e + e) + (2 + 4) * e, 1e3);
}

TEST(MemoryModelEnginesTest, Fsdp2WithoutReshardHoldsTheWholeStageGathered) {
  MemoryCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 2}})",
               8, "llama-3-8b.json");
  c.engine.engine = Engine::kFsdp2;
  c.workload.gradient_bytes_per_element = 4;
  const MemoryReport r = c.Run();
  EXPECT_GT(r.zero_buffers_bytes, 2 * kLlama8b);  // every group's bf16 parameters
  EXPECT_LT(r.zero_buffers_bytes, 2 * kLlama8b + 6 * 1.1e9);
}

TEST(MemoryModelEnginesTest, MegatronDistributedOptimizerIsSixPlusTwelveOverDpBytes) {
  MemoryCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}})",
               8, "llama-3-8b.json");
  c.engine.engine = Engine::kMegatronLm;
  c.workload.gradient_bytes_per_element = 4;  // bf16 main_grad buffer in fp32
  const MemoryReport r = c.Run();
  EXPECT_NEAR(ModelStates(r), (6 + 12.0 / 8) * kLlama8b, 1e4);
}

TEST(MemoryModelEnginesTest, TransformerEngineFp8CachesTwoBytesPerLinearWeight) {
  MemoryCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}})",
               8, "llama-3-8b.json");
  c.engine.engine = Engine::kMegatronLm;
  EXPECT_DOUBLE_EQ(c.Run().fp8_weight_bytes, 0);
  c.engine.fp8 = true;
  // Llama-3-8B's linear weights: 32 layers x (q/k/v 4096 x 6144, o 4096 x 4096, MLP 3 x 4096 x 14336).
  const double linear = 32.0 * (4096.0 * 10240 + 3.0 * 4096 * 14336);
  EXPECT_NEAR(c.Run().fp8_weight_bytes, 2 * linear, 1e3);
  // torchao's Float8Linear casts on the fly: nothing cached.
  c.engine.engine = Engine::kFsdp2;
  EXPECT_DOUBLE_EQ(c.Run().fp8_weight_bytes, 0);
}

// Megatron-Core --fp8-param-gather (core_v0.13.0 fp8_utils.get_fp8_context wraps model construction
// in TransformerEngine's fp8_model_init): the GEMM weights are 1-byte Float8Tensors with no bf16
// copy, and on Hopper a 1-byte transpose beside (TE 2.2 float8_tensor.py Float8Tensor.update_usage).
TEST(MemoryModelEnginesTest, TransformerEngineFp8ParametersAreOneByteWithATranspose) {
  MemoryCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}})",
               8, "llama-3-8b.json");
  c.engine.engine = Engine::kMegatronLm;
  c.engine.fp8 = true;
  const double linear = 32.0 * (4096.0 * 10240 + 3.0 * 4096 * 14336);
  const MemoryReport cached = c.Run();
  c.engine.fp8_param_gather = true;
  const MemoryReport fp8_params = c.Run();
  EXPECT_NEAR(cached.parameters_bytes - fp8_params.parameters_bytes, linear, 1e3);  // 2 -> 1 byte
  EXPECT_NEAR(fp8_params.fp8_weight_bytes, linear, 1e3);                              // the transpose
  EXPECT_NEAR(cached.gradients_bytes, fp8_params.gradients_bytes, 1e3);
}

// torchao float8 with enable_fsdp_float8_all_gather (v0.12.0 fsdp_utils.py
// WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather / fsdp_post_all_gather): the gathered linear
// weights are float8, so FSDP2's unsharded groups hold them at 1 byte; the root lm_head stays bf16.
TEST(MemoryModelEnginesTest, Fsdp2Float8AllGatherHoldsGatheredLinearWeightsInOneByte) {
  MemoryCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 2}})",
               8, "llama-3-8b.json");
  c.engine.engine = Engine::kFsdp2;
  c.workload.gradient_bytes_per_element = 4;
  c.engine.fp8 = true;
  const MemoryReport bf16_gather = c.Run();
  c.engine.fp8_param_gather = true;
  const MemoryReport fp8_gather = c.Run();
  const double linear = 32.0 * (4096.0 * 10240 + 3.0 * 4096 * 14336);
  // No reshard: the whole stage stays gathered, its linear weights 1 byte lighter each.
  EXPECT_NEAR(bf16_gather.zero_buffers_bytes - fp8_gather.zero_buffers_bytes, linear, 1e6);
}

// Megatron-Core's MoE layer (core_v0.12.0 moe_layer.py, experts.py): the shared expert is a
// SharedExpertMLP on the dense TP group's parallel linears, each routed expert is split over the
// etp ranks of its EP slot (GroupedMLP weight1 columns / weight2 rows), the router is replicated.
// AutoEP keeps the shared expert whole on every TP rank (auto_ep_folding.py).
TEST(MemoryModelEnginesTest, MegatronSplitsTheSharedExpertOverTpAndRoutedExpertsOverEpTimesEtp) {
  MemoryCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}})",
               8, "qwen2-moe-a2.7b.json");
  PlanInputs in;
  in.world_size = 8;
  in.gpus_per_node = 8;
  in.mpu_tp = 2;
  in.ep = 2;
  in.etp = 2;
  in.layout = RankLayout::kMegatron;
  c.plan = BuildPlan(Json::parse(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}})"), in)
               .value();
  c.engine.engine = Engine::kMegatronLm;
  c.engine.megatron_sp = true;
  SimInput input;
  input.plan = &c.plan;
  input.model = &c.model;
  input.engine = c.engine;
  EXPECT_DOUBLE_EQ(ShardDivisorOf(ParamFamily::kSharedExperts, input), 2);  // tp
  EXPECT_DOUBLE_EQ(ShardDivisorOf(ParamFamily::kRoutedExperts, input), 4);  // ep x etp
  EXPECT_DOUBLE_EQ(ShardDivisorOf(ParamFamily::kRouter, input), 1);
  input.engine.engine = Engine::kDeepSpeed;  // AutoEP folding: the shared expert whole
  EXPECT_DOUBLE_EQ(ShardDivisorOf(ParamFamily::kSharedExperts, input), 1);
}

}  // namespace
}  // namespace dsp::sim

namespace dsp::sim {
namespace {

// The output layer's activations are one micro-batch's on the last stage, interleaved or not: its
// last model chunk runs each micro-batch's backward right after the forward (Megatron's
// forward_backward_pipelining_with_interleaving warms up the earlier chunks only), so only the
// stage's layers are held for several micro-batches.
TEST(MemoryModelEnginesTest, InterleavedLastStageHoldsOneMicroBatchOfLogits) {
  const std::string config =
      R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 16, "bf16": {"enabled": true},
          "zero_optimization": {"stage": 1}})";
  Result<Plan> plan = BuildPlan(Json::parse(config), PlanInputs{.world_size = 4, .gpus_per_node = 8, .pp = 4});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ModelSpec model = dsp::testing::ParsePresetOrDie("llama-3-8b.json");
  const Cluster cluster = testing::Gpu80GB();
  SimInput in;
  in.plan = &*plan;
  in.model = &model;
  in.cluster = &cluster;
  in.zero = ReadZeroSettings(Json::parse(config));
  in.workload.micro_batch = 1;
  in.workload.grad_accum = 16;
  in.workload.seq_len = 4096;
  in.engine.engine = Engine::kMegatronLm;
  in.engine.virtual_stages = 2;
  const MemoryReport last = EstimateStageMemory(in, 3);
  ASSERT_GT(last.output_activations_bytes, 0);
  double layers = 0;
  for (double b : last.layer_activations_bytes) layers += b;
  // Stage 3 of 4 with 2 chunks holds p + (p - 2s - 1) / v = 4 - 3 / 2 = 2.5 micro-batches of its layers.
  EXPECT_NEAR(last.activations_bytes, 2.5 * layers + last.output_activations_bytes, 1e3);
}

}  // namespace
}  // namespace dsp::sim

namespace dsp::sim {
namespace {

// torchtitan's loop frees its 16-bit logits before backward (train.py at 9dec370: `del pred`), and
// the loss's fp32 gradients are too large for their cached block: the caching allocator holds it
// beside the loss's peak (docs/cost-model.md, "Reserved beyond allocated"). transformers' models
// return their logits, which stay alive through backward: nothing is left over.
TEST(MemoryModelEnginesTest, TorchtitansFreedLogitsStayReservedBesideTheLossPeak) {
  MemoryCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})",
               8, "llama-3-8b.json");
  c.engine.engine = Engine::kFsdp2;
  c.workload.gradient_bytes_per_element = 4;
  const MemoryReport fsdp2 = c.Run();
  const double logits = 4096.0 * 128'256;
  EXPECT_NEAR(fsdp2.loss_cached_bytes, 2 * logits, 4e6);
  EXPECT_NEAR(fsdp2.reserved_peak_bytes - fsdp2.peak_bytes, 2 * logits, 4e6);
  c.engine.expandable_segments = true;  // the hole is in the middle of the segment: the same
  EXPECT_NEAR(c.Run().reserved_peak_bytes - fsdp2.peak_bytes, 2 * logits, 25e6);
  // The verdict stays on what is allocated: a failed cudaMalloc frees cached blocks and retries.
  c.engine.expandable_segments = false;
  c.cluster.gpu.hbm_bytes = fsdp2.peak_bytes + fsdp2.allowance_bytes + 1e6;
  EXPECT_TRUE(c.Run().fits);

  // Full recompute: the loss's own peak is below the peak, and what is reserved is the larger of
  // the peak and the loss's peak with its cached block.
  c.cluster.gpu.hbm_bytes = 80e9;
  c.workload.recompute = Recompute::kFull;
  const MemoryReport full = c.Run();
  EXPECT_LE(full.loss_peak_bytes, full.peak_bytes);
  EXPECT_DOUBLE_EQ(full.reserved_peak_bytes,
                   std::max(full.peak_bytes, full.loss_peak_bytes + full.loss_cached_bytes));
  EXPECT_GT(full.reserved_peak_bytes, full.peak_bytes);  // at 4K tokens the logits outweigh a layer
  c.workload.recompute = Recompute::kNone;

  c.engine.engine = Engine::kDeepSpeed;
  c.workload.gradient_bytes_per_element = 0;
  const MemoryReport deepspeed = c.Run();
  EXPECT_DOUBLE_EQ(deepspeed.loss_cached_bytes, 0);
  EXPECT_DOUBLE_EQ(deepspeed.reserved_peak_bytes, deepspeed.peak_bytes);
}

}  // namespace
}  // namespace dsp::sim
