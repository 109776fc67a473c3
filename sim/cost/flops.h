// SPDX-License-Identifier: Apache-2.0
// FLOPs and HBM bytes of every operator one rank runs for one micro-batch (forward), so the step
// model can apply a roofline per operator. Sources: Megatron-LM's (
// num_floating_point_operations, PaLM's 6N + 12Lsh per token), Korthikanti et al. for the sharding.
//
// Counting conventions:
//   * a matmul [m, k] x [k, n] costs 2mkn FLOPs and reads/writes (mk + kn + mn) elements;
//   * attention is FlashAttention-style: QK^T and AV cost 2 x 2 s^2 d per head (full, non-causal
//     square, as Megatron and PaLM count it), and touch only Q, K, V and O in HBM;
//   * SwiGLU/gated MLP: three matrices (gate, up, down) = 6 h f per token; GQA: k/v projections of
//     num_key_value_heads x head_dim columns;
//   * MoE: only the top-k routed experts a token visits, plus the router (h x E) and shared
//   experts;
//   * memory-bound kernels (norms, rotary, activations, bias-dropout-add, softmax and dropout of
//     materialized attention scores, cross-entropy, embedding lookup) are listed with 0 FLOPs and
//     the HBM bytes they read and write, so model FLOPs (the MFU numerator) stay matmul FLOPs;
//   * backward = 2 x forward FLOPs (input and weight gradients) and 1.5 x forward bytes for the
//     memory-bound kernels (they read the saved input and the output gradient and write the input
//     gradient); recompute adds the forward again.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/model/model_spec.h"
#include "sim/cost/attention_shape.h"
#include "sim/frameworks/framework.h"

