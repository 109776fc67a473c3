// Per-operator FLOPs and HBM bytes (see flops.h for the conventions and sources).
#include "sim/flops.h"

#include <algorithm>

namespace dsp::sim {
namespace {

// [m, k] x [k, n]: 2mkn FLOPs; reads the input and the weight, writes the output.
OperatorCost Matmul(std::string_view name, double m, double k, double n, double bytes_per_element) {
  return OperatorCost{name, 2.0 * m * k * n, (m * k + k * n + m * n) * bytes_per_element};
}

// Adds `count` copies of a matmul into one operator (the per-expert GEMMs of a grouped GEMM).
void Accumulate(OperatorCost& into, const OperatorCost& op, double count) {
  into.flops += op.flops * count;
  into.bytes += op.bytes * count;
}

// gate, up (hidden -> width) and down (width -> hidden) on m tokens, as one operator.
OperatorCost GatedMlp(std::string_view name, double m, double h, double width, double bpe) {
  OperatorCost op{name, 0, 0};
  Accumulate(op, Matmul(name, m, h, width, bpe), 2);
  Accumulate(op, Matmul(name, m, width, h, bpe), 1);
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

  std::vector<OperatorCost> ops;
  ops.push_back(Matmul("q_proj", tokens, h, heads * d / tp, bpe));
  ops.push_back(Matmul("k_proj", tokens, h, kv_heads * d / tp, bpe));
  ops.push_back(Matmul("v_proj", tokens, h, kv_heads * d / tp, bpe));
  // Inside attention a rank holds the whole sequence for heads / (tp x sp) heads. Ulysses repeats
  // K/V heads when sp exceeds them, so a rank never holds less than one.
  const double q_heads_rank = heads / (tp * sp);
  const double kv_heads_rank = std::max(kv_heads / (tp * sp), 1.0);
  ops.push_back(OperatorCost{"attention", 2.0 * 2.0 * b * s * s * d * q_heads_rank,
                             b * s * d * (2.0 * q_heads_rank + 2.0 * kv_heads_rank) * bpe});
  ops.push_back(Matmul("o_proj", tokens, heads * d / tp, h, bpe));

  if (!model.IsMoeLayer(layer)) {
    const double f = static_cast<double>(model.intermediate_size) / tp;
    ops.push_back(Matmul("mlp_gate", tokens, h, f, bpe));
    ops.push_back(Matmul("mlp_up", tokens, h, f, bpe));
    ops.push_back(Matmul("mlp_down", tokens, f, h, bpe));
    return ops;
  }

  const double experts = static_cast<double>(model.num_experts);
  const double top_k = static_cast<double>(model.num_experts_per_tok);
  // The router scores every token on every TP peer (AutoEP folding routes the full batch).
  ops.push_back(Matmul("router", tokens, h, experts, bpe));

  const double expert_width = static_cast<double>(model.moe_intermediate_size);
  OperatorCost routed{"experts", 0, 0};
  if (shard.expert_parallel) {
    // Folding keeps assignment i on TP rank i % tp, so each TP peer dispatches k x tokens / tp
    // assignments; uniform routing brings as many back to this rank's E / ep experts.
    const double assignments = tokens * top_k / tp;
    const double local_experts = experts / shard.ep;
    Accumulate(routed, GatedMlp("experts", assignments / local_experts, h, expert_width, bpe),
               local_experts);
  } else {
    // No AutoEP: every expert is local, split across TP like a dense MLP.
    Accumulate(routed, GatedMlp("experts", tokens * top_k / experts, h, expert_width / tp, bpe),
               experts);
  }
  ops.push_back(routed);

  if (model.shared_expert_intermediate_size > 0) {
    // Under folding the shared expert is replicated over TP (gradients AVERAGEd, §4.1).
    const double split = shard.expert_parallel ? 1.0 : tp;
    OperatorCost shared =
        GatedMlp("shared_expert", tokens, h,
                 static_cast<double>(model.shared_expert_intermediate_size) / split, bpe);
    Accumulate(shared, Matmul("shared_expert", tokens, h, 1, bpe), 1);  // sigmoid gate
    ops.push_back(shared);
  }
  return ops;
}

std::vector<OperatorCost> HeadForwardOperators(const ModelSpec& model, const ShardShape& shard) {
  const double tokens = static_cast<double>(shard.micro_batch * shard.seq_len) / shard.sp;
  // AutoTP training leaves lm_head whole (replace_module.py's set_lm_head returns early in
  // training mode; LmHeadLinearAllreduce is for inference): every TP rank computes all logits.
  return {Matmul("lm_head", tokens, static_cast<double>(model.hidden_size),
                 static_cast<double>(model.vocab_size), shard.bytes_per_element)};
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
