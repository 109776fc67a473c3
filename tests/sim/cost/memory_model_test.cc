// SPDX-License-Identifier: Apache-2.0
// Model-state memory (ZeRO paper Table 1 / Fig. 1, DeepSpeed's estimators, offload) and the whole
// per-rank memory model on real presets: Mixtral with AutoEP, Ulysses, Llama-3-70B fit verdicts,
// and the worked example of docs/cost-model.md.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/cost/model_states.h"
#include "tests/sim/cost/memory_test_util.h"

namespace dsp::sim {
namespace {

using testing::MemoryCase;
using testing::ModelStates;

ZeroSettings Stage(int stage) {
  ZeroSettings z;
  z.stage = stage;
  return z;
}

double RoundGb(double bytes) { return std::round(bytes / 1e8) / 10; }

// ZeRO paper (Rajbhandari et al. 2020) Fig. 1 / Table 1: 7.5B parameters, N_d = 64, K = 12.
TEST(ModelStateMemoryTest, ZeroPaperTable1) {
  const double psi = 7.5e9;
  const MemoryConvention paper = MemoryConvention::kZeroPaper;
  ModelStateBytes s0 = ModelStatesPerRank(psi, 64, Stage(0), paper);
  ModelStateBytes s1 = ModelStatesPerRank(psi, 64, Stage(1), paper);
  ModelStateBytes s2 = ModelStatesPerRank(psi, 64, Stage(2), paper);
  ModelStateBytes s3 = ModelStatesPerRank(psi, 64, Stage(3), paper);
  EXPECT_DOUBLE_EQ(s0.gpu_bytes(), 120e9);          // (2 + 2 + K)Ψ
  EXPECT_DOUBLE_EQ(s1.gpu_bytes(), 31.40625e9);     // 4Ψ + KΨ/N
  EXPECT_DOUBLE_EQ(s2.gpu_bytes(), 16.640625e9);    // 2Ψ + (2 + K)Ψ/N
  EXPECT_DOUBLE_EQ(s3.gpu_bytes(), 1.875e9);        // (2 + 2 + K)Ψ/N
  EXPECT_DOUBLE_EQ(RoundGb(s0.gpu_bytes()), 120.0);
  EXPECT_DOUBLE_EQ(RoundGb(s1.gpu_bytes()), 31.4);
  EXPECT_DOUBLE_EQ(RoundGb(s2.gpu_bytes()), 16.6);
  EXPECT_DOUBLE_EQ(RoundGb(s3.gpu_bytes()), 1.9);
  // Which state is partitioned at which stage.
  EXPECT_DOUBLE_EQ(s1.parameters_bytes, 15e9);
  EXPECT_DOUBLE_EQ(s1.gradients_bytes, 15e9);
  EXPECT_DOUBLE_EQ(s1.optimizer_states_bytes, 1.40625e9);
  EXPECT_DOUBLE_EQ(s2.gradients_bytes, 0.234375e9);
  EXPECT_DOUBLE_EQ(s3.parameters_bytes, 0.234375e9);
  EXPECT_DOUBLE_EQ(s0.cpu_bytes + s1.cpu_bytes + s2.cpu_bytes + s3.cpu_bytes, 0);
}

// estimate_zero2_model_states_mem_needs / estimate_zero3_model_states_mem_needs at edaa722, for
// 7.5B parameters on 8 nodes of 8 GPUs (host figures are theirs per node / 8 GPUs per node).
TEST(ModelStateMemoryTest, DeepSpeedEstimatorConventions) {
  const double psi = 7.5e9, largest_layer = 1e8;
  const MemoryConvention ds = MemoryConvention::kDeepSpeedEstimator;
  // ZeRO-1/2 without offload: gpu_mem = 2Ψ + 18Ψ/N; stage 1 is the same estimator.
  EXPECT_DOUBLE_EQ(ModelStatesPerRank(psi, 64, Stage(2), ds).gpu_bytes(), 2 * psi + 18 * psi / 64);
  EXPECT_DOUBLE_EQ(ModelStatesPerRank(psi, 64, Stage(1), ds).gpu_bytes(), 17.109375e9);
  // With cpu_offload: gpu_mem = 2Ψ.
  ZeroSettings off = Stage(2);
  off.offload_optimizer = true;
  ModelStateBytes z2off = ModelStatesPerRank(psi, 64, off, ds);
  EXPECT_DOUBLE_EQ(z2off.gpu_bytes(), 2 * psi);
  EXPECT_DOUBLE_EQ(z2off.cpu_bytes, 18 * psi / 64 * 1.5);
  // ZeRO-3: largest_layer_memory + 18Ψ/N; 2Ψ/N with optimizer offload; nothing with both.
  ModelStateBytes z3 = ModelStatesPerRank(psi, 64, Stage(3), ds);
  EXPECT_DOUBLE_EQ(z3.gpu_bytes() + DeepSpeedZero3LayerBytes(largest_layer), 4e8 + 18 * psi / 64);
  ZeroSettings z3opt = Stage(3);
  z3opt.offload_optimizer = true;
  ModelStateBytes a = ModelStatesPerRank(psi, 64, z3opt, ds);
  EXPECT_DOUBLE_EQ(a.gpu_bytes(), 2 * psi / 64);
  EXPECT_DOUBLE_EQ(a.cpu_bytes, psi * 16 / 8 * 1.5 / 8);  // total_params * 16 * gpus_factor * 1.5
  z3opt.offload_param = true;
  ModelStateBytes both = ModelStatesPerRank(psi, 64, z3opt, ds);
  EXPECT_DOUBLE_EQ(both.gpu_bytes(), 0);
  EXPECT_DOUBLE_EQ(both.cpu_bytes, psi * 18 / 8 * 1.5 / 8);
  // No DeepSpeed estimator exists for stage 0: the stage-2 formula at N = 1.
  EXPECT_DOUBLE_EQ(ModelStatesPerRank(psi, 64, Stage(0), ds).gpu_bytes(), 20 * psi);
}

TEST(ModelStateMemoryTest, OffloadMovesStatesToHost) {
  const double psi = 8e9;
  const MemoryConvention paper = MemoryConvention::kZeroPaper;
  ZeroSettings z = Stage(1);
  z.offload_optimizer = true;
  // Stage 1: the full 16-bit gradients stay; optimizer states and the fp32 gradient partition go.
  ModelStateBytes s1 = ModelStatesPerRank(psi, 8, z, paper);
  EXPECT_DOUBLE_EQ(s1.gpu_bytes(), 4 * psi);
  EXPECT_DOUBLE_EQ(s1.cpu_bytes, (12 + 4) * psi / 8);
  z.stage = 2;  // the reduced gradient partition goes straight to the host
  EXPECT_DOUBLE_EQ(ModelStatesPerRank(psi, 8, z, paper).gpu_bytes(), 2 * psi);
  z.stage = 3;
  z.offload_ratio = 0.25;  // partial offload: a quarter of the optimizer (and its gradients)
  ModelStateBytes part = ModelStatesPerRank(psi, 8, z, paper);
  EXPECT_DOUBLE_EQ(part.optimizer_states_bytes, 0.75 * 12 * psi / 8);
  EXPECT_DOUBLE_EQ(part.gradients_bytes, 0.75 * 2 * psi / 8);
  EXPECT_DOUBLE_EQ(part.cpu_bytes, 0.25 * 16 * psi / 8);
  z.offload_ratio = 1;
  z.offload_param = true;
  ModelStateBytes all = ModelStatesPerRank(psi, 8, z, paper);
  EXPECT_DOUBLE_EQ(all.gpu_bytes(), 0);
  EXPECT_DOUBLE_EQ(all.cpu_bytes, (2 + 12 + 4) * psi / 8);
  // offload_param does nothing below stage 3, offload_optimizer nothing at stage 0.
  ZeroSettings below = Stage(2);
  below.offload_param = true;
  EXPECT_DOUBLE_EQ(ModelStatesPerRank(psi, 8, below, paper).parameters_bytes, 2 * psi);
  ZeroSettings zero0 = Stage(0);
  zero0.offload_optimizer = true;
  EXPECT_DOUBLE_EQ(ModelStatesPerRank(psi, 8, zero0, paper).gpu_bytes(), 16 * psi);
}

// docs/cost-model.md, "Memory", worked example: Llama-3-8B on one node of 8 x 80 GB, ZeRO-2,
// s = 4096, micro-batch 1, selective recompute.
TEST(MemoryModelTest, WorkedExampleLlama3_8BZero2) {
  MemoryCase c(R"({"zero_optimization": {"stage": 2}})", 8, "llama-3-8b.json");
  c.workload.seq_len = 4096;
  c.workload.recompute = Recompute::kSelective;
  MemoryReport r = c.Run();
  const double psi = 8'030'261'248;
  EXPECT_EQ(r.zero_group_size, 8);
  EXPECT_DOUBLE_EQ(r.parameters_bytes, 2 * psi);            // 16,060,522,496
  EXPECT_DOUBLE_EQ(r.gradients_bytes, 2 * psi / 8);         //  2,007,565,312
  EXPECT_DOUBLE_EQ(r.optimizer_states_bytes, 12 * psi / 8); // 12,045,391,872
  ASSERT_EQ(r.layer_activations_bytes.size(), 32u);
  // transformers' modules, per token: the q/k/v input 2h, Q, K, V and the attention output
  // 2(4096 + 1024 + 1024 + 4096), o_proj's contiguous input 2 x 4096, the two LlamaRMSNorms'
  // fp32 inputs and the bf16 tensors their weights multiply 2 x 6h, the MLP input 2h and four
  // ffn-wide tensors 4 x 2 x 14336, and FlashAttention's fp32 softmax statistics 4a (no scores):
  // 209,024 bytes.
  constexpr double kT = 4096, kH = 4096;
  EXPECT_EQ(kT * (2 * kH + 2 * 10240 + 2 * 4096 + 12 * kH + 2 * kH + 8 * 14336 + 4 * 32), 856'162'304);
  EXPECT_DOUBLE_EQ(r.layer_activations_bytes[0], 856'162'304);
  // Output: the final norm's 6h and lm_head's input (8h), and 14 bytes per logit at the loss's
  // backward (bf16 logits, fp32 log_softmax output, nll's and log_softmax's fp32 gradients).
  EXPECT_DOUBLE_EQ(r.output_activations_bytes, kT * (8 * kH + 14 * 128256.0));  // 7,488,929,792
  EXPECT_DOUBLE_EQ(r.activations_bytes, 32 * 856'162'304.0 + 7'488'929'792);   // 34,886,123,520
  EXPECT_DOUBLE_EQ(r.buffers_bytes, 1e9);  // one 5e8-element bf16 reduce bucket (overlap_comm off)
  EXPECT_DOUBLE_EQ(r.peak_bytes, 65'999'603'200);
  EXPECT_TRUE(r.fits);
  EXPECT_DOUBLE_EQ(r.by_family[ParamFamily::kEmbedding].parameters_bytes, 2.0 * 128256 * 4096);
  EXPECT_DOUBLE_EQ(r.by_family[ParamFamily::kRouter].parameters_bytes, 0);
}

// Mixtral-8x7B, AutoEP ep = 4 on 8 GPUs: dense families over dp = 8, experts over edp = 2.
TEST(MemoryModelTest, MixtralExpertParallelPerFamily) {
  MemoryCase c(R"({"zero_optimization": {"stage": 1},
                   "expert_parallel": {"enabled": true, "autoep_size": 4}})",
               8, "mixtral-8x7b.json");
  MemoryReport r = c.Run();
  EXPECT_EQ(r.zero_group_size, 8);
  EXPECT_EQ(r.expert_zero_group_size, 2);
  const double experts = 32.0 * 8 * 3 * 4096 * 14336 / 4;  // 2 of 8 experts per rank
  const double attention = 32.0 * 41'943'040, router = 32.0 * 8 * 4096;
  const FamilyMemory& e = r.by_family[ParamFamily::kRoutedExperts];
  EXPECT_DOUBLE_EQ(e.parameters_bytes, 2 * experts);  // 22,548,578,304
  EXPECT_DOUBLE_EQ(e.gradients_bytes, 2 * experts);
  EXPECT_DOUBLE_EQ(e.optimizer_states_bytes, 12 * experts / 2);
  const FamilyMemory& a = r.by_family[ParamFamily::kAttention];
  EXPECT_DOUBLE_EQ(a.parameters_bytes, 2 * attention);
  EXPECT_DOUBLE_EQ(a.optimizer_states_bytes, 12 * attention / 8);
  EXPECT_DOUBLE_EQ(r.by_family[ParamFamily::kRouter].optimizer_states_bytes, 12 * router / 8);
  EXPECT_DOUBLE_EQ(r.by_family[ParamFamily::kLmHead].parameters_bytes, 2.0 * 32000 * 4096);
  EXPECT_DOUBLE_EQ(r.by_family[ParamFamily::kDenseMlp].parameters_bytes, 0);

  // ZeRO-2 partitions the expert gradients over edp too.
  c.zero.stage = 2;
  EXPECT_DOUBLE_EQ(c.Run().by_family[ParamFamily::kRoutedExperts].gradients_bytes, 2 * experts / 2);

  // EP dispatch buffers: send + receive of T·k rows of h 16-bit values (s = 4096, b = 1).
  EXPECT_DOUBLE_EQ(r.all_to_all_bytes, 2 * 2 * (4096.0 * 2) * 4096);
}

// samples/configs/folding-tp2-ep4.json: AutoTP 2 x AutoEP 4 on 8 GPUs, ZeRO-1.
TEST(MemoryModelTest, MixtralFoldingTp2Ep4) {
  MemoryCase c(R"({"zero_optimization": {"stage": 1},
                   "tensor_parallel": {"autotp_size": 2},
                   "expert_parallel": {"enabled": true, "autoep_size": 4}})",
               8, "mixtral-8x7b.json");
  MemoryReport r = c.Run();
  EXPECT_EQ(r.zero_group_size, 4);
  EXPECT_EQ(r.expert_zero_group_size, 2);
  const double experts = 32.0 * 8 * 3 * 4096 * 14336 / 4, attention = 32.0 * 41'943'040 / 2;
  EXPECT_DOUBLE_EQ(r.by_family[ParamFamily::kRoutedExperts].parameters_bytes, 2 * experts);
  EXPECT_DOUBLE_EQ(r.by_family[ParamFamily::kRoutedExperts].optimizer_states_bytes, 12 * experts / 2);
  EXPECT_DOUBLE_EQ(r.by_family[ParamFamily::kAttention].optimizer_states_bytes, 12 * attention / 4);
  EXPECT_DOUBLE_EQ(r.by_family[ParamFamily::kNorm].parameters_bytes, 2.0 * (32 * 2 * 4096 + 4096));
  // AutoTP training leaves the embedding whole (nn.Embedding is never replaced).
  EXPECT_DOUBLE_EQ(r.by_family[ParamFamily::kEmbedding].parameters_bytes, 2.0 * 32000 * 4096);
}

