// SPDX-License-Identifier: Apache-2.0
// Per-layer activation memory against Korthikanti et al. 2022 Table 2 (GPT-3 175B layer shape:
// s = 2048, b = 1, h = 12288, a = 96, t = 8, f = 4h, GeLU MLP, dropout), and the generalisations
// (GQA, SwiGLU, no dropout, Ulysses, MoE) against hand-computed numbers.
#include <gtest/gtest.h>

#include "sim/cost/activation_memory.h"
#include "tests/sim/cost/memory_test_util.h"

namespace dsp::sim {
namespace {

constexpr double kS = 2048, kB = 1, kH = 12288, kA = 96, kT = 8;
constexpr double kSbh = kS * kB * kH;  // 25,165,824

LayerShape Gpt3Layer(int tp, bool megatron_sp) {
  LayerShape s;
  s.seq_len = 2048;
  s.micro_batch = 1;
  s.hidden = 12288;
  s.heads = 96;
  s.kv_heads = 96;
  s.head_dim = 128;
  s.ffn = 4 * 12288;
  s.gated_mlp = false;
  s.dropout = true;
  s.tp = tp;
  s.megatron_sp = megatron_sp;
  return s;
}

TEST(ActivationMemoryTest, KorthikantiNoParallelism) {
  LayerActivations a = LayerActivationBytes(Gpt3Layer(1, false), Recompute::kNone);
  EXPECT_DOUBLE_EQ(a.total_bytes(), kSbh * (34 + 5 * kA * kS / kH));
  EXPECT_DOUBLE_EQ(a.total_bytes(), 2'868'903'936.0);
  // §4.1: attention block 11sbh + 5as²b, MLP 19sbh, two norms 4sbh.
  EXPECT_DOUBLE_EQ(a.attention_bytes, 11 * kSbh + 5 * kA * kS * kS * kB);
  EXPECT_DOUBLE_EQ(a.mlp_bytes, 19 * kSbh);
  EXPECT_DOUBLE_EQ(a.norm_bytes, 4 * kSbh);
}

TEST(ActivationMemoryTest, KorthikantiTensorParallel) {
  LayerActivations a = LayerActivationBytes(Gpt3Layer(8, false), Recompute::kNone);
  EXPECT_DOUBLE_EQ(a.total_bytes(), kSbh * (10 + 24 / kT + 5 * kA * kS / (kH * kT)));
  EXPECT_DOUBLE_EQ(a.total_bytes(), 578'813'952.0);  // 23 sbh
}

TEST(ActivationMemoryTest, KorthikantiTensorAndSequenceParallel) {
  LayerActivations a = LayerActivationBytes(Gpt3Layer(8, true), Recompute::kNone);
  EXPECT_DOUBLE_EQ(a.total_bytes(), kSbh * (34 / kT + 5 * kA * kS / (kH * kT)));
  EXPECT_DOUBLE_EQ(a.total_bytes(), 358'612'992.0);  // 14.25 sbh
}

TEST(ActivationMemoryTest, KorthikantiSelectiveRecompute) {
  EXPECT_DOUBLE_EQ(LayerActivationBytes(Gpt3Layer(8, true), Recompute::kSelective).total_bytes(),
                   kSbh * 34 / kT);  // 106,954,752
  EXPECT_DOUBLE_EQ(LayerActivationBytes(Gpt3Layer(8, false), Recompute::kSelective).total_bytes(),
                   kSbh * (10 + 24 / kT));
  EXPECT_DOUBLE_EQ(LayerActivationBytes(Gpt3Layer(1, false), Recompute::kSelective).total_bytes(),
                   kSbh * 34);
}

TEST(ActivationMemoryTest, KorthikantiFullRecompute) {
  EXPECT_DOUBLE_EQ(LayerActivationBytes(Gpt3Layer(1, false), Recompute::kFull).total_bytes(), 2 * kSbh);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(Gpt3Layer(8, false), Recompute::kFull).total_bytes(), 2 * kSbh);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(Gpt3Layer(8, true), Recompute::kFull).total_bytes(), 2 * kSbh / kT);
}

// Llama-3-8B layer, s = 4096, b = 1: GQA (8 k/v heads of 128), SwiGLU (f = 14336), no dropout.
TEST(ActivationMemoryTest, GqaAndSwiGlu) {
  const double T = 4096, h = 4096;
  LayerActivations a = LayerActivationBytes(testing::Llama3_8BLayer(), Recompute::kNone);
  // q/k/v input 2Th; Q and attention output 2T·4096 each, K and V 2T·1024 each; scores 2·a·S·T.
  EXPECT_DOUBLE_EQ(a.attention_bytes, 2 * T * h + 2 * T * (2 * 4096 + 2 * 1024) + 2 * 32 * T * T);
  EXPECT_DOUBLE_EQ(a.attention_bytes, 1'191'182'336.0);
  // Input 2Th; gate output, up output and down_proj input, 2T·f each.
  EXPECT_DOUBLE_EQ(a.mlp_bytes, 2 * T * h + 3 * 2 * T * 14336);
  EXPECT_DOUBLE_EQ(a.mlp_bytes, 385'875'968.0);
  EXPECT_DOUBLE_EQ(a.total_bytes(), 1'644'167'168.0);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(testing::Llama3_8BLayer(), Recompute::kSelective).total_bytes(),
                   570'425'344.0);
}

TEST(ActivationMemoryTest, UlyssesDividesEveryTermBySp) {
  LayerShape one = testing::Llama3_8BLayer();
  LayerShape four = one;
  four.ulysses_sp = 4;
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    EXPECT_DOUBLE_EQ(LayerActivationBytes(four, r).total_bytes(),
                     LayerActivationBytes(one, r).total_bytes() / 4);
  }
  EXPECT_DOUBLE_EQ(LocalTokens(four), 1024);
  // sp = 16 > 8 k/v heads: k/v heads are replicated up to 16, so K and V hold 16 heads of the
  // 256 local tokens instead of 8/16 of them.
  LayerShape sixteen = one;
  sixteen.ulysses_sp = 16;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(sixteen, Recompute::kNone).attention_bytes,
                   LayerActivationBytes(one, Recompute::kNone).attention_bytes / 16 +
                       2 * 256.0 * 2 * (16 - 8) * 128);
}