namespace dsp::sim {

/// How one rank's share of a layer is cut. The unsharded model is the default {tp = sp = ep = 1}.
struct ShardShape {
  int64_t micro_batch = 1;       // sequences per rank per micro-step (shared by the TP group)
  int64_t seq_len = 4096;        // full sequence length before Ulysses splits it
  int tp = 1;                    // AutoTP: heads, MLP width and lm_head split tp ways
  int sp = 1;                    // Ulysses: tokens split sp ways outside attention, heads inside
  int ep = 1;                    // AutoEP: routed experts split ep ways
  bool expert_parallel = false;  // AutoEP on; with tp > 1 this is folding (experts not TP-split)
  // Megatron-Core's experts (megatron-lm --ep): tokens enter the MoE layer sequence-parallel (s/tp
  // per rank), every expert split over etp ranks, the shared expert over tp (token_dispatcher.py,
  // experts.py, shared_experts.py).
  bool megatron_experts = false;
  int etp = 1;                   // expert-tensor-parallel size (megatron_experts)
  // A rank's experts run as one grouped GEMM per projection (torch._grouped_mm, TransformerEngine's
  // GroupedLinear) rather than one GEMM per expert.
  bool grouped_experts = false;
  double bytes_per_element = 2;  // bf16/fp16 activations and weights
  bool megatron_sp = false;      // Megatron sequence parallelism: norms and dropout over s/tp
  bool vocab_parallel = false;   // Megatron's VocabParallelEmbedding / parallel lm_head: V / tp
  bool lm_head_split = false;    // AutoTP's colwise_gather_output lm_head: its matmul on V / tp
  bool flash_attention = true;   // false: scores materialized (baddbmm, softmax, dropout, bmm)
  bool fused_loss = false;       // EngineSettings::fused_loss
  bool tiled_mlp = false;        // EngineSettings::tiled_mlp: dense MLP operators marked `tiled`
  // transformers' eager modules (what DeepSpeed trains) rather than Megatron's fused kernels:
  // LlamaRMSNorm in fp32 steps, rotary through rotate_half, act_fn and the product apart, the
  // loss's fp32 upcast (memory-bound bytes in flops.cc EagerBytes).
  bool hf_eager = false;
  bool bf16_loss = false;  // EngineSettings::bf16_loss: no fp32 upcast of the logits
  // EngineSettings::te_modules: norms, attention and the MoE permutation and activation are fused
  // kernels though the rotary embedding and the loss are eager PyTorch (hf_eager stays true).
  bool te_modules = false;
  bool eager_modules() const { return hf_eager && !te_modules; }
  // EngineSettings::torch_compile: each decoder block compiled by Inductor, which fuses its
  // norms, rotary embedding, MLP activation and FP8 casts (the final norm stays eager).
  bool torch_compile = false;
  bool compiled_loss = false;  // EngineSettings::compiled_loss(): the loss compiled as well
  // Attention's divisor on the busiest tp rank when the key-value heads split unevenly (N/N0,
  // param_sharding.h AttentionTpDivisor); 0 = tp.
  double attention_tp = 0;
  // Context parallelism that runs attention chunk by chunk (a KV ring, or torch's all-gathered K
  // and V walked in cp steps): each fused call sees s / this many keys. Ulysses: 1.
  int attention_key_split = 1;
  // PyTorch's context_parallel (torchtitan's CP): the ring loop's merges and gradient
  // accumulations around each step's attention call (flops.cc "cp_ring_merge").
  bool torch_ring_attention = false;
  // --fp8: the decoder layers' linear GEMMs run in FP8 by this recipe (router and lm_head stay
  // bf16: TransformerEngine's Megatron layers and torchao's default filter_fqns ["output"]).
  Fp8Linear fp8 = Fp8Linear::kNone;
};

/// What bounds a kernel: tensor-core FLOPs (a GEMM, with its output tile count deciding wave
/// quantization), a fused FlashAttention kernel, or HBM traffic alone.
enum class KernelKind { kMatmul, kAttention, kMemory };

/// One operator's forward work on one rank.
struct OperatorCost {
  std::string_view name;  // "q_proj", "k_proj", "v_proj", "o_proj", "attention", "mlp_gate",
                          // "mlp_up", "mlp_down", "router", "experts", "shared_expert", "lm_head"
  double flops = 0;
  double bytes = 0;  // HBM traffic of the operator (inputs, weights, outputs)
  KernelKind kind = KernelKind::kMatmul;
  double rows = 0, cols = 0;  // kMatmul: output [rows, cols] of one kernel (wave quantization)
  double kernels = 1;         // launches: a grouped expert GEMM runs one per local expert
  bool attention_core = false;  // QK^T, softmax, dropout, AV: what selective recompute re-runs
  // Share of `flops` the kernel executes: a fused causal attention kernel skips the tiles above the
  // diagonal, half of the full-square work `flops` counts (the MFU convention).
  double executed = 1.0;
  bool fp8 = false;  // kMatmul at the FP8 rate (ShardShape::fp8)
  AttentionShape attention_shape{};  // kAttention: what its speed depends on (attention_shape.h)
  // kMemory: HBM bytes of the backward when they do not follow kBackwardBytesPerForward (< 0).
  double backward_bytes = -1;
  // DeepSpeed's TiledMLP (ShardShape::tiled_mlp): the backward runs this operator's forward again,
  // a shard at a time, on top of whatever recompute re-runs (recompute_policy.h).
  bool tiled = false;
  // kMatmul: elements of the GEMMs' inputs and weights, what FP8 casts read (Fp8CastBytes).
  double input_elements = 0, weight_elements = 0;
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }  // FLOP per byte
};

inline constexpr double kBackwardBytesPerForward = 1.5;  // memory-bound kernels' backward traffic

inline constexpr double kBackwardFlopsPerForward = 2.0;  // dX = dY W^T and dW = X^T dY

/// Bytes per element and launches of the memory-bound kernels whose cost depends on the modules:
/// transformers' eager ones (`shard.hf_eager`: LlamaRMSNorm, rotate_half rotary, act_fn(gate) * up,
/// ForCausalLMLoss's fp32 upcast; flops.cc states each count) or Megatron's fused kernels.
struct EagerBytes {
  double norm, norm_kernels, rotary, rotary_kernels, activation, activation_kernels, loss, loss_kernels;
};
EagerBytes EagerBytesPerElement(const ModelSpec& model, const ShardShape& shard);

