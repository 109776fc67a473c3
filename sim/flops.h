// FLOPs and HBM bytes of every operator one rank runs for one micro-batch (forward), so the step
// model can apply a roofline per operator. Sources: performance-model.md §2.3 (Megatron
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
//   * embedding lookups, norms, rotary and activations are not counted (no matmul; small);
//   * backward = 2 x forward (input and weight gradients), recompute adds the forward again.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/model/model_spec.h"

namespace dsp::sim {

/// How one rank's share of a layer is cut. The unsharded model is the default {tp = sp = ep = 1}.
struct ShardShape {
  int64_t micro_batch = 1;       // sequences per rank per micro-step (shared by the TP group)
  int64_t seq_len = 4096;        // full sequence length before Ulysses splits it
  int tp = 1;                    // AutoTP: heads, MLP width and lm_head split tp ways
  int sp = 1;                    // Ulysses: tokens split sp ways outside attention, heads inside
  int ep = 1;                    // AutoEP: routed experts split ep ways
  bool expert_parallel = false;  // AutoEP on; with tp > 1 this is folding (experts not TP-split)
  double bytes_per_element = 2;  // bf16/fp16 activations and weights
};

/// One operator's forward work on one rank.
struct OperatorCost {
  std::string_view name;  // "q_proj", "k_proj", "v_proj", "o_proj", "attention", "mlp_gate",
                          // "mlp_up", "mlp_down", "router", "experts", "shared_expert", "lm_head"
  double flops = 0;
  double bytes = 0;  // HBM traffic of the operator (inputs, weights, outputs)
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }  // FLOP per byte
};

inline constexpr double kBackwardFlopsPerForward = 2.0;  // dX = dY W^T and dW = X^T dY

/// Forward operators of decoder layer `layer` on one rank.
std::vector<OperatorCost> LayerForwardOperators(const ModelSpec& model, int64_t layer,
                                                const ShardShape& shard);

/// Forward operators outside the layers (lm_head; tied embeddings still cost the projection).
std::vector<OperatorCost> HeadForwardOperators(const ModelSpec& model, const ShardShape& shard);

/// Sum of FLOPs of a list of operators.
double SumFlops(const std::vector<OperatorCost>& ops);

/// Forward FLOPs of the whole model on one rank (all layers and the head).
double ModelForwardFlops(const ModelSpec& model, const ShardShape& shard);

/// Model FLOPs of one training pass (forward + backward, no recompute) over `sequences` sequences
/// of `seq_len` tokens on the unsharded model: the MFU numerator (PaLM / Megatron convention).
double ModelTrainingFlops(const ModelSpec& model, int64_t sequences, int64_t seq_len);

}  // namespace dsp::sim