// Mixtral-8x7B MoE layer, s = 4096: 8 experts of width 14336, top-2.
LayerShape MixtralLayer() {
  LayerShape s = testing::Llama3_8BLayer();
  s.num_experts = 8;
  s.top_k = 2;
  s.expert_ffn = 14336;
  return s;
}

TEST(ActivationMemoryTest, MoeTopKAssignments) {
  const double T = 4096, h = 4096;
  LayerShape s = MixtralLayer();
  s.expert_parallel = true;  // AutoEP, ep does not change a rank's expected load: ep·T·k/ep
  EXPECT_DOUBLE_EQ(ExpertAssignmentsPerRank(s), T * 2);
  // Block input 2Th, fp32 router probabilities 4·T·E, per assignment 2h in + 2h out + 3·2f.
  const double mlp = 2 * T * h + 4 * T * 8 + T * 2 * (4 * h + 6 * 14336);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(s, Recompute::kNone).mlp_bytes, mlp);
  EXPECT_DOUBLE_EQ(mlp, 872'546'304.0);

  // Folding with TP 2: each TP peer dispatches every second assignment.
  s.tp = 2;
  EXPECT_DOUBLE_EQ(ExpertAssignmentsPerRank(s), T);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(s, Recompute::kNone).mlp_bytes, 453'115'904.0);

  // A capacity factor pads every expert to capacity: 1.25 x the expected load.
  s.tp = 1;
  s.capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(ExpertAssignmentsPerRank(s), T * 2 * 1.25);
}

// NeMo AutoModel's DeepEP experts (GroupedExpertsDeepEP with weighted_bias_swiglu_impl) apply the
// routing probability inside the activation: each assignment keeps its fp32 probability, not the
// expert output (2h) the router's gradient needs otherwise.
TEST(ActivationMemoryTest, DeepEpExpertsKeepTheProbabilityNotTheExpertOutput) {
  const double T = 4096, h = 4096;
  LayerShape s = MixtralLayer();
  s.expert_parallel = true;
  const double fused = LayerActivationBytes(s, Recompute::kNone).mlp_bytes;
  s.te_modules = true;
  EXPECT_DOUBLE_EQ(fused - LayerActivationBytes(s, Recompute::kNone).mlp_bytes, T * 2 * (2 * h - 4));
}

TEST(ActivationMemoryTest, MoeWithoutExpertParallelSplitsExpertWidthByTp) {
  const double T = 4096, h = 4096;
  LayerShape s = MixtralLayer();
  s.tp = 2;  // AutoTP alone: every rank runs every assignment on half of each expert
  EXPECT_DOUBLE_EQ(ExpertAssignmentsPerRank(s), T * 2);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(s, Recompute::kNone).mlp_bytes,
                   2 * T * h + 4 * T * 8 + T * 2 * (4 * h + 6 * 14336 / 2));
}