// Ulysses sp = 4 on 8 GPUs: activations of every layer / 4; ZeRO over dp·sp = 8, as with sp = 1.
TEST(MemoryModelTest, UlyssesDividesActivations) {
  MemoryCase one(R"({"zero_optimization": {"stage": 2}})", 8, "llama-3-8b.json");
  MemoryCase four(R"({"zero_optimization": {"stage": 2}, "sequence_parallel_size": 4})", 8,
                  "llama-3-8b.json");
  MemoryReport a = one.Run(), b = four.Run();
  EXPECT_EQ(b.zero_group_size, 8);
  EXPECT_DOUBLE_EQ(ModelStates(b), ModelStates(a));
  EXPECT_DOUBLE_EQ(b.layer_activations_bytes[0], a.layer_activations_bytes[0] / 4);
  EXPECT_DOUBLE_EQ(b.activations_bytes, a.activations_bytes / 4);
  // q/k/v all-to-all: send + receive of 1024 tokens x (32 + 2 x 8) heads x 128, 16-bit.
  EXPECT_DOUBLE_EQ(b.all_to_all_bytes, 2 * 2 * 1024.0 * 48 * 128);
  EXPECT_DOUBLE_EQ(a.all_to_all_bytes, 0);
}

// Llama-3-70B (70,553,706,496 parameters), s = 4096, b = 1, full recompute, 80 GB GPUs.
TEST(MemoryModelTest, Llama3_70BFitVerdicts) {
  const double psi = 70'553'706'496;
  auto run = [](const std::string& zero, int64_t world) {
    MemoryCase c(R"({"zero_optimization": )" + zero + "}", world, "llama-3-70b.json");
    c.workload.seq_len = 4096;
    c.workload.recompute = Recompute::kFull;
    return c.Run();
  };
  // 8 GPUs. ZeRO-1: 4Ψ + 12Ψ/8 = 388 GB of model states. ZeRO-3: 16Ψ/8 = 141 GB: no fit either.
  MemoryReport z1 = run(R"({"stage": 1})", 8);
  EXPECT_DOUBLE_EQ(ModelStates(z1), 4 * psi + 12 * psi / 8);
  EXPECT_FALSE(z1.fits);
  MemoryReport z3 = run(R"({"stage": 3})", 8);
  EXPECT_NEAR(ModelStates(z3), 16 * psi / 8, 1e7);  // + persistent norm weights (< 1e5 elements)
  EXPECT_FALSE(z3.fits);
  // ZeRO-3 with the optimizer on the CPU: 2Ψ/8 = 17.6 GB of parameters left on the GPU.
  MemoryReport off = run(R"({"stage": 3, "offload_optimizer": {"device": "cpu"}})", 8);
  EXPECT_NEAR(off.parameters_bytes, 2 * psi / 8, 1e7);
  EXPECT_DOUBLE_EQ(off.gradients_bytes + off.optimizer_states_bytes, 0);
  EXPECT_DOUBLE_EQ(off.cpu_bytes, 16 * psi / 8);
  EXPECT_TRUE(off.fits);
  EXPECT_LT(off.peak_bytes, 40e9);  // + the recomputed layer, the logits and their fp32 copies
  // 32 GPUs (4 nodes): ZeRO-3 fits without offload (16Ψ/32 = 35.3 GB), ZeRO-1 still does not.
  EXPECT_TRUE(run(R"({"stage": 3})", 32).fits);
  EXPECT_FALSE(run(R"({"stage": 1})", 32).fits);
}