/// The routed rows of a MoE block permuted into expert order and back, on a rank that computes
/// `assignments` (token, expert) rows of `h` with experts `expert_width` wide: transformers'
/// grouped_mm experts (shard.hf_eager) or a fused permutation.
OperatorCost MoePermute(double assignments, double h, double expert_width, const ShardShape& shard);

/// The attention core of one layer of `kind` on a rank holding `q_heads_rank` query and
/// `kv_heads_rank` key-value heads of the whole sequence: one fused kernel, or with
/// `!shard.flash_attention` QK^T, softmax, dropout (if any) and AV.
std::vector<OperatorCost> AttentionCoreForward(const ModelSpec& model, AttentionKind kind, const ShardShape& shard,
                                               double q_heads_rank, double kv_heads_rank);

/// The shape a fused attention call of a `kind` layer runs on a rank holding `q_heads_rank` query
/// heads of `b` sequences of `s` tokens (attention_shape.h), shared by the closed form and the
/// graph's sdpa nodes (sim/schedule/op_cost.cc) so both price a call alike.
AttentionShape FusedAttentionShape(const ModelSpec& model, AttentionKind kind, const ShardShape& shard, double b,
                                   double s, double q_heads_rank);

/// Bytes and launches of the FP8 casts around a layer's FP8 GEMMs in forward, per recipe:
/// TransformerEngine (delayed scaling, amax fused into the cast; the cast also writes the
/// transpose the weight-gradient GEMM reads, tex.fp8_cast_transpose_fused: 2 bytes read, 2
/// written per element) casts the inputs of o_proj and the MLP's down projection, the norm before
/// q/k/v and the MLP's first GEMM writing fp8 itself (LayerNormLinear), and reuses the weights'
/// fp8 copies across micro-batches (Linear's is_first_microbatch); torchao's tensorwise dynamic
/// scaling (torchao/float8/float8_linear.py matmul_with_hp_or_float8_args, hp_tensor_to_float8_dynamic)
/// reads every GEMM's input and weight for the amax, then again for the cast (2 + 2 + 1 bytes per
/// element, two kernels each). Backward's casts (the output gradient; torchao's re-casts of the
/// saved bf16 input and weight) follow the memory-bound kernels' backward rule.
/// Under torch.compile (`compiled`) Inductor fuses torchao's input amax into the kernel that
/// produces the input and its cast into one kernel (2 + 1 bytes per input element); a weight still
/// takes its amax pass and its cast (2 + 2 + 1).
struct Fp8Cast {
  double bytes = 0, kernels = 0;
};
Fp8Cast Fp8CastBytes(const std::vector<OperatorCost>& fp8_ops, Fp8Linear recipe, bool compiled = false);

/// Forward operators of decoder layer `layer` on one rank.
std::vector<OperatorCost> LayerForwardOperators(const ModelSpec& model, int64_t layer,
                                                const ShardShape& shard);

/// Forward operators outside the layers on the last stage: final norm, lm_head (tied embeddings
/// still cost the projection) and the cross-entropy over the logits.
std::vector<OperatorCost> HeadForwardOperators(const ModelSpec& model, const ShardShape& shard);

/// Forward operators of the first stage before the layers: the embedding lookup (plus learned
/// positions, embedding LayerNorm and dropout where the model has them).
std::vector<OperatorCost> EmbeddingForwardOperators(const ModelSpec& model,
                                                    const ShardShape& shard);

/// Sum of FLOPs of a list of operators.
double SumFlops(const std::vector<OperatorCost>& ops);

/// Forward FLOPs of the whole model on one rank (all layers and the head).
double ModelForwardFlops(const ModelSpec& model, const ShardShape& shard);

/// Model FLOPs of one training pass (forward + backward, no recompute) over `sequences` sequences
/// of `seq_len` tokens on the unsharded model: the MFU numerator (PaLM / Megatron convention).
double ModelTrainingFlops(const ModelSpec& model, int64_t sequences, int64_t seq_len);

}  // namespace dsp::sim