// Megatron-Core's experts (core_v0.12.0 token_dispatcher.py, experts.py): with tp 2 and sequence
// parallelism a rank routes its T/2 tokens (fp32 probabilities over them), receives k x that from its
// EP peers, all-gathered over etp 2 (T·k rows), and runs each expert on half of its width.
TEST(ActivationMemoryTest, MegatronExpertsTakeSequenceParallelTokensAndSplitOverEtp) {
  const double T = 4096, h = 4096, f = 14336;
  LayerShape s = MixtralLayer();
  s.expert_parallel = true;
  s.megatron_experts = true;
  s.tp = 2;
  s.megatron_sp = true;
  s.etp = 2;
  EXPECT_DOUBLE_EQ(ExpertAssignmentsPerRank(s), T / 2 * 2 * 2);
  // Block input 2Th/t, probabilities 4·(T/t)·E, per assignment 2h in + 2h out + 3·2·f/etp.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(s, Recompute::kNone).mlp_bytes,
                   2 * T * h / 2 + 4 * T / 2 * 8 + T * 2 * (4 * h + 6 * f / 2));
  s.etp = 1;  // whole experts: half the rows, full width
  EXPECT_DOUBLE_EQ(ExpertAssignmentsPerRank(s), T);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(s, Recompute::kNone).mlp_bytes,
                   2 * T * h / 2 + 4 * T / 2 * 8 + T * (4 * h + 6 * f));
}

// TransformerEngine FP8 (v1.11-v2.2 transformer_engine/pytorch/module/layernorm_linear.py
// _LayerNormLinear.forward saves ln_out in fp8, linear.py _Linear.forward its fp8 input): the q/k/v
// input, the MLP input and fc2's input drop to 1 byte; the fused attention keeps its bf16 output and
// o_proj saves an fp8 copy of it beside; fc1's outputs (SwiGLU's gate and up) stay bf16.
TEST(ActivationMemoryTest, TransformerEngineFp8SavesEachGemmInputInOneByte) {
  LayerShape s = testing::Llama3_8BLayer();
  const LayerActivations bf16 = LayerActivationBytes(s, Recompute::kSelective);
  s.fp8_saved_inputs = true;
  const LayerActivations fp8 = LayerActivationBytes(s, Recompute::kSelective);
  const double T = 4096, h = 4096, f = 14336;
  EXPECT_DOUBLE_EQ(bf16.attention_bytes - fp8.attention_bytes, T * h - T * 32 * 128);  // ln_out -1, o_proj copy +1
  EXPECT_DOUBLE_EQ(bf16.mlp_bytes - fp8.mlp_bytes, T * h + T * f);              // ln_out and fc2's input
  EXPECT_DOUBLE_EQ(bf16.norm_bytes, fp8.norm_bytes);
}

TEST(ActivationMemoryTest, OutputLayerFollowsMegatron) {
  LayerShape s = testing::Llama3_8BLayer();
  // 4·s·b·h·(1 + V/h) with V = 128256.
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), 4.0 * 4096 * (4096 + 128256));
  s.tp = 4;  // AutoTP training: lm_head whole, every TP rank holds all logits
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), 4.0 * 4096 * (4096 + 128256));
  s.megatron_sp = true;  // Megatron: vocab-parallel logits, sequence-parallel hidden states
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), 4.0 * 4096 * (4096 / 4 + 128256 / 4));
  // torchtitan's "output" is ColwiseParallel(input_layouts=Shard(1)): the final norm runs on the
  // sequence shard (2 bytes a saved element, 1/4 of the tokens) but F.linear saves the all-gathered
  // whole sequence (2 bytes, every token).
  s.lm_head_input_gathered = true;
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), 2.0 * 4096 * 4096 / 4 + 2.0 * 4096 * 4096 + 4.0 * 4096 * 128256 / 4);
}