TEST(MemoryModelTest, DeepSpeedEstimatorThroughTheModel) {
  const double psi = 8'030'261'248, largest = 128256.0 * 4096;  // embed_tokens / lm_head
  MemoryCase c(R"({"zero_optimization": {"stage": 2}})", 8, "llama-3-8b.json");
  c.workload.convention = MemoryConvention::kDeepSpeedEstimator;
  MemoryReport z2 = c.Run();
  EXPECT_DOUBLE_EQ(ModelStates(z2), 2 * psi + 18 * psi / 8);
  EXPECT_DOUBLE_EQ(z2.zero_buffers_bytes, 0);
  c.zero.stage = 3;
  MemoryReport z3 = c.Run();
  EXPECT_DOUBLE_EQ(ModelStates(z3) + z3.zero_buffers_bytes, 4 * largest + 18 * psi / 8);
}

TEST(MemoryModelTest, PipelineReportsTheMostLoadedStage) {
  Plan plan = testing::PlanOrDie(R"({"zero_optimization": {"stage": 1}})", 8);
  Result<Plan> pp2 = BuildPlan(Json::parse(R"({"zero_optimization": {"stage": 1}})"),
                               PlanInputs{.world_size = 8, .gpus_per_node = 8, .pp = 2});
  ASSERT_TRUE(pp2.ok()) << pp2.error().message;
  ModelSpec m = dsp::testing::ParsePresetOrDie("llama-3-8b.json");
  SimInput in;
  in.plan = &*pp2;
  in.model = &m;
  in.workload.grad_accum = 8;
  MemoryReport r = EstimateMemory(in);
  EXPECT_EQ(r.layer_activations_bytes.size(), 16u);
  EXPECT_EQ(r.pipeline_stage, 0);  // two micro-batches in flight outweigh the lm_head
  EXPECT_EQ(r.in_flight_micro_batches, 2);
  EXPECT_FALSE(r.fits);  // no cluster given
  in.plan = &plan;
  EXPECT_EQ(EstimateMemory(in).layer_activations_bytes.size(), 32u);
}

}  // namespace
}  // namespace dsp::sim
