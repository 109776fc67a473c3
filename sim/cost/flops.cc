// SPDX-License-Identifier: Apache-2.0
// Per-operator FLOPs and HBM bytes (see flops.h for the conventions and sources).
#include "sim/cost/flops.h"

#include <algorithm>
#include <cmath>

namespace dsp::sim {
namespace {

// [m, k] x [k, n]: 2mkn FLOPs; reads the input and the weight, writes the output.
OperatorCost Matmul(std::string_view name, double m, double k, double n, double bytes_per_element) {
  OperatorCost op{name, 2.0 * m * k * n, (m * k + k * n + m * n) * bytes_per_element};
  op.kind = KernelKind::kMatmul;
  op.rows = m;
  op.cols = n;
  op.input_elements = m * k;
  op.weight_elements = k * n;
  return op;
}

// A memory-bound kernel moving `bytes` through HBM.
OperatorCost Memory(std::string_view name, double bytes) {
  OperatorCost op{name, 0, bytes};
  op.kind = KernelKind::kMemory;
  return op;
}

// Bytes per element of transformers' eager modules, read from their forward (transformers 5.x,
// models/llama/modeling_llama.py and loss/loss_utils.py), each aten kernel reading its inputs and
// writing its output once (bf16 activations):
//  - LlamaRMSNorm: to(fp32) 2 + 4, pow 4 + 4, mean 4, x * rsqrt 4 + 4, to(bf16) 4 + 2,
//    weight * 2 + 2: 36 bytes in 8 kernels (with the eps add and rsqrt on the row statistics);
//  - rotary, per q or k element: x * cos 2 + 2, rotate_half's neg on half and cat 1 + 1 + 2 + 2,
//    * sin 2 + 2, the sum 4 + 2: 20 bytes in 5 kernels;
//  - act_fn(gate) * up: silu 2 + 2, the product 4 + 2: 10 bytes per MLP element in 2 kernels;
//  - ForCausalLMLoss: logits.float() 2 + 4, log_softmax (max, sum of exp, write) 4 + 4 + 4 + 4:
//    22 bytes per logit in 3 kernels; without the upcast (--bf16-loss) log_softmax alone on the
//    16-bit logits, 2 + 2 + 2 + 2 bytes in 2 kernels.
// Megatron's fused kernels move 2 x 2 (a norm), 2 x 2 (rotary), 3 x 2 (SwiGLU) and 2 + 4 + 4
// (vocab-parallel cross-entropy).
}  // namespace

EagerBytes EagerBytesPerElement(const ModelSpec& model, const ShardShape& shard) {
  const double bpe = shard.bytes_per_element;
  EagerBytes e = {2 * bpe, 1, 2 * bpe, 1, 3 * bpe, 1, bpe + 8, 1};
  if (shard.hf_eager) {
    // LayerNorm models run torch's fused layer_norm kernel.
    const double norm = model.layer_norm ? 2 * bpe : 36, norm_kernels = model.layer_norm ? 1 : 8;
    e = {norm, norm_kernels, 20, 5, 10, 2, 22, 3};
    if (shard.bf16_loss) e.loss = 4 * bpe, e.loss_kernels = 2;
  }
  if (shard.hf_eager && shard.te_modules) {
    // TransformerEngine's RMSNorm and Megatron's fused SwiGLU (weighted_bias_swiglu_impl); the
    // rotary embedding is NeMo AutoModel's rope_utils.apply_rotary_emb, an fp32 complex multiply,
    // per element: x.float() 2 + 4, the product 4 + 4 (the frequencies, one per position and pair,
    // are read once for every head), the cast back 4 + 2: 20 bytes in 3 kernels.
    e.norm = 2 * bpe, e.norm_kernels = 1;
    e.activation = 3 * bpe, e.activation_kernels = 1;
    e.rotary = 20, e.rotary_kernels = 3;
  }
  if (shard.hf_eager && shard.torch_compile) {
    // torchtitan's apply_compile (torch.compile per TransformerBlock): Inductor fuses RMSNorm's
    // fp32 steps into one kernel (read and write the 16-bit tensor), the rotary embedding's
    // complex multiply likewise, and silu(gate) * up into one kernel over the two inputs and the
    // output. The final norm and the loss are outside the blocks (the loss compiled apart, below).
    e.norm = 2 * bpe, e.norm_kernels = 1;
    e.rotary = 2 * bpe, e.rotary_kernels = 1;
    e.activation = 3 * bpe, e.activation_kernels = 1;
  }
  // A compiled loss (torchtitan's compile.components "loss"): Inductor reduces the 16-bit logits
  // to the log-sum-exp in one fused reduction without materializing the fp32 upcast: 2 bytes per
  // logit read, and its backward reads them again and writes the 16-bit gradient.
  if (shard.hf_eager && shard.compiled_loss) e.loss = bpe, e.loss_kernels = 1;
  // --fused-loss: Liger's loss kernel makes two passes over a chunk's 16-bit logits and writes the
  // gradient in place; it runs lm_head's backward GEMMs inside forward, chunk by chunk, the same
  // work as lm_head's forward and backward (fused_linear_cross_entropy.py).
  if (shard.fused_loss) e.loss = 3 * bpe, e.loss_kernels = 2;
  return e;
}

namespace {

OperatorCost EagerMemory(std::string_view name, double elements, double bytes_per_element, double kernels) {
  OperatorCost op = Memory(name, elements * bytes_per_element);
  op.kernels = kernels;
  return op;
}

}  // namespace

OperatorCost MoePermute(double assignments, double h, double expert_width, const ShardShape& shard) {
  const double bpe = shard.bytes_per_element;
  if (shard.eager_modules()) {
    // transformers 5.17's grouped_mm experts, as the profiler traces them (Qwen3-MoE, Mixtral):
    // the rows gathered into expert order (index, 2 passes of k x tokens x h), masked_fill on the
    // grouped GEMMs' input and down output (2 + 2) and on gate_up's output (2 x the 2 x width),
    // the routing-weight product (2), the rows gathered back (2) and summed over k (1): 11 passes
    // over the rows plus 4 over the gate_up width, in about 12 kernels (sorts, histc, cumsum).
    return EagerMemory("moe_permute", assignments * (11.0 * h + 4.0 * expert_width), bpe, 12);
  }
  // Permute the routed rows into expert order and back (index copies of k x tokens rows).
  return Memory("moe_permute", 2.0 * 2.0 * assignments * h * bpe);
}

namespace {

// Adds `count` copies of a matmul into one operator (the per-expert GEMMs of a grouped GEMM).
void Accumulate(OperatorCost& into, const OperatorCost& op, double count) {
  into.flops += op.flops * count;
  into.bytes += op.bytes * count;
  into.rows = op.rows;
  into.cols = op.cols;
  into.kernels = count;
  into.kind = op.kind;
  into.input_elements += op.input_elements * count;
  into.weight_elements += op.weight_elements * count;
}

// gate, up (hidden -> width) and down (width -> hidden) on m tokens, as one operator.
OperatorCost GatedMlp(std::string_view name, double m, double h, double width, double bpe) {
  OperatorCost op{name, 0, 0};
  Accumulate(op, Matmul(name, m, h, width, bpe), 2);
  Accumulate(op, Matmul(name, m, width, h, bpe), 1);
  op.kernels = 3;
  return op;
}

// MLA (DeepseekV2/V3Attention): q through q_a -> q_a_layernorm -> q_b (or one q_proj), k/v from
// kv_a_proj_with_mqa's kv_lora_rank latent plus the shared rotary key, expanded per head by
// kv_b_proj. The down projections are replicated over TP (the deepseek_v2 preset skips them),
// the per-head up projections split by heads.
void LatentProjections(const ModelSpec& m, double tokens, const ShardShape& shard,
                       std::vector<OperatorCost>& ops) {
  const double bpe = shard.bytes_per_element;
  // The busiest tp rank's head share (uneven key-value heads give rank 0 more).
  const double tp = shard.attention_tp > 0 ? shard.attention_tp : shard.tp;
  const double h = static_cast<double>(m.hidden_size);
  const double heads = static_cast<double>(m.num_attention_heads);
  const double qk = static_cast<double>(m.qk_head_dim());
  const double q_rank = static_cast<double>(m.q_lora_rank);
  const double kv_rank = static_cast<double>(m.kv_lora_rank);
  if (m.q_lora_rank > 0) {
    ops.push_back(Matmul("q_a_proj", tokens, h, q_rank, bpe));
    ops.push_back(Memory("q_a_layernorm", 2.0 * tokens * q_rank * bpe));
    ops.push_back(Matmul("q_b_proj", tokens, q_rank, heads * qk / tp, bpe));
  } else {
    ops.push_back(Matmul("q_proj", tokens, h, heads * qk / tp, bpe));
  }
  ops.push_back(Matmul("kv_a_proj", tokens, h, kv_rank + static_cast<double>(m.qk_rope_head_dim), bpe));
  ops.push_back(Memory("kv_a_layernorm", 2.0 * tokens * kv_rank * bpe));
  ops.push_back(Matmul("kv_b_proj", tokens, kv_rank,
                       heads * static_cast<double>(m.qk_nope_head_dim + m.v_head_dim) / tp, bpe));
}

// Gated DeltaNet (Qwen3NextGatedDeltaNet, flash-linear-attention's chunked gated delta rule):
// in_proj_qkvz and in_proj_ba, a depthwise causal conv over q/k/v, the chunked recurrence, a
// gated RMSNorm and out_proj. The recurrence per value head and token, with chunks of C = 64:
// intra-chunk QK^T and the WY transform 2C(2 d_k + d_v), the state's read, update and
// correction 6 d_k d_v (FLA chunk_gated_delta_rule). Replicated over TP (no AutoTP pattern
// covers these projections).
void GatedDeltaNetOperators(const ModelSpec& m, double tokens, double outside,
                            const ShardShape& shard, std::vector<OperatorCost>& ops) {
  constexpr double kChunk = 64;
  const double bpe = shard.bytes_per_element;
  const double h = static_cast<double>(m.hidden_size);
  const double dk = static_cast<double>(m.linear_key_head_dim);
  const double dv = static_cast<double>(m.linear_value_head_dim);
  const double key = static_cast<double>(m.linear_num_key_heads) * dk;
  const double vheads = static_cast<double>(m.linear_num_value_heads);
  const double value = vheads * dv;
  ops.push_back(Matmul("in_proj_qkvz", tokens, h, 2.0 * key + 2.0 * value, bpe));
  ops.push_back(Matmul("in_proj_ba", tokens, h, 2.0 * vheads, bpe));
  ops.push_back(Memory("conv1d", 2.0 * tokens * (2.0 * key + value) * bpe));
  OperatorCost core{"linear_attention",
                    tokens * vheads * (2.0 * kChunk * (2.0 * dk + dv) + 6.0 * dk * dv),
                    tokens * (2.0 * key + 2.0 * value) * bpe};
  core.kind = KernelKind::kAttention;
  core.attention_core = true;
  ops.push_back(core);
  ops.push_back(Memory("gated_norm", 3.0 * tokens * value * bpe));
  ops.push_back(Matmul("out_proj", tokens, value, h, bpe));
  (void)outside;
}

// What every block of one layer reads: the shard's sizes and the eager kernels' bytes.
struct LayerDims {
  double bpe = 2, tp = 1, sp = 1;
  // Attention's divisor on the busiest tp rank: tp, or N/N0 when the key-value heads split
  // unevenly (every layer waits for the rank with more heads).
  double atp = 1;
  double b = 1, s = 1, h = 0, d = 0, heads = 0, kv_heads = 0;
  double tokens = 0;   // tokens a rank holds outside attention: TP peers share them, Ulysses splits the sequence
  // Tokens of the kernels outside the tensor-parallel regions (norms, residual adds): every TP
  // rank runs them on all tokens, except under Megatron sequence parallelism (s / tp each).
  double outside = 0;
  double hidden_mask = 0, attn_mask = 0;  // 1-byte dropout masks
  EagerBytes eager{};
};

LayerDims DimsOf(const ModelSpec& model, const ShardShape& shard) {
  LayerDims x;
  x.bpe = shard.bytes_per_element;
  x.tp = shard.tp;
  x.sp = shard.sp;
  x.atp = shard.attention_tp > 0 ? shard.attention_tp : x.tp;
  x.b = static_cast<double>(shard.micro_batch);
  x.s = static_cast<double>(shard.seq_len);
  x.h = static_cast<double>(model.hidden_size);
  x.d = static_cast<double>(model.head_dim);
  x.heads = static_cast<double>(model.num_attention_heads);
  x.kv_heads = static_cast<double>(model.num_key_value_heads);
  x.tokens = x.b * x.s / x.sp;
  x.outside = shard.megatron_sp ? x.tokens / x.tp : x.tokens;
  x.hidden_mask = model.hidden_dropout > 0 ? 1.0 : 0.0;
  x.attn_mask = model.attention_dropout > 0 ? 1.0 : 0.0;
  x.eager = EagerBytesPerElement(model, shard);
  return x;
}

// What PyTorch's ring attention does around each step's fused call (torch/distributed/tensor/
// experimental/_attention.py at torchtitan's December 2024 torch, 1963fc8: _templated_ring_attention,
// _SDPAMerger, _templated_ring_attention_backward; convert_to_f32 and load balancing on by default).
// With the load-balanced chunks a rank runs half its steps on the whole local query and half on its
// second half (`partial`). Per rank and layer, over nq output and nkv key-value elements:
//  - forward, each of the cp - 1 steps after the first: K and V concatenated for the rotater
//    (2 + 2 bytes an element), the step's output cast to fp32 (2 + 4) and merged into the running
//    output (out - sigmoid(lse') * (out - block_out): 12 + 8 + 12), a partial step on half the
//    rows and then torch.cat rebuilding the whole output (4 + 4): 38 bytes a full step, 27 a partial
//    one; the first step's cast and the final cast back (6 + 6);
//  - backward, each of the cp steps: dq and dK/dV accumulated in fp32 (4 + 2 read, 4 written; a
//    partial step adds to half and concatenates, 13), dK/dV concatenated for the all-to-all that
//    passes them on (4 + 4), K and V concatenated (4, cp - 1 steps); zero-filled fp32 gradients
//    at the start and cast back at the end (4 + 6).
OperatorCost TorchRingMerge(double b, double s, double q_heads_rank, double kv_heads_rank, double d_qk, double d_v,
                            const ShardShape& shard) {
  const double cp = shard.attention_key_split;
  const double nq = b * s * q_heads_rank * d_v;
  const double nkv = b * s * kv_heads_rank * (d_qk + d_v);
  OperatorCost merge = Memory("cp_ring_merge", (cp - 1) * (4 * nkv + (38 + 27) / 2.0 * nq) + 12 * nq);
  merge.backward_bytes = cp * ((10 + 13) / 2.0 * nkv + 8 * nkv + (10 + 13) / 2.0 * nq) + 4 * (cp - 1) * nkv +
                         10 * (nq + nkv);
  merge.kernels = 6 * cp;
  merge.attention_core = true;  // selective recompute re-runs the ring with the attention
  return merge;
}

// The attention core on a rank's heads: one fused kernel (FlashAttention and kin) or the eager
// chain of QK^T, softmax, dropout and AV.
void AttentionCoreOperators(const ModelSpec& model, AttentionKind kind, const LayerDims& x, const ShardShape& shard,
                            double q_heads_rank, double kv_heads_rank, std::vector<OperatorCost>& ops) {
  const double b = x.b, s = x.s, bpe = x.bpe;
  const double d_qk = static_cast<double>(model.qk_head_dim());
  const double d_v = static_cast<double>(model.value_head_dim());
  // Keys each query is charged for, in the full-square convention (a causal full layer counts
  // S keys per query, twice the work it does): a window of w does about S·w - w²/2 work, so it
  // is charged 2w - w²/S; a chunk of c is causal inside the chunk, charged c.
  double keys = s;
  if (kind == AttentionKind::kSliding && model.sliding_window > 0 && model.sliding_window < s) {
    const double w = static_cast<double>(model.sliding_window);
    keys = 2.0 * w - w * w / s;
  } else if (kind == AttentionKind::kChunked && model.attention_chunk_size > 0) {
    keys = std::min<double>(s, static_cast<double>(model.attention_chunk_size));
  }
  const double attention_flops = 2.0 * b * s * keys * (d_qk + d_v) * q_heads_rank;
  const double qkvo_bytes = b * s * (q_heads_rank * (d_qk + d_v) + kv_heads_rank * (d_qk + d_v)) * bpe;
  if (shard.flash_attention) {
    OperatorCost attn{"attention", attention_flops, qkvo_bytes};
    attn.kind = KernelKind::kAttention;
    attn.attention_core = true;
    attn.attention_shape = FusedAttentionShape(model, kind, shard, b, s, q_heads_rank);
    // FlashAttention, cuDNN's and PyTorch's fused kernels skip the masked tiles of a causal
    // layer: half the full-square work (FlashAttention-2, Dao 2023, §3.1.1; measured on an H200,
    // docs/validation.md "One GPU, measured": forward time follows the causal work).
    attn.executed = 0.5;
    ops.push_back(attn);
    if (shard.torch_ring_attention && shard.attention_key_split > 1) {
      ops.push_back(TorchRingMerge(b, s, q_heads_rank, kv_heads_rank, d_qk, d_v, shard));
    }
    return;
  }
  // Megatron's CoreAttention before FlashAttention: baddbmm writes the scores, a fused
  // scale-mask-softmax reads and rewrites them, dropout reads them and writes its output and
  // mask, and bmm reads the probabilities with V. Both GEMMs batch b x heads problems with a
  // head_dim inner (QK^T) or output (AV) dimension, which makes them memory-heavy.
  const double scores = b * q_heads_rank * s * keys;
  const double qk_share = d_qk / (d_qk + d_v);
  OperatorCost qk{"attention", attention_flops * qk_share,
                  (b * s * d_qk * (q_heads_rank + kv_heads_rank) + scores) * bpe};
  qk.rows = s;
  qk.cols = keys * b * q_heads_rank;
  qk.attention_core = true;
  ops.push_back(qk);
  // transformers' eager_attention_forward adds the causal mask (2 + 2 + 2), takes the softmax in
  // fp32 (two passes over the bf16 scores, 4-byte output) and casts it back to bf16 (4 + 2): 20
  // bytes per score in 3 kernels; Megatron's fused scale-mask-softmax reads and writes the scores
  // once.
  OperatorCost softmax = shard.eager_modules() ? EagerMemory("softmax", scores, 20, 3) : Memory("softmax", 2.0 * scores * bpe);
  softmax.attention_core = true;
  ops.push_back(softmax);
  if (x.attn_mask > 0) {
    OperatorCost dropout = Memory("attention_dropout", scores * (2.0 * bpe + x.attn_mask));
    dropout.attention_core = true;
    ops.push_back(dropout);
  }
  OperatorCost av{"attention", attention_flops * (1.0 - qk_share),
                  (scores + b * s * d_v * (kv_heads_rank + q_heads_rank)) * bpe};
  av.rows = s;
  av.cols = d_v * b * q_heads_rank;
  av.attention_core = true;
  ops.push_back(av);
}

// A softmax-attention block (full, sliding, chunked; MHA, GQA or MLA): projections, rotary, the
// core, the output gate and o_proj.
void AttentionBlockOperators(const ModelSpec& model, AttentionKind kind, const LayerDims& x, const ShardShape& shard,
                             std::vector<OperatorCost>& ops) {
  const double bpe = x.bpe, atp = x.atp, h = x.h, d = x.d, heads = x.heads, tokens = x.tokens;
  if (model.mla()) {
    LatentProjections(model, tokens, shard, ops);
  } else {
    // qwen3_next's gated attention: q_proj also emits the output gate, as wide as the query.
    const double q_cols = heads * d * (model.attention_output_gate ? 2.0 : 1.0);
    ops.push_back(Matmul("q_proj", tokens, h, q_cols / atp, bpe));
    ops.push_back(Matmul("k_proj", tokens, h, x.kv_heads * d / atp, bpe));
    ops.push_back(Matmul("v_proj", tokens, h, x.kv_heads * d / atp, bpe));
  }
  // Inside attention a rank holds the whole sequence for heads / (tp x sp) heads. Ulysses
  // repeats K/V heads when sp exceeds them, so a rank never holds less than one. MLA's kv_b
  // expands the latent to every head, so its K/V heads are the query heads.
  const double q_heads_rank = heads / (atp * x.sp);
  const double kv_heads_rank = model.mla() ? q_heads_rank : std::max(x.kv_heads / (atp * x.sp), 1.0);
  if (model.rotary()) {
    // Rotary embedding on q and k (MLA rotates only the qk_rope_head_dim part; GPT-2 has learned
    // positions, BLOOM ALiBi).
    // Nemotron turns partial_rotary_factor of each head (rotary_fraction); the rest passes through.
    const double rotated = model.mla() ? static_cast<double>(model.qk_rope_head_dim) : d * model.rotary_fraction;
    ops.push_back(EagerMemory("rotary", x.b * x.s * rotated * (q_heads_rank + kv_heads_rank), x.eager.rotary,
                              x.eager.rotary_kernels));
  }
  AttentionCoreOperators(model, kind, x, shard, q_heads_rank, kv_heads_rank, ops);
  if (model.attention_output_gate) {
    // sigmoid(gate) * attention output, elementwise.
    ops.push_back(Memory("attention_gate", 3.0 * tokens * heads * d / atp * bpe));
  }
  ops.push_back(Matmul("o_proj", tokens, heads * static_cast<double>(model.value_head_dim()) / atp, h, bpe));
}

void DenseMlpOperators(const ModelSpec& model, const LayerDims& x, std::vector<OperatorCost>& ops) {
  const double bpe = x.bpe, h = x.h, tokens = x.tokens;
  const double f = static_cast<double>(model.intermediate_size) / x.tp;
  if (model.gated_mlp) {
    ops.push_back(Matmul("mlp_gate", tokens, h, f, bpe));
    ops.push_back(Matmul("mlp_up", tokens, h, f, bpe));
    ops.push_back(EagerMemory("mlp_activation", tokens * f, x.eager.activation,  // silu(gate) * up
                              x.eager.activation_kernels));
    ops.push_back(Matmul("mlp_down", tokens, f, h, bpe));
  } else {
    ops.push_back(Matmul("mlp_fc1", tokens, h, f, bpe));
    if (model.squared_relu) {
      // relu2: relu(x) then its square, two kernels (transformers' ReLUSquaredActivation,
      // Megatron-Core's activations.py squared_relu: torch.pow(F.relu(x), 2)), 2 + 2 bytes each.
      ops.push_back(EagerMemory("mlp_activation", tokens * f, 4.0 * bpe, 2));
    } else {
      ops.push_back(Memory("mlp_activation", 2.0 * tokens * f * bpe));  // bias + GeLU, fused
    }
    ops.push_back(Matmul("mlp_fc2", tokens, f, h, bpe));
  }
}

// A MoE block: router, permutation, the routed experts (local under AutoEP, TP-split without),
// and the shared expert.
void MoeOperators(const ModelSpec& model, const LayerDims& x, const ShardShape& shard, std::vector<OperatorCost>& ops) {
  const double bpe = x.bpe, h = x.h, tokens = x.tokens, tp = x.tp;
  const double experts = static_cast<double>(model.num_experts);
  const double top_k = static_cast<double>(model.num_experts_per_tok);
  // The router scores every token on every TP peer (AutoEP folding routes the full batch);
  // Megatron's routes the rank's s/tp sequence-parallel tokens (router.py).
  const double routed_tokens = shard.megatron_experts ? tokens / tp : tokens;
  ops.push_back(Matmul("router", routed_tokens, h, experts, bpe));

  const double expert_width = static_cast<double>(model.moe_intermediate_size);
  OperatorCost routed{"experts", 0, 0};
  double assignments = tokens * top_k;
  double width_rank = expert_width / tp;  // without expert parallelism: split across TP like a dense MLP
  if (shard.megatron_experts) {
    // token_dispatcher.py: each rank dispatches k x its s/tp tokens; uniform routing brings as many
    // to its E / ep experts from the EP peers, and with etp > 1 the expert-TP group all-gathers
    // them (MoEAlltoAllTokenDispatcher; the all-gather dispatcher selects the same rows), each
    // expert's fc1 split by columns and fc2 by rows over etp (experts.py).
    assignments = routed_tokens * top_k * shard.etp;
    width_rank = expert_width / shard.etp;
  } else if (shard.expert_parallel) {
    // Folding keeps assignment i on TP rank i % tp, so each TP peer dispatches k x tokens / tp
    // assignments; uniform routing brings as many back to this rank's E / ep experts.
    assignments = tokens * top_k / tp;
    width_rank = expert_width;
  }
  const double local_experts = shard.expert_parallel ? experts / shard.ep : experts;
  Accumulate(routed, GatedMlp("experts", assignments / local_experts, h, width_rank, bpe), local_experts);
  routed.kernels = 3 * local_experts;
  if (shard.grouped_experts) {
    // One kernel per projection whose tiles are every local expert's (transformers 5's
    // grouped_mm experts, the default for Qwen3-MoE and Mixtral; torchtitan's GroupedExperts;
    // Megatron's --moe-grouped-gemm): the wave tail is paid once, not per expert.
    routed.rows *= static_cast<double>(routed.kernels) / 3;
    routed.kernels = 3;
  }
  // The routed rows' activation, act_fn(gate) * up, over each assignment's expert width.
  const EagerBytes eager = EagerBytesPerElement(model, shard);
  ops.push_back(EagerMemory("experts_activation", assignments * width_rank, eager.activation, eager.activation_kernels));
  if (model.expert_bias && shard.te_modules && shard.expert_parallel) {
    // NeMo AutoModel's DeepEP experts (components/moe/layers.py GroupedExpertsDeepEP._apply_bias at
    // 8d9bfb90) add each local expert's bias in a Python loop over torch.split, then torch.cat:
    // gate_up's in the rows' dtype (the add and the cat, 2 x (2 + 2) bytes per element of 2f),
    // down's scaled by the fp32 routing probability (b * p written in fp32, t + b * p promoted to
    // fp32, the cat, the cast back: 4 + 6 + 4 + 8 + 6 bytes per element of h).
    OperatorCost bias = Memory("experts_bias", assignments * (8.0 * 2.0 * width_rank + 28.0 * h));
    bias.kernels = 3 * local_experts + 3;
    ops.push_back(bias);
  }
  ops.push_back(MoePermute(assignments, h, width_rank, shard));
  ops.push_back(routed);

  if (model.shared_expert_intermediate_size > 0) {
    // Under folding the shared expert is replicated over TP (gradients AVERAGEd, auto_ep_folding.py);
    // Megatron's SharedExpertMLP is TP-split like the dense MLP (moe_layer.py).
    const double split = shard.expert_parallel && !shard.megatron_experts ? 1.0 : tp;
    OperatorCost shared =
        GatedMlp("shared_expert", tokens, h, static_cast<double>(model.shared_expert_intermediate_size) / split, bpe);
    if (model.shared_expert_gate) {
      Accumulate(shared, Matmul("shared_expert", tokens, h, 1, bpe), 1);  // sigmoid gate
      shared.kernels = 4;
    }
    ops.push_back(shared);
  }
}

// The layer's linear GEMMs (everything kMatmul but the router) to FP8, and their casts.
void ApplyFp8(Fp8Linear recipe, bool compiled, std::vector<OperatorCost>& ops) {
  std::vector<OperatorCost> fp8_ops;
  for (OperatorCost& op : ops) {
    // The attention core (materialized QK^T and AV) and the router stay in bf16; so do torchtitan's
    // routed experts (GroupedExperts' 3-D parameters are not nn.Linear: the float8 converter
    // swaps nn.Linear modules only, torchtitan components/quantization/float8.py).
    if (op.kind != KernelKind::kMatmul || op.attention_core || op.name == "router") continue;
    if (recipe == Fp8Linear::kTorchaoFloat8 && op.name == "experts") continue;
    op.fp8 = true;
    fp8_ops.push_back(op);
  }
  const Fp8Cast cast = Fp8CastBytes(fp8_ops, recipe, compiled);
  OperatorCost c = Memory("fp8_cast", cast.bytes);
  c.kernels = cast.kernels;
  if (c.bytes > 0) ops.push_back(c);
}

}  // namespace

AttentionShape FusedAttentionShape(const ModelSpec& model, AttentionKind kind, const ShardShape& shard, double b,
                                   double s, double q_heads_rank) {
  // The table behind attention_shape.h is causal: at length L a query walks L / 2 keys on average.
  // A causal call walks its chunk of the sequence (s / cp under chunked context parallelism); a
  // sliding window's query walks the whole window, as a causal call of twice its length; a chunked
  // layer is causal inside its chunk.
  double key_length = s / std::max(shard.attention_key_split, 1);
  if (kind == AttentionKind::kSliding && model.sliding_window > 0) {
    key_length = std::min(key_length, 2.0 * static_cast<double>(model.sliding_window));
  } else if (kind == AttentionKind::kChunked && model.attention_chunk_size > 0) {
    key_length = std::min(key_length, static_cast<double>(model.attention_chunk_size));
  }
  const double d = (static_cast<double>(model.qk_head_dim()) + static_cast<double>(model.value_head_dim())) / 2;
  // Blocks: the rank's sequences x heads x query blocks of 128 rows.
  return {d, key_length, b * q_heads_rank * std::ceil(s / 128.0)};
}

Fp8Cast Fp8CastBytes(const std::vector<OperatorCost>& fp8_ops, Fp8Linear recipe, bool compiled) {
  Fp8Cast out;
  for (const OperatorCost& op : fp8_ops) {
    switch (recipe) {
      case Fp8Linear::kNone: break;
      case Fp8Linear::kTransformerEngine:
        // The norm writes q/k/v's and the MLP's first input in fp8; o_proj's and the down
        // projection's inputs are cast (with their transposes). One kernel each.
        if (op.name == "o_proj" || op.name == "mlp_down" || op.name == "mlp_fc2") {
          out.bytes += 4.0 * op.input_elements;
          out.kernels += 1;
        }
        break;
      case Fp8Linear::kTorchaoFloat8:
        if (compiled) {
          out.bytes += 3.0 * op.input_elements + 5.0 * op.weight_elements;
          out.kernels += 3.0 * op.kernels;  // the input's cast; the weight's amax and cast
        } else {
          out.bytes += 5.0 * (op.input_elements + op.weight_elements);
          out.kernels += 4.0 * op.kernels;
        }
        break;
    }
  }
  return out;
}

std::vector<OperatorCost> AttentionCoreForward(const ModelSpec& model, AttentionKind kind, const ShardShape& shard,
                                               double q_heads_rank, double kv_heads_rank) {
  std::vector<OperatorCost> ops;
  AttentionCoreOperators(model, kind, DimsOf(model, shard), shard, q_heads_rank, kv_heads_rank, ops);
  return ops;
}

std::vector<OperatorCost> LayerForwardOperators(const ModelSpec& model, int64_t layer,
                                                const ShardShape& shard) {
  const LayerDims x = DimsOf(model, shard);
  const double h = x.h, outside = x.outside;
  // Bias (if any), dropout and the residual add, fused (Megatron bias_dropout_add): reads the
  // projection output and the residual, writes the sum and the mask.
  const double residual_bytes = outside * h * (3.0 * x.bpe + x.hidden_mask);
  std::vector<OperatorCost> ops;
  ops.reserve(20);
  ops.push_back(EagerMemory("input_norm", outside * h, x.eager.norm, x.eager.norm_kernels));
  const AttentionKind kind = model.LayerAttention(layer);
  if (kind == AttentionKind::kLinear) {
    GatedDeltaNetOperators(model, x.tokens, outside, shard, ops);
  } else {
    AttentionBlockOperators(model, kind, x, shard, ops);
  }
  ops.push_back(Memory("residual_add", residual_bytes));
  ops.push_back(EagerMemory("post_attention_norm", outside * h, x.eager.norm, x.eager.norm_kernels));
  if (model.norms_per_layer == 4) {
    // gemma: the attention output and the MLP input and output are normalised too.
    ops.push_back(EagerMemory("extra_norms", 2.0 * outside * h, x.eager.norm, 2 * x.eager.norm_kernels));
  }
  if (model.IsMoeLayer(layer)) {
    MoeOperators(model, x, shard, ops);
  } else {
    const size_t first = ops.size();
    DenseMlpOperators(model, x, ops);
    if (shard.tiled_mlp) {
      for (size_t i = first; i < ops.size(); ++i) ops[i].tiled = true;
    }
  }
  ops.push_back(Memory("residual_add", residual_bytes));
  if (shard.fp8 != Fp8Linear::kNone) ApplyFp8(shard.fp8, shard.torch_compile, ops);
  return ops;
}

std::vector<OperatorCost> HeadForwardOperators(const ModelSpec& model, const ShardShape& shard) {
  const double tokens = static_cast<double>(shard.micro_batch * shard.seq_len) / shard.sp;
  const double h = static_cast<double>(model.hidden_size);
  // AutoTP training leaves lm_head whole (replace_module.py's set_lm_head returns early in
  // training mode; LmHeadLinearAllreduce is for inference): every TP rank computes all logits.
  // Megatron's parallel lm_head splits the vocabulary over TP.
  const double vocab =
      static_cast<double>(model.vocab_size) / (shard.vocab_parallel || shard.lm_head_split ? shard.tp : 1);
  const double outside = shard.megatron_sp ? tokens / shard.tp : tokens;
  // torchtitan's apply_compile compiles the TransformerBlocks only: the final norm runs eager, and
  // the loss too unless it is compiled apart (ShardShape::compiled_loss, EagerBytes).
  ShardShape outside_blocks = shard;
  outside_blocks.torch_compile = false;
  const EagerBytes eager = EagerBytesPerElement(model, outside_blocks);
  std::vector<OperatorCost> ops;
  ops.push_back(EagerMemory("final_norm", outside * h, eager.norm, eager.norm_kernels));
  ops.push_back(Matmul("lm_head", tokens, h, vocab, shard.bytes_per_element));
  // Cross-entropy in fp32 (Megatron's vocab_parallel_cross_entropy reads the 16-bit logits,
  // writes and reads back the fp32 softmax; transformers upcasts the logits first, EagerBytes).
  ops.push_back(EagerMemory("cross_entropy", tokens * vocab, eager.loss, eager.loss_kernels));
  return ops;
}

std::vector<OperatorCost> EmbeddingForwardOperators(const ModelSpec& model,
                                                    const ShardShape& shard) {
  const double tokens = static_cast<double>(shard.micro_batch * shard.seq_len) / shard.sp;
  const double h = static_cast<double>(model.hidden_size);
  const double bpe = shard.bytes_per_element;
  // Lookup (gather rows, write them); a learned position embedding adds a read and an add;
  // BLOOM's embedding LayerNorm and GPT's embedding dropout one more pass each.
  double passes = 2.0;
  if (model.learned_positions > 0) passes += 3.0;
  if (model.embedding_norm) passes += 2.0;
  if (model.hidden_dropout > 0) passes += 2.0;
  return {Memory("embedding", passes * tokens * h * bpe)};
}

double SumFlops(const std::vector<OperatorCost>& ops) {
  double total = 0;
  for (const OperatorCost& op : ops) total += op.flops;
  return total;
}

double ModelForwardFlops(const ModelSpec& model, const ShardShape& shard) {
  double total = SumFlops(HeadForwardOperators(model, shard));
  // Layers of one kind (MoE or dense, attention kind) cost the same: cost one of each.
  for (const ModelSpec::LayerRun& run : model.LayerKinds(0, model.num_hidden_layers)) {
    total += static_cast<double>(run.count) *
             SumFlops(LayerForwardOperators(model, run.representative, shard));
  }
  return total;
}

double ModelTrainingFlops(const ModelSpec& model, int64_t sequences, int64_t seq_len) {
  ShardShape whole;
  whole.micro_batch = sequences;
  whole.seq_len = seq_len;
  return (1.0 + kBackwardFlopsPerForward) * ModelForwardFlops(model, whole);
}

}  // namespace dsp::sim
