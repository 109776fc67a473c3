// SPDX-License-Identifier: Apache-2.0
// EstimateStageMemory under interleaved pipeline schedules: how many micro-batches a stage holds
// (Megatron-LM's forward_backward_pipelining_with_interleaving and torch's schedules.py
// _get_warmup_ops both cap the warm-up at every chunk micro-batch of the call) and, under FSDP2,
// whose unsharded gradients are live at that peak (torch/distributed/pipelining/stage.py
// backward_maybe_with_nosync reduces each chunk at its own last backward).
#include "tests/sim/cost/memory_test_util.h"

namespace dsp::sim {
namespace {

constexpr char kConfig[] =
    R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}})";

struct PipelineCase {
  Plan plan;
  ModelSpec model = dsp::testing::ParsePresetOrDie("llama-3-8b.json");
  Cluster cluster = testing::Gpu80GB();
  SimInput in;

  PipelineCase(Engine engine, int zero_stage, int virtual_stages, int64_t grad_accum) {
    Result<Plan> p = BuildPlan(Json::parse(kConfig), PlanInputs{.world_size = 8, .gpus_per_node = 8, .pp = 4});
    EXPECT_TRUE(p.ok()) << p.error().message;
    if (p.ok()) plan = *p;
    in.plan = &plan;
    in.model = &model;
    in.cluster = &cluster;
    in.zero = ReadZeroSettings(Json::parse(kConfig));
    in.zero.stage = zero_stage;
    in.workload.micro_batch = 1;
    in.workload.grad_accum = grad_accum;
    in.workload.seq_len = 4096;
    in.workload.gradient_bytes_per_element = 4;
    in.engine.engine = engine;
    in.engine.virtual_stages = virtual_stages;
  }

  // Micro-batches of the stage's layers its activations hold.
  double HeldMicroBatches(int stage) const {
    const MemoryReport r = EstimateStageMemory(in, stage);
    double layers = 0;
    for (double b : r.layer_activations_bytes) layers += b;
    return (r.activations_bytes - r.output_activations_bytes - r.stage_output_bytes) / layers;
  }
};

TEST(MemoryModelPipelineTest, InterleavedWarmUpStopsAtTheCallsChunkMicroBatches) {
  for (Engine engine : {Engine::kMegatronLm, Engine::kFsdp2}) {
    // 16 micro-batches: stage 0 warms up 2(p - 1) + (v - 1)p = 10 chunk micro-batches and holds
    // one more, 11 chunks of half the stage's layers.
    EXPECT_NEAR(PipelineCase(engine, 1, 2, 16).HeldMicroBatches(0), 5.5, 1e-9) << EngineName(engine);
    // 4 micro-batches (m = p): the warm-up is every one of the 8 chunk micro-batches, the stage's
    // layers for 4 micro-batches, what 1F1B holds too.
    EXPECT_NEAR(PipelineCase(engine, 1, 2, 4).HeldMicroBatches(0), 4.0, 1e-9) << EngineName(engine);
    EXPECT_NEAR(PipelineCase(engine, 1, 1, 4).HeldMicroBatches(0), 4.0, 1e-9) << EngineName(engine);
  }
  // torchtitan calls the schedule once per local batch: 16 micro-batches in calls of 4 are capped
  // as one call of 4.
  PipelineCase calls(Engine::kFsdp2, 1, 2, 16);
  calls.in.engine.pipeline_schedule_micro_batches = 4;
  EXPECT_NEAR(calls.HeldMicroBatches(0), 4.0, 1e-9);
}

// torch's rounds are m / max(1, m / p) micro-batches (schedules.py microbatches_per_round), p only
// when p divides m; the warm-up's (v - 1) term counts rounds, and fewer micro-batches than stages
// still interleave. Figures from replaying _get_warmup_ops for p = 4, v = 2.
TEST(MemoryModelPipelineTest, TorchRoundsAreTheCallsMicroBatchesOverItsRounds) {
  // m = 6: one round of 6. Stage 0: 2 x 3 + 6 + 1 = 13 chunks, capped at 12: 6 micro-batches;
  // stage 1: 2 x 2 + 6 + 1 = 11 chunks, 5.5.
  EXPECT_NEAR(PipelineCase(Engine::kFsdp2, 1, 2, 6).HeldMicroBatches(0), 6.0, 1e-9);
  EXPECT_NEAR(PipelineCase(Engine::kFsdp2, 1, 2, 6).HeldMicroBatches(1), 5.5, 1e-9);
  // m = 10: two rounds of 5; stage 0 warms up 6 + 5 = 11 and holds 12 chunks: 6.
  EXPECT_NEAR(PipelineCase(Engine::kFsdp2, 1, 2, 10).HeldMicroBatches(0), 6.0, 1e-9);
  // m = 2 < p: one round of 2; the last stage warms up 2 and holds 3 chunks, 1.5 micro-batches,
  // where 1F1B would hold one.
  EXPECT_NEAR(PipelineCase(Engine::kFsdp2, 1, 2, 2).HeldMicroBatches(3), 1.5, 1e-9);
  // Megatron-LM's groups are p whatever m is (its m must be at least p).
  EXPECT_NEAR(PipelineCase(Engine::kMegatronLm, 1, 2, 6).HeldMicroBatches(1), (4 + 4 + 1) / 2.0, 1e-9);
}

