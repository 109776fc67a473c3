// SPDX-License-Identifier: Apache-2.0
// Korthikanti et al. 2022 §4.1 count, term by term (T = tokens on this rank, S = full sequence,
// t = TP size; "replicated" tensors are divided by t only with Megatron SP):
//   attention: norm output feeding q/k/v 2Th (replicated); Q 2T·a·d/t; K 2T·kv·d/t; softmax output
//              2aST/t, its dropout mask aST/t and dropout output 2aST/t (without dropout only the
//              softmax output); V 2T·kv·d/t; attention output feeding o_proj
//              2T·a·d/t; output dropout mask Th (replicated)
//              -> GPT (kv = a, a·d = h): 3Th + 8Th/t + 5aST/t, Korthikanti's 11sbh + 5as²b at t=1.
//   MLP:       input 2Th (replicated); the ffn-wide tensors 2Tf/t each: GeLU input and fc2 input
//              (two), or gate output, up output and the product fed to down_proj (three, SwiGLU);
//              dropout mask Th (replicated) -> 3Th + 16Th/t at f = 4h, Korthikanti's 19sbh.
//   norms:     two inputs of 2Th (replicated) -> 4Th.
// Sum at f = 4h with dropout: 10Th + 24Th/t + 5aST/t; every replicated term over t with SP.
// Selective recompute drops the softmax output and its mask (the 5aST/t term; FlashAttention
// stores neither, so it is also the right choice for models trained with it).
#include "sim/cost/activation_memory.h"

#include <algorithm>
#include <cmath>