// Liger-Kernel's fused linear cross-entropy (src/liger_kernel/ops/fused_linear_cross_entropy.py
// fused_linear_cross_entropy_forward): no logits outlive a chunk of about BT x H elements; forward
// keeps grad_input (BT x H) and grad_weight (V x H) for backward, in 16-bit.
TEST(ActivationMemoryTest, FusedLossKeepsNoLogits) {
  LayerShape s = testing::Llama3_8BLayer();
  s.hf_eager = true;
  const double T = 4096, h = 4096, V = 128256;
  // The final RMSNorm's fp32 input and the bf16 tensor its weight multiplies, lm_head's input.
  const double hidden = (4.0 + 2.0 + 2.0) * T * h;
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), hidden + 14.0 * T * V);
  s.fused_loss = true;
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), hidden + 2.0 * 2.0 * T * h + 2.0 * V * h);
  // At 160K tokens the logits alone were 287 GB; fused, the output layer is a few GB.
  s.seq_len = 160000;
  EXPECT_LT(OutputLayerActivationBytes(s, 128256), 10e9);
}

// torchtitan's compiled loss (components/loss.py build_cross_entropy_loss, compile.components
// "loss"): Inductor's fused cross-entropy keeps the 16-bit logits it reads and writes a 16-bit
// gradient; the eager one upcasts them and keeps fp32 copies (14 bytes a logit at the peak).
TEST(ActivationMemoryTest, CompiledLossKeepsNoFp32Logits) {
  LayerShape s = testing::Llama3_8BLayer();
  s.hf_eager = true;
  const double T = 4096, h = 4096, V = 128256;
  const double hidden = (4.0 + 2.0 + 2.0) * T * h;
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), hidden + 14.0 * T * V);
  s.compiled_loss = true;
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), hidden + 4.0 * T * V);
  // torchtitan's H200 float8 run (2 x 8192 tokens a rank): 21 GB less than eager.
  s.seq_len = 16384;
  const double compiled = OutputLayerActivationBytes(s, 128256);
  s.compiled_loss = false;
  EXPECT_NEAR(OutputLayerActivationBytes(s, 128256) - compiled, 21.0e9, 0.1e9);
}

// torchtitan's eager loss: train.py (9dec370) deletes the 16-bit logits before backward, so the
// fused log_softmax / nll_loss backward peak is the saved fp32 output and two fp32 gradients (12
// bytes a logit); under tensor parallelism DTensor's loss_parallel
// (torch/distributed/tensor/parallel/loss.py _nll_loss_and_log_softmax_backward) holds the saved
// output, zeros_like(x), exp(x) and their sum (16); a pipeline stage keeps its output (+2).
TEST(ActivationMemoryTest, TorchtitansLossDropsTheLogitsAndLossParallelHoldsFourFp32Copies) {
  LayerShape s = testing::Llama3_8BLayer();
  s.hf_eager = true;
  s.vocab_parallel = true;
  const double T = 4096, h = 4096, V = 128256;
  const double hidden = (4.0 + 2.0 + 2.0) * T * h;
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), hidden + 14.0 * T * V);  // transformers'
  s.logits_freed_before_backward = true;
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), hidden + 12.0 * T * V);
  s.tp = 8;
  s.megatron_sp = true;
  s.loss_parallel = true;
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), hidden / 8 + 16.0 * T * V / 8);
  s.logits_freed_before_backward = false;
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), hidden / 8 + 18.0 * T * V / 8);
  // Compiled, the loss is Inductor's kernel either way.
  s.compiled_loss = true;
  EXPECT_DOUBLE_EQ(OutputLayerActivationBytes(s, 128256), hidden / 8 + 4.0 * T * V / 8);
}

// DeepSpeed's TiledMLP (deepspeed/runtime/sequence_parallel/ulysses_sp.py) saves only the MLP's
// input; the shard its backward runs (one of ceil(s / h)) is a working set of that layer alone.
TEST(ActivationMemoryTest, TiledMlpSavesItsInputAndOneShard) {
  LayerShape s = testing::Llama3_8BLayer();
  const double T = 4096, h = 4096, f = 14336;
  s.seq_len = 8 * 4096;
  const double untiled = LayerActivationBytes(s, Recompute::kNone).mlp_bytes;
  EXPECT_DOUBLE_EQ(untiled, 2 * 8 * T * h + 3 * 2 * 8 * T * f);
  EXPECT_DOUBLE_EQ(TiledMlpShardBytes(s), 0);
  s.tiled_mlp = true;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(s, Recompute::kNone).mlp_bytes, 2 * 8 * T * h);
  // 32768 tokens in ceil(32768 / 4096) = 8 shards of 4096.
  EXPECT_DOUBLE_EQ(TiledMlpShardBytes(s), 3 * 2 * T * f);
}

}  // namespace
}  // namespace dsp::sim