// torchtitan's Llama 3.1 405B on 512 H100 (benchmarks/llama3_h100_202412_torchtitan.md Table 5:
// FSDP 8, TP 8, PP 8, 8 micro-batches a step) reserved 82.5 GiB under 1F1B and 72.7 GiB under
// interleaved 1F1B: one round of the interleaved schedule finishes a chunk's backwards, and frees
// its gradients, before the rank's other chunk starts its own.
TEST(MemoryModelPipelineTest, Fsdp2InterleavedOneRoundHoldsOneChunksUnshardedGradients) {
  const auto buffers = [](int virtual_stages, int64_t grad_accum) {
    PipelineCase c(Engine::kFsdp2, 3, virtual_stages, grad_accum);
    return EstimateStageMemory(c.in, 1).zero_buffers_bytes;
  };
  // Stage 1 of 4 holds 8 of Llama-3-8B's 32 layers gathered (bf16) with their fp32 gradients.
  // q, k, v, o: 4096 x (4096 + 1024 + 1024 + 4096); the MLP: 3 x 4096 x 14336; two norms.
  const double layer = 218'120'192;
  const double grads_1f1b = buffers(1, 4) - buffers(2, 4);
  EXPECT_NEAR(grads_1f1b, 4.0 * 8 * layer / 2, 0.01 * 4.0 * 8 * layer / 2);
  // 7 micro-batches are still one round of 7; 8 are two rounds of 4: a chunk's backwards are spread
  // over both rounds and every chunk's gradients live together, as under 1F1B.
  EXPECT_NEAR(buffers(1, 7) - buffers(2, 7), grads_1f1b, 1e3);
  EXPECT_NEAR(buffers(2, 8), buffers(1, 8), 1e3);
}

// torch.distributed.pipelining keeps each forward's output in fwd_cache until that micro-batch's
// backward (stage.py forward_one_chunk): one hidden state of the micro-batch per chunk micro-batch
// in flight, none under Megatron's schedules (deallocate_output_tensor frees what was sent).
TEST(MemoryModelPipelineTest, TorchStagesKeepEachInFlightOutputUntilItsBackward) {
  const double hidden_state = 2.0 * 4096 * 4096;  // one sequence of 4096 tokens, bf16
  PipelineCase one(Engine::kFsdp2, 1, 1, 4), two(Engine::kFsdp2, 1, 2, 4);
  EXPECT_NEAR(EstimateStageMemory(one.in, 0).stage_output_bytes, 4 * hidden_state, 1);  // 4 micro-batches
  EXPECT_NEAR(EstimateStageMemory(two.in, 0).stage_output_bytes, 8 * hidden_state, 1);  // 8 chunk micro-batches
  // The last stage's last chunk returns the logits instead (counted with the loss).
  EXPECT_NEAR(EstimateStageMemory(two.in, 3).stage_output_bytes, (2.5 * 2 - 1) * hidden_state, 1);
  PipelineCase megatron(Engine::kMegatronLm, 1, 2, 4);
  EXPECT_DOUBLE_EQ(EstimateStageMemory(megatron.in, 0).stage_output_bytes, 0);
}

// NeMo AutoModel's MoE parallelizer wraps model.model, not the pipeline stage's module
// (components/moe/parallelizer.py apply_fsdp), so torch's stage runs a plain backward and FSDP's
// own hooks reduce-scatter every micro-batch: no unsharded gradients accumulate.
TEST(MemoryModelPipelineTest, AutoModelsPipelineAccumulatesNoUnshardedGradients) {
  PipelineCase torchtitan(Engine::kFsdp2, 3, 1, 4);
  PipelineCase automodel(Engine::kFsdp2, 3, 1, 4);
  automodel.in.engine.automodel_experts = true;
  const double accumulated = EstimateStageMemory(torchtitan.in, 1).zero_buffers_bytes -
                             EstimateStageMemory(automodel.in, 1).zero_buffers_bytes;
  const double stage = 8 * 218'120'192.0;  // 8 of Llama-3-8B's layers
  EXPECT_NEAR(accumulated, 4 * stage, 0.01 * 4 * stage);
}

}  // namespace
}  // namespace dsp::sim

namespace dsp::sim {
namespace {

// A pipeline stage keeps what each forward returned until that micro-batch's backward (torch's
// stage.py fwd_cache), the last stage's logits too: no freed logits' block is left cached, so
// what torchtitan's pipelined runs reserve is their allocated peak (docs/cost-model.md, "Reserved
// beyond allocated").
TEST(MemoryModelPipelineTest, APipelineStageLeavesNoLogitsCached) {
  PipelineCase c(Engine::kFsdp2, 3, 1, 4);
  const MemoryReport last = EstimateStageMemory(c.in, 3);
  EXPECT_GT(last.output_activations_bytes, 0);
  EXPECT_DOUBLE_EQ(last.loss_cached_bytes, 0);
  EXPECT_DOUBLE_EQ(last.reserved_peak_bytes, last.peak_bytes);
}

}  // namespace
}  // namespace dsp::sim
