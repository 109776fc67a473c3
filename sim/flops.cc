// SPDX-License-Identifier: Apache-2.0
// Per-operator FLOPs and HBM bytes (see flops.h for the conventions and sources).
#include "sim/flops.h"

#include <algorithm>

namespace dsp::sim {
namespace {

// [m, k] x [k, n]: 2mkn FLOPs; reads the input and the weight, writes the output.
OperatorCost Matmul(std::string_view name, double m, double k, double n, double bytes_per_element) {
  OperatorCost op{name, 2.0 * m * k * n, (m * k + k * n + m * n) * bytes_per_element};
  op.kind = KernelKind::kMatmul;
  op.rows = m;
  op.cols = n;
  return op;
}

// A memory-bound kernel moving `bytes` through HBM.
OperatorCost Memory(std::string_view name, double bytes) {
  OperatorCost op{name, 0, bytes};
  op.kind = KernelKind::kMemory;
  return op;
}

// Adds `count` copies of a matmul into one operator (the per-expert GEMMs of a grouped GEMM).
void Accumulate(OperatorCost& into, const OperatorCost& op, double count) {
  into.flops += op.flops * count;
  into.bytes += op.bytes * count;
  into.rows = op.rows;
  into.cols = op.cols;
  into.kernels = count;
}

// gate, up (hidden -> width) and down (width -> hidden) on m tokens, as one operator.
OperatorCost GatedMlp(std::string_view name, double m, double h, double width, double bpe) {
  OperatorCost op{name, 0, 0};
  Accumulate(op, Matmul(name, m, h, width, bpe), 2);
  Accumulate(op, Matmul(name, m, width, h, bpe), 1);
  op.kernels = 3;
  return op;
}

}  // namespace

std::vector<OperatorCost> LayerForwardOperators(const ModelSpec& model, int64_t layer,
                                                const ShardShape& shard) {
  const double bpe = shard.bytes_per_element;
  const double tp = shard.tp, sp = shard.sp;
  const double b = static_cast<double>(shard.micro_batch), s = static_cast<double>(shard.seq_len);
  const double h = static_cast<double>(model.hidden_size);
  const double d = static_cast<double>(model.head_dim);
  const double heads = static_cast<double>(model.num_attention_heads);
  const double kv_heads = static_cast<double>(model.num_key_value_heads);
  // Tokens a rank holds outside attention: TP peers share them, Ulysses splits the sequence.
  const double tokens = b * s / sp;
  // Tokens of the kernels outside the tensor-parallel regions (norms, residual adds): every TP
  // rank runs them on all tokens, except under Megatron sequence parallelism (s / tp each).
  const double outside = shard.megatron_sp ? tokens / tp : tokens;
  const double hidden_mask = model.hidden_dropout > 0 ? 1.0 : 0.0;  // 1-byte dropout masks
  const double attn_mask = model.attention_dropout > 0 ? 1.0 : 0.0;

  std::vector<OperatorCost> ops;
  ops.reserve(20);
  ops.push_back(Memory("input_norm", 2.0 * outside * h * bpe));
  ops.push_back(Matmul("q_proj", tokens, h, heads * d / tp, bpe));
  ops.push_back(Matmul("k_proj", tokens, h, kv_heads * d / tp, bpe));
  ops.push_back(Matmul("v_proj", tokens, h, kv_heads * d / tp, bpe));
  // Inside attention a rank holds the whole sequence for heads / (tp x sp) heads. Ulysses repeats
  // K/V heads when sp exceeds them, so a rank never holds less than one.
  const double q_heads_rank = heads / (tp * sp);
  const double kv_heads_rank = std::max(kv_heads / (tp * sp), 1.0);
  if (!model.gpt_style()) {
    // Rotary embedding on q and k (llama family; GPT-2 has learned positions, BLOOM ALiBi).
    ops.push_back(Memory("rotary", 2.0 * b * s * d * (q_heads_rank + kv_heads_rank) * bpe));
  }
  const double attention_flops = 2.0 * 2.0 * b * s * s * d * q_heads_rank;
  if (shard.flash_attention) {
    OperatorCost attn{"attention", attention_flops,
                      b * s * d * (2.0 * q_heads_rank + 2.0 * kv_heads_rank) * bpe};
    attn.kind = KernelKind::kAttention;
    attn.attention_core = true;
    ops.push_back(attn);
  } else {
    // Megatron's CoreAttention before FlashAttention: baddbmm writes the scores, a fused
    // scale-mask-softmax reads and rewrites them, dropout reads them and writes its output and
    // mask, and bmm reads the probabilities with V. Both GEMMs batch b x heads problems with a
    // head_dim inner (QK^T) or output (AV) dimension, which makes them memory-heavy.
    const double scores = b * q_heads_rank * s * s;
    OperatorCost qk{"attention", attention_flops / 2.0,
                    (b * s * d * (q_heads_rank + kv_heads_rank) + scores) * bpe};
    qk.rows = s;
    qk.cols = s * b * q_heads_rank;
    qk.attention_core = true;
    ops.push_back(qk);
    OperatorCost softmax = Memory("softmax", 2.0 * scores * bpe);
    softmax.attention_core = true;
    ops.push_back(softmax);
    if (attn_mask > 0) {
      OperatorCost dropout = Memory("attention_dropout", scores * (2.0 * bpe + attn_mask));
      dropout.attention_core = true;
      ops.push_back(dropout);
    }
    OperatorCost av{"attention", attention_flops / 2.0,
                    (scores + b * s * d * (kv_heads_rank + q_heads_rank)) * bpe};
    av.rows = s;
    av.cols = d * b * q_heads_rank;
    av.attention_core = true;
    ops.push_back(av);
  }
  ops.push_back(Matmul("o_proj", tokens, heads * d / tp, h, bpe));
  // Bias (if any), dropout and the residual add, fused (Megatron bias_dropout_add): reads the
  // projection output and the residual, writes the sum and the mask.
  ops.push_back(Memory("residual_add", outside * h * (3.0 * bpe + hidden_mask)));
  ops.push_back(Memory("post_attention_norm", 2.0 * outside * h * bpe));

  if (!model.IsMoeLayer(layer)) {
    const double f = static_cast<double>(model.intermediate_size) / tp;
    if (model.gated_mlp) {
      ops.push_back(Matmul("mlp_gate", tokens, h, f, bpe));
      ops.push_back(Matmul("mlp_up", tokens, h, f, bpe));
      ops.push_back(Memory("mlp_activation", 3.0 * tokens * f * bpe));  // silu(gate) * up
      ops.push_back(Matmul("mlp_down", tokens, f, h, bpe));
    } else {
      ops.push_back(Matmul("mlp_fc1", tokens, h, f, bpe));
      ops.push_back(Memory("mlp_activation", 2.0 * tokens * f * bpe));  // bias + GeLU, fused
      ops.push_back(Matmul("mlp_fc2", tokens, f, h, bpe));
    }
    ops.push_back(Memory("residual_add", outside * h * (3.0 * bpe + hidden_mask)));
    return ops;
  }

  const double experts = static_cast<double>(model.num_experts);
  const double top_k = static_cast<double>(model.num_experts_per_tok);
  // The router scores every token on every TP peer (AutoEP folding routes the full batch).
  ops.push_back(Matmul("router", tokens, h, experts, bpe));

  const double expert_width = static_cast<double>(model.moe_intermediate_size);
  OperatorCost routed{"experts", 0, 0};
  double assignments = tokens * top_k;
  if (shard.expert_parallel) {
    // Folding keeps assignment i on TP rank i % tp, so each TP peer dispatches k x tokens / tp
    // assignments; uniform routing brings as many back to this rank's E / ep experts.
    assignments = tokens * top_k / tp;
    const double local_experts = experts / shard.ep;
    Accumulate(routed, GatedMlp("experts", assignments / local_experts, h, expert_width, bpe),
               local_experts);
    routed.kernels = 3 * local_experts;
  } else {
    // No AutoEP: every expert is local, split across TP like a dense MLP.
    Accumulate(routed, GatedMlp("experts", tokens * top_k / experts, h, expert_width / tp, bpe),
               experts);
    routed.kernels = 3 * experts;
  }
  // Permute the routed rows into expert order and back (index copies of k x tokens rows).
  ops.push_back(Memory("moe_permute", 2.0 * 2.0 * assignments * h * bpe));
  ops.push_back(routed);

  if (model.shared_expert_intermediate_size > 0) {
    // Under folding the shared expert is replicated over TP (gradients AVERAGEd, auto_ep_folding.py).
    const double split = shard.expert_parallel ? 1.0 : tp;
    OperatorCost shared =
        GatedMlp("shared_expert", tokens, h,
                 static_cast<double>(model.shared_expert_intermediate_size) / split, bpe);
    Accumulate(shared, Matmul("shared_expert", tokens, h, 1, bpe), 1);  // sigmoid gate
    shared.kernels = 4;
    ops.push_back(shared);
  }
  ops.push_back(Memory("residual_add", outside * h * (3.0 * bpe + hidden_mask)));
  return ops;
}

std::vector<OperatorCost> HeadForwardOperators(const ModelSpec& model, const ShardShape& shard) {
  const double tokens = static_cast<double>(shard.micro_batch * shard.seq_len) / shard.sp;
  const double h = static_cast<double>(model.hidden_size);
  // AutoTP training leaves lm_head whole (replace_module.py's set_lm_head returns early in
  // training mode; LmHeadLinearAllreduce is for inference): every TP rank computes all logits.
  // Megatron's parallel lm_head splits the vocabulary over TP.
  const double vocab =
      static_cast<double>(model.vocab_size) / (shard.vocab_parallel ? shard.tp : 1);
  const double outside = shard.megatron_sp ? tokens / shard.tp : tokens;
  std::vector<OperatorCost> ops;
  ops.push_back(Memory("final_norm", 2.0 * outside * h * shard.bytes_per_element));
  ops.push_back(Matmul("lm_head", tokens, h, vocab, shard.bytes_per_element));
  // Cross-entropy in fp32 (Megatron's vocab_parallel_cross_entropy, torch's upcast): reads the
  // 16-bit logits, writes and reads back the fp32 softmax.
  ops.push_back(Memory("cross_entropy", tokens * vocab * (shard.bytes_per_element + 4.0 + 4.0)));
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
  // Layers differ only in being MoE or dense: cost one of each and count them.
  const int64_t moe_layers = model.NumMoeLayers();
  for (const bool is_moe : {false, true}) {
    const int64_t count = is_moe ? moe_layers : model.num_hidden_layers - moe_layers;
    if (count <= 0) continue;
    int64_t index = 0;
    while (index < model.num_hidden_layers && model.IsMoeLayer(index) != is_moe) ++index;
    total += static_cast<double>(count) * SumFlops(LayerForwardOperators(model, index, shard));
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