namespace dsp::sim {
namespace {

constexpr double kActivationBytes = 2;  // 16-bit activations
constexpr double kMaskBytes = 1;        // dropout masks are bytes (Korthikanti §4.1)
constexpr double kRouterProbBytes = 4;  // routers take the softmax in fp32 (HF Mixtral/Qwen MoE)

double Div(double x, int by) { return x / std::max(by, 1); }

// Bytes per element a norm saves of its input: the 16-bit input (Megatron's fused kernels), or
// LlamaRMSNorm's (transformers modeling_llama.py, the same in Qwen3's): the fp32 upcast
// (`hidden_states.to(torch.float32)`, which pow and the rsqrt product keep for backward) and the
// normalized 16-bit tensor `self.weight * hidden_states.to(input_dtype)` keeps for the weight's
// gradient, 4 + 2; its output is the next projection's saved input, counted there.
double NormInputBytes(const LayerShape& shape) {
  if (!shape.eager_modules() || !shape.rms_norm) return kActivationBytes;
  return shape.compiled ? 4.0 : 4.0 + kActivationBytes;
}

// Bytes per element of a tensor a GEMM saves as its input: fp8 under TransformerEngine's FP8.
double LinearInputBytes(const LayerShape& shape) { return shape.fp8_saved_inputs ? 1.0 : kActivationBytes; }

// Saved ffn-wide tensors of one token through an MLP of width `ffn_per_rank` (already TP-split).
double FfnBytesPerToken(const LayerShape& shape, double ffn_per_rank) {
  // Gated: gate and up outputs and their product (Megatron's fused SwiGLU); transformers' eager
  // `down_proj(act_fn(gate_proj(x)) * up_proj(x))` also keeps act_fn's output for the product.
  // The last of them (the product, or GeLU's output) is the down projection's input.
  const double ffn_tensors = shape.gated_mlp ? (shape.eager_modules() ? 4 : 3) : 2;
  return ((ffn_tensors - 1) * kActivationBytes + LinearInputBytes(shape)) * ffn_per_rank;
}

}  // namespace

// torchtitan's op-level selective AC on a dense layer (models/llama3/infra/parallelize.py
// _custom_policy): the checkpointed block's input, and the outputs of the ops in _save_list except
// every second aten.mm. Its Llama block runs wq, wk, wv, wo, w1, w3, w2 in that order, so q, v, the
// gate (w1) and the down projection (w2) are kept, k, o and up (w3) recomputed; the fused SDPA keeps
// its output and logsumexp. Under TP the column-parallel outputs are 1/t, the row-parallel w2's
// partial sums whole (before its reduce-scatter), the block input 1/t with sequence parallelism.
namespace {
LayerActivations OpSacBytes(const LayerShape& shape) {
  const double tokens = LocalTokens(shape);
  const double h = static_cast<double>(shape.hidden);
  const int t = std::max(shape.tp, 1);
  const int replicated = shape.megatron_sp ? t : 1;
  const double d = static_cast<double>(shape.head_dim);
  const double a = static_cast<double>(shape.heads), g = static_cast<double>(shape.kv_heads);
  LayerActivations out;
  out.checkpoint_bytes = Div(kActivationBytes * tokens * h, replicated);
  out.attention_bytes = Div(kActivationBytes * tokens * (a * d + g * d + a * d) + 4.0 * a * tokens, t);
  const double gate = shape.gated_mlp ? Div(static_cast<double>(shape.ffn), t) : 0;
  out.mlp_bytes = kActivationBytes * tokens * (gate + h);
  return out;
}
}  // namespace

double LocalTokens(const LayerShape& shape) {
  return Div(static_cast<double>(shape.seq_len) * static_cast<double>(shape.micro_batch),
             shape.ulysses_sp);
}

double ExpertAssignmentsPerRank(const LayerShape& shape) {
  double assignments = LocalTokens(shape) * static_cast<double>(shape.top_k);
  if (shape.capacity_factor > 0) assignments *= shape.capacity_factor;
  if (shape.megatron_experts) return Div(assignments * std::max(shape.etp, 1), shape.tp);
  if (shape.expert_parallel) assignments = Div(assignments, shape.tp);
  return assignments;
}

LayerActivations LayerActivationBytes(const LayerShape& shape, Recompute recompute) {
  const double tokens = LocalTokens(shape);
  const double h = static_cast<double>(shape.hidden);
  const double seq = static_cast<double>(shape.seq_len);
  const int t = std::max(shape.tp, 1);
  // Divisor of the tensors outside the tensor-parallel regions.
  const int replicated = shape.megatron_sp ? t : 1;
  const double mask = shape.dropout ? kMaskBytes : 0;

  LayerActivations out;
  if (recompute == Recompute::kSelective && shape.op_sac && shape.num_experts <= 0 && shape.linear_value_cols <= 0 &&
      shape.latent_cols <= 0 && shape.flash_attention) {
    return OpSacBytes(shape);
  }
  if (recompute == Recompute::kFull) {
    // Korthikanti §4.3: only the input of each layer is checkpointed, 2sbh (2sbh/t with SP).
    out.checkpoint_bytes = Div(kActivationBytes * tokens * h, replicated);
    return out;
  }

  double attention = 0;
  if (shape.linear_value_cols > 0) {
    // Gated DeltaNet, replicated over TP: the norm output feeding the projections, the qkvz and
    // ba outputs, the conv output (q, k, v), the recurrence's output and the gated norm's output
    // feeding out_proj. Not counted: the chunked kernel's per-chunk states (a d_k x d_v fp32
    // matrix per chunk and value head, flash-linear-attention chunk_gated_delta_rule).
    const double k = static_cast<double>(shape.linear_key_cols);
    const double v = static_cast<double>(shape.linear_value_cols);
    const double b_a = 2.0 * static_cast<double>(shape.linear_value_heads);
    attention = kActivationBytes * tokens *
                (h + (2 * k + 2 * v) + b_a + (2 * k + v) + v + v);
    attention += Div(mask * tokens * h, replicated);
    out.attention_bytes = attention;
    out.norm_bytes = Div(2 * NormInputBytes(shape) * tokens * h, replicated);
  } else {
  const double d_qk = static_cast<double>(shape.qk_head_dim > 0 ? shape.qk_head_dim : shape.head_dim);
  const double d_v = static_cast<double>(shape.v_head_dim > 0 ? shape.v_head_dim : shape.head_dim);
  // Ulysses with more ranks than k/v heads replicates k/v heads up to sp (ulysses_sp.py).
  const bool ulysses = shape.ulysses_sp > 1 && shape.context_parallel == ContextParallel::kNone;
  const int64_t kv_heads = ulysses ? std::max<int64_t>(shape.kv_heads, shape.ulysses_sp) : shape.kv_heads;
  const double a = static_cast<double>(shape.heads), g = static_cast<double>(kv_heads);
  attention = Div(LinearInputBytes(shape) * tokens * h, replicated);  // q/k/v input
  // Q, K, V and the attention output feeding o_proj.
  attention += Div(kActivationBytes * tokens * (a * d_qk + g * d_qk + g * d_v + a * d_v), t);
  // Eager q_norm/k_norm keep what any RMSNorm keeps (NormInputBytes) of q and k; the projections'
  // own outputs are freed (the rotary embedding keeps only cos and sin: autograd's mul saves the
  // operand the other's gradient needs). Measured: Qwen3-30B-A3B's activations on an H200
  // (docs/validation.md "One GPU, measured").
  if (shape.eager_modules() && !shape.compiled) {
    attention += Div(NormInputBytes(shape) * tokens * static_cast<double>(shape.qk_norm_cols), t);
  }
  // TransformerEngine's o_proj saves its own fp8 cast of the attention output.
  if (shape.fp8_saved_inputs) attention += Div(1.0 * tokens * a * d_v, t);
  // MLA's latent path: q_a / kv_a outputs and their norms, on every TP rank.
  attention += kActivationBytes * tokens * static_cast<double>(shape.latent_cols);
  attention += Div(mask * tokens * h, replicated);                              // output dropout
  // transformers: `attn_output.transpose(1, 2).contiguous()` feeds o_proj, a copy beside the
  // attention output SDPA (or eager's matmul) saves.
  if (shape.eager_modules()) attention += Div(kActivationBytes * tokens * a * d_v, t);
  if (shape.flash_attention) {
    attention += Div(4.0 * static_cast<double>(shape.heads) * tokens, t);  // logsumexp, fp32
  } else if (recompute != Recompute::kSelective) {
    // Scores of a heads over the full sequence (or the window) for this rank's tokens: a·S·T
    // entries. Saved: the softmax output (16-bit); with dropout also its 1-byte mask and the
    // dropout output (16-bit) that multiplies V, Korthikanti's 5as²b. Under Ulysses each rank has
    // a/sp heads of all S tokens, the same a·S·T.
    const double keys = shape.window > 0 ? std::min<double>(seq, static_cast<double>(shape.window)) : seq;
    const double scores = static_cast<double>(shape.heads) * keys * tokens;
    // transformers' eager_attention_forward: softmax(dtype=float32) saves its fp32 output and the
    // bf16 cast feeds the AV matmul, 4 + 2 bytes per score.
    const double probabilities = shape.eager_modules() ? 4.0 + kActivationBytes : kActivationBytes;
    const double per_score = probabilities + (shape.dropout ? kMaskBytes + kActivationBytes : 0);
    attention += Div(per_score * scores, t);
  }
  out.attention_bytes = attention;
  out.norm_bytes = Div(2 * NormInputBytes(shape) * tokens * h, replicated);
  }

  // Input of the MLP (fc1's, fp8 under TransformerEngine) or of the MoE block (the bf16 router's).
  const double block_input = shape.num_experts > 0 ? kActivationBytes : LinearInputBytes(shape);
  double mlp = Div(block_input * tokens * h, replicated);
  mlp += Div(mask * tokens * h, replicated);                    // output dropout
  if (shape.num_experts <= 0 && shape.tiled_mlp) {
    // TiledMLP saves x alone (counted above); its shards' tensors live only while one layer's
    // backward runs them (TiledMlpShardBytes, a working set).
  } else if (shape.num_experts <= 0) {
    mlp += tokens * FfnBytesPerToken(shape, Div(static_cast<double>(shape.ffn), t));
  } else {
    // Router probabilities: every rank routes all of its tokens (TP peers route the same ones;
    // Megatron's route their s/t sequence-parallel share).
    mlp += kRouterProbBytes * Div(tokens, shape.megatron_experts ? t : 1) * static_cast<double>(shape.num_experts);
    // Each assignment saves its dispatched input row (2h), the expert's ffn-wide tensors and the
    // expert output the routing weight multiplies (2h, needed for the router's gradient). AutoEP
    // keeps experts whole; AutoTP alone splits every expert's width by t, Megatron by etp.
    const int expert_tp = shape.megatron_experts ? std::max(shape.etp, 1) : shape.expert_parallel ? 1 : t;
    const int shared_tp = shape.expert_parallel && !shape.megatron_experts ? 1 : t;
    // NeMo AutoModel's DeepEP experts (--te-modules: GroupedExpertsDeepEP) multiply the routing
    // probability inside the activation (weighted_bias_swiglu_impl), so instead of the expert
    // output each assignment keeps its fp32 probability for the router's gradient.
    const double for_router = shape.te_modules ? kRouterProbBytes : kActivationBytes * h;
    const double per_assignment = LinearInputBytes(shape) * h + for_router +
                                  FfnBytesPerToken(shape, Div(static_cast<double>(shape.expert_ffn), expert_tp));
    mlp += ExpertAssignmentsPerRank(shape) * per_assignment;
    // The shared expert sees every token; it shares the block input saved above.
    if (shape.shared_expert_ffn > 0) {
      mlp += tokens * FfnBytesPerToken(shape, Div(static_cast<double>(shape.shared_expert_ffn), shared_tp));
    }
  }
  out.mlp_bytes = mlp;
  return out;
}

double TiledMlpShardBytes(const LayerShape& shape) {
  if (!shape.tiled_mlp || shape.num_experts > 0) return 0;
  const double tokens = LocalTokens(shape);
  const double h = static_cast<double>(shape.hidden);
  // TiledMLP.backward runs ceil(s / h) shards one after another (ulysses_sp.py tiled_mlp_forward's
  // num_shards): one shard's ffn-wide tensors at a time.
  const double shards = std::max(1.0, std::ceil(tokens / std::max(h, 1.0)));
  return tokens / shards * FfnBytesPerToken(shape, Div(static_cast<double>(shape.ffn), std::max(shape.tp, 1)));
}

double OutputLayerActivationBytes(const LayerShape& shape, int64_t vocab_size) {
  const double tokens = LocalTokens(shape);
  const int t = std::max(shape.tp, 1);
  const int replicated = shape.megatron_sp ? t : 1;
  // The final norm's saved input and lm_head's input; transformers' RMSNorm saves its fp32 upcast.
  const double h = static_cast<double>(shape.hidden);
  const double hidden_part = Div(NormInputBytes(shape) * tokens * h, replicated) +
                             Div(kActivationBytes * tokens * h, shape.lm_head_input_gathered ? 1 : replicated);
  // The logits are whole on every TP rank (AutoTP training keeps lm_head replicated); only the
  // Megatron comparison mode splits them vocab-parallel.
  // Megatron: 4 bytes per logit (its fused vocab-parallel cross-entropy). transformers'
  // ForCausalLMLoss (loss/loss_utils.py) upcasts the 16-bit logits (kept alive as the model
  // output, 2 bytes) to fp32 and log_softmax saves its fp32 output (4); the peak comes in the
  // loss's backward, which adds nll_loss's fp32 gradient and log_softmax's fp32 input gradient
  // (4 + 4) while every layer's activations are still held: 14 bytes per logit at the peak.
  if (shape.fused_loss) {
    // Liger-Kernel's fused_linear_cross_entropy_forward (src/liger_kernel/ops/
    // fused_linear_cross_entropy.py) runs the backward of lm_head and the loss inside forward, a
    // chunk of tokens at a time, with chunks sized so a chunk's logits hold about as many elements
    // as the input (BT x H, input dtype); it keeps grad_input (BT x H) and grad_weight (V x H, the
    // weight's dtype) for backward. No logits outlive a chunk.
    const double hidden = static_cast<double>(shape.hidden);
    return hidden_part + 2.0 * kActivationBytes * tokens * hidden +
           kActivationBytes * static_cast<double>(vocab_size) * hidden;
  }
  // Without the upcast (--bf16-loss, F.cross_entropy on the 16-bit logits) log_softmax saves a
  // 16-bit output and backward's two gradients are 16-bit: 2 + 2 + 2 (+ 2 for the logits, kept
  // unless the loop drops them) bytes per logit.
  // Compiled with Inductor (torchtitan's compile.components "loss"): the fused cross-entropy saves
  // its 16-bit input and a log-sum-exp per token, and its backward writes the 16-bit gradient in
  // one kernel: 2 + 2 bytes per logit, no fp32 copy.
  // torchtitan's eager loss (train.py at 9dec370: `del pred` before `loss.backward()`) holds no
  // 16-bit logits in backward. Under loss_parallel DTensor decomposes it
  // (torch/distributed/tensor/parallel/loss.py): _log_softmax keeps the fp32 input, `shifted` and
  // exp(shifted) at once, and _nll_loss_and_log_softmax_backward builds
  // `(grad_input + torch.exp(x)) * grad_output` beside the saved fp32 output: four fp32 tensors,
  // 16 bytes per logit, against the fused kernels' 12.
  const double kept_logits = shape.logits_freed_before_backward ? 0.0 : kActivationBytes;
  const double upcast_loss = kept_logits + (shape.loss_parallel ? 16.0 : 12.0);
  const double per_logit = !shape.hf_eager       ? 4.0
                           : shape.compiled_loss ? 2 * kActivationBytes
                           : shape.bf16_loss     ? kept_logits + 3 * kActivationBytes
                                                 : upcast_loss;
  const double vocab_part = Div(per_logit * tokens * static_cast<double>(vocab_size),
                                shape.megatron_sp || shape.vocab_parallel ? t : 1);
  return hidden_part + vocab_part;
}

}  // namespace dsp::sim
