// SPDX-License-Identifier: Apache-2.0
// FLOPs per layer and operator against Megatron-LM's closed forms (num_floating_point_operations).
#include "sim/cost/flops.h"

#include <gtest/gtest.h>

#include "tests/core/model/model_test_util.h"

namespace dsp::sim {
namespace {

using testing::ParsePresetOrDie;

// A rank running transformers' eager modules on `micro_batch` sequences of `seq_len` tokens.
ShardShape HfEagerShard(int64_t micro_batch, int64_t seq_len) {
  ShardShape shard;
  shard.micro_batch = micro_batch;
  shard.seq_len = seq_len;
  shard.hf_eager = true;
  return shard;
}

double OpFlops(const std::vector<OperatorCost>& ops, std::string_view name) {
  for (const OperatorCost& op : ops) {
    if (op.name == name) return op.flops;
  }
  ADD_FAILURE() << "no operator " << name;
  return 0;
}

TEST(FlopsTest, Gpt3LayerIs24bsh2Plus4bs2h) {
  // samples/models/gpt3-175b.json keeps GPT-3's 8h^2 MLP as a gated MLP of width 8h/3, so the
  // non-gated 4h form's 24 b s h^2 + 4 b s^2 h holds exactly (Narayanan et al. 2021).
  const ModelSpec gpt3 = ParsePresetOrDie("gpt3-175b.json");
  ShardShape shard;
  shard.micro_batch = 2;
  shard.seq_len = 2048;
  const double b = 2, s = 2048, h = 12288;
  const std::vector<OperatorCost> ops = LayerForwardOperators(gpt3, 0, shard);
  EXPECT_DOUBLE_EQ(SumFlops(ops), 24 * b * s * h * h + 4 * b * s * s * h);
  EXPECT_DOUBLE_EQ(OpFlops(ops, "attention"), 4 * b * s * s * h);  // QK^T + AV
  EXPECT_DOUBLE_EQ(OpFlops(ops, "q_proj"), 2 * b * s * h * h);
}

TEST(FlopsTest, Llama3_8BLayerWithGqaAndSwiGlu) {
  // Per layer forward: 2 b s h (2 a d + 2 g d)  [q, o; k, v with g KV heads]
  //                  + 6 b s h f                [gate, up, down]
  //                  + 4 b s^2 a d              [QK^T, AV]
  const ModelSpec llama = ParsePresetOrDie("llama-3-8b.json");
  ShardShape shard;
  shard.micro_batch = 1;
  shard.seq_len = 8192;
  const std::vector<OperatorCost> ops = LayerForwardOperators(llama, 0, shard);
  const double T = 8192, h = 4096, ad = 32 * 128, gd = 8 * 128, f = 14336;
  EXPECT_DOUBLE_EQ(SumFlops(ops),
                   2 * T * h * (2 * ad + 2 * gd) + 6 * T * h * f + 4 * T * 8192 * ad);
  EXPECT_DOUBLE_EQ(SumFlops(ops), 4'672'924'418'048.0);
  EXPECT_DOUBLE_EQ(OpFlops(ops, "k_proj"), 2 * T * h * gd);
  EXPECT_DOUBLE_EQ(OpFlops(ops, "mlp_gate") + OpFlops(ops, "mlp_up") + OpFlops(ops, "mlp_down"),
                   6 * T * h * f);
}

// Nemotron-4 15B (transformers modeling_nemotron.py): a non-gated MLP, 4 b s h f FLOPs (up and
// down), relu2 as two kernels of 2 + 2 bytes per element (relu, then the square; Megatron-Core's
// squared_relu is torch.pow(F.relu(x), 2) too), and rotary over half of each head.
TEST(FlopsTest, NemotronSquaredReluMlpAndPartialRotary) {
  ModelSpec nemotron = ParsePresetOrDie("nemotron-4-15b.json");
  ShardShape shard;
  shard.micro_batch = 1;
  shard.seq_len = 4096;
  shard.bytes_per_element = 2;
  const double T = 4096, h = 6144, f = 24576, ad = 48 * 128, gd = 8 * 128;
  const std::vector<OperatorCost> ops = LayerForwardOperators(nemotron, 0, shard);
  EXPECT_DOUBLE_EQ(OpFlops(ops, "mlp_fc1") + OpFlops(ops, "mlp_fc2"), 4 * T * h * f);
  EXPECT_DOUBLE_EQ(SumFlops(ops), 2 * T * h * (2 * ad + 2 * gd) + 4 * T * h * f + 4 * T * 4096 * ad);
  const OperatorCost* act = nullptr;
  const OperatorCost* rotary = nullptr;
  for (const OperatorCost& op : ops) {
    if (op.name == "mlp_activation") act = &op;
    if (op.name == "rotary") rotary = &op;
  }
  ASSERT_NE(act, nullptr);
  EXPECT_DOUBLE_EQ(act->bytes, 8 * T * f);
  EXPECT_EQ(act->kernels, 2);
  ASSERT_NE(rotary, nullptr);
  const double half = rotary->bytes;
  nemotron.rotary_fraction = 1.0;
  for (const OperatorCost& op : LayerForwardOperators(nemotron, 0, shard)) {
    if (op.name == "rotary") {
      EXPECT_DOUBLE_EQ(op.bytes, 2 * half);
    }
  }
}

TEST(FlopsTest, Llama3_8BFollowsSixNTWithinTheAttentionTerm) {
  // Training FLOPs = 6 N T + 12 L s h T (PaLM), where N counts the matmul weights (everything but
  // the embedding lookup and the norms).
  const ModelSpec llama = ParsePresetOrDie("llama-3-8b.json");
  const ParamCounts c = CountParameters(llama);
  const double s = 4096, L = 32, h = 4096;
  const double matmul_params = static_cast<double>(
      c.total - c.by_family.at(ParamFamily::kEmbedding) - c.by_family.at(ParamFamily::kNorm));
  EXPECT_EQ(matmul_params, 7'504'658'432.0);
  const double training = ModelTrainingFlops(llama, 1, 4096);
  EXPECT_DOUBLE_EQ(training, 6 * matmul_params * s + 12 * L * s * h * s);
  // Against the plain 6 N T with N = all 8.03B parameters: off by the attention term (plus the
  // embedding lookup, which costs no FLOPs), i.e. about 7 %.
  const double six_nt = 6 * static_cast<double>(c.total) * s;
  EXPECT_LT(std::abs(training - six_nt), 12 * L * s * h * s);
  EXPECT_NEAR(training / six_nt, 1.0, 0.08);
}

TEST(FlopsTest, MixtralCountsOnlyTopKExperts) {
  const ModelSpec mixtral = ParsePresetOrDie("mixtral-8x7b.json");
  const ParamCounts c = CountParameters(mixtral);
  EXPECT_NEAR(static_cast<double>(c.active_per_token), 12.9e9, 0.05e9);
  ShardShape shard;
  shard.micro_batch = 1;
  shard.seq_len = 4096;
  const double T = 4096, h = 4096, f = 14336;
  const std::vector<OperatorCost> ops = LayerForwardOperators(mixtral, 0, shard);
  EXPECT_DOUBLE_EQ(OpFlops(ops, "experts"), 2 /*top-k*/ * 6 * T * h * f);
  EXPECT_DOUBLE_EQ(OpFlops(ops, "router"), 2 * T * h * 8);
  // Everything but attention is 2 FLOPs per active matmul weight per token.
  const double attention = 32 * 4 * T * T * h;
  const double matmul_active =
      static_cast<double>(c.active_per_token - c.by_family.at(ParamFamily::kEmbedding) -
                          c.by_family.at(ParamFamily::kNorm));
  EXPECT_DOUBLE_EQ(ModelTrainingFlops(mixtral, 1, 4096) / 3, 2 * matmul_active * T + attention);
}

TEST(FlopsTest, ShardingSplitsWorkPerRank) {
  const ModelSpec llama = ParsePresetOrDie("llama-3-8b.json");
  ShardShape whole;
  whole.seq_len = 4096;
  const double full = ModelForwardFlops(llama, whole);
  // AutoTP training keeps lm_head whole: every TP rank computes all logits.
  const double head = SumFlops(HeadForwardOperators(llama, whole));
  EXPECT_DOUBLE_EQ(head, 2.0 * 4096 * 4096 * 128256);
  for (int n : {2, 4, 8}) {
    ShardShape tp = whole, sp = whole;
    tp.tp = n;
    sp.sp = n;
    EXPECT_DOUBLE_EQ(ModelForwardFlops(llama, tp), (full - head) / n + head) << n;
    EXPECT_DOUBLE_EQ(ModelForwardFlops(llama, sp), full / n) << n;
  }
  // AutoEP: an EP rank computes as many assignments as its own tokens make (uniform routing).
  const ModelSpec mixtral = ParsePresetOrDie("mixtral-8x7b.json");
  ShardShape ep = whole;
  ep.expert_parallel = true;
  ep.ep = 4;
  EXPECT_DOUBLE_EQ(ModelForwardFlops(mixtral, ep), ModelForwardFlops(mixtral, whole));
  // Folding TP 2: everything halves except the router, which every TP peer runs on all tokens,
  // and lm_head, which AutoTP leaves whole.
  ShardShape fold = ep;
  fold.tp = 2;
  const double router = 32 * 2 * 4096.0 * 4096 * 8;
  const double mixtral_head = SumFlops(HeadForwardOperators(mixtral, whole));
  EXPECT_DOUBLE_EQ(ModelForwardFlops(mixtral, fold),
                   (ModelForwardFlops(mixtral, whole) - router - mixtral_head) / 2 + router + mixtral_head);
}

TEST(FlopsTest, RouterIsBelowTheRidgePoint) {
  // H100 ridge: 989e12 / 3.35e12 = 295 FLOP/B. The router's 8 output columns give ~8 FLOP/B; the
  // projections of a 4096-token micro-batch are far above the ridge.
  const ModelSpec mixtral = ParsePresetOrDie("mixtral-8x7b.json");
  ShardShape shard;
  for (const OperatorCost& op : LayerForwardOperators(mixtral, 0, shard)) {
    if (op.name == "router") {
      EXPECT_LT(op.intensity(), 295) << op.name;
    }
    if (op.name == "q_proj" || op.name == "attention") {
      EXPECT_GT(op.intensity(), 295) << op.name;
    }
  }
}

}  // namespace
}  // namespace dsp::sim

namespace dsp::sim {
namespace {

// --fp8: the decoder's linear GEMMs run in FP8, the router and lm_head stay bf16, and each recipe
// adds its casts (Fp8CastBytes: TransformerEngine casts o_proj's and down_proj's inputs with their
// transposes; torchao's tensorwise scaling reads every GEMM input and weight twice).
TEST(FlopsTest, Fp8MarksTheLayersLinearGemmsAndAddsTheRecipesCasts) {
  const ModelSpec m = dsp::testing::ParsePresetOrDie("llama-3-8b.json");
  ShardShape shard;
  shard.micro_batch = 1;
  shard.seq_len = 4096;
  shard.fp8 = Fp8Linear::kTransformerEngine;
  const auto ops = LayerForwardOperators(m, 0, shard);
  double cast = 0;
  for (const OperatorCost& op : ops) {
    EXPECT_EQ(op.fp8, op.kind == KernelKind::kMatmul) << op.name;
    if (op.name == "fp8_cast") cast = op.bytes;
  }
  EXPECT_DOUBLE_EQ(cast, 4.0 * 4096 * (4096 + 14336));  // o_proj's and down_proj's inputs
  shard.fp8 = Fp8Linear::kTorchaoFloat8;
  double ao = 0;
  for (const OperatorCost& op : LayerForwardOperators(m, 0, shard)) {
    if (op.name == "fp8_cast") ao = op.bytes;
  }
  const double inputs = 4096.0 * (3 * 4096 + 4096 + 2 * 4096 + 14336);
  const double weights = 4096.0 * (6144 + 4096) + 3.0 * 4096 * 14336;  // q/k/v, o, gate/up/down
  EXPECT_DOUBLE_EQ(ao, 5.0 * (inputs + weights));
  for (const OperatorCost& op : HeadForwardOperators(m, shard)) EXPECT_FALSE(op.fp8) << op.name;
}

// --torch-compile (torchtitan's apply_compile, Inductor per decoder block): the norms, the rotary
// embedding and silu(gate) * up each become one kernel over their 16-bit tensors, and torchao's
// input amax fuses into the kernel that produces the input (3 bytes per input element, not 5);
// a weight keeps its amax pass and cast (5 bytes).
TEST(FlopsTest, TorchCompileFusesTheBlocksMemoryBoundChainsAndFp8Casts) {
  const ModelSpec m = dsp::testing::ParsePresetOrDie("llama-3-8b.json");
  ShardShape shard = HfEagerShard(1, 4096);
  const EagerBytes eager = EagerBytesPerElement(m, shard);
  shard.torch_compile = true;
  const EagerBytes compiled = EagerBytesPerElement(m, shard);
  EXPECT_EQ(compiled.norm, 4);
  EXPECT_EQ(compiled.norm_kernels, 1);
  EXPECT_EQ(compiled.rotary, 4);
  EXPECT_EQ(compiled.rotary_kernels, 1);
  EXPECT_EQ(compiled.activation, 6);
  EXPECT_EQ(compiled.activation_kernels, 1);
  EXPECT_EQ(compiled.loss, eager.loss);  // the loss is outside the blocks
  EXPECT_LT(compiled.norm, eager.norm);
  shard.fp8 = Fp8Linear::kTorchaoFloat8;
  double cast = 0;
  for (const OperatorCost& op : LayerForwardOperators(m, 0, shard)) {
    if (op.name == "fp8_cast") cast = op.bytes;
  }
  const double inputs = 4096.0 * (3 * 4096 + 4096 + 2 * 4096 + 14336);
  const double weights = 4096.0 * (6144 + 4096) + 3.0 * 4096 * 14336;
  EXPECT_DOUBLE_EQ(cast, 3.0 * inputs + 5.0 * weights);
  // The final norm is outside the compiled blocks: eager.
  auto final_norm = [&](bool compiled) {
    shard.torch_compile = compiled;
    for (const OperatorCost& op : HeadForwardOperators(m, shard)) {
      if (op.name == "final_norm") return op.bytes;
    }
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(final_norm(true), final_norm(false));
  EXPECT_DOUBLE_EQ(final_norm(false), 4096.0 * 4096 * eager.norm);
}

// torchtitan compiles the loss apart from the blocks (compile.components "loss"): one fused
// reduction over the 16-bit logits instead of ForCausalLMLoss-style upcast and log_softmax.
TEST(FlopsTest, CompiledLossReadsTheLogitsOnce) {
  const ModelSpec m = dsp::testing::ParsePresetOrDie("llama-3-8b.json");
  ShardShape shard = HfEagerShard(1, 4096);
  shard.torch_compile = true;
  auto loss_bytes = [&] {
    for (const OperatorCost& op : HeadForwardOperators(m, shard)) {
      if (op.name == "cross_entropy") return op.bytes;
    }
    return 0.0;
  };
  const double logits = 4096.0 * static_cast<double>(m.vocab_size);
  EXPECT_DOUBLE_EQ(loss_bytes(), 22.0 * logits);  // eager: the blocks alone compiled
  shard.compiled_loss = true;
  EXPECT_DOUBLE_EQ(loss_bytes(), 2.0 * logits);
  EXPECT_EQ(EagerBytesPerElement(m, shard).loss_kernels, 1);
}

// NeMo AutoModel's DeepEP experts add GPT-OSS's expert biases one local expert at a time and
// concatenate (GroupedExpertsDeepEP._apply_bias): 16 bytes per element of gate_up's 2f and 28 per
// element of h for down's probability-scaled bias, per routed row; transformers' experts and
// bias-free models have no such pass.
TEST(FlopsTest, AutomodelAddsExpertBiasesPerExpert) {
  const ModelSpec m = dsp::testing::ParsePresetOrDie("gpt-oss-120b.json");
  ShardShape shard = HfEagerShard(2, 4096);
  shard.ep = 64;
  shard.expert_parallel = true;
  auto bias = [&](const ModelSpec& model) {
    for (const OperatorCost& op : LayerForwardOperators(model, 0, shard)) {
      if (op.name == "experts_bias") return op;
    }
    return OperatorCost{};
  };
  EXPECT_EQ(bias(m).bytes, 0);  // transformers' experts
  shard.te_modules = true;
  const double rows = 8192.0 * 4, f = 2880, h = 2880;
  EXPECT_DOUBLE_EQ(bias(m).bytes, rows * (16 * f + 28 * h));
  EXPECT_DOUBLE_EQ(bias(m).kernels, 3 * 2 + 3);  // 128 experts over 64 ranks
  EXPECT_EQ(bias(dsp::testing::ParsePresetOrDie("qwen3-30b-a3b.json")).bytes, 0);
}

}  // namespace
}  // namespace dsp::sim
