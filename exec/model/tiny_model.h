// SPDX-License-Identifier: Apache-2.0
// The tiny decoder, twice in one process: the unsharded reference (every weight, the whole global
// batch) and this rank's shard of it (TP column/row slices, local experts) running the plan's
// collectives. Both start from the same full weights, drawn from a seeded generator in a fixed
// order, so every rank reproduces them without communication.
//
// Architecture (llama / qwen3_moe style, no rotary embedding: positions do not change which
// collectives run, and leaving them out keeps the check about the parallel contract):
//   embed -> L x [rmsnorm -> attention (GQA, causal) -> +res -> rmsnorm -> MLP or MoE -> +res]
//   -> rmsnorm -> lm_head -> cross entropy
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/model/model_spec.h"
#include "exec/comm/comm.h"
#include "exec/model/checkpoint.h"
#include "exec/model/tiny_config.h"

namespace dsp::exec {

// Which slice of the reference tensor a local tensor is: narrow(dim, index * len, len) with
// len = size(dim) / parts. dim = -1: the whole tensor.
struct Shard {
  int dim = -1;
  int64_t index = 0;
  int64_t parts = 1;
};

// The communicators a sharded forward uses; null members mean "not sharded that way".
struct ShardComms {
  Comm* tp = nullptr;
  Comm* sp = nullptr;
  Comm* ep = nullptr;
  bool no_copy_allreduce = false;  // fault injection
};

struct Param {
  std::string name;    // checkpoint-style, e.g. "model.layers.0.self_attn.q_proj.weight"
  ParamFamily family;
  bool expert = false; // routed expert: reduced over EDP, not dense DP
  at::Tensor ref;      // the reference weight (requires grad)
  at::Tensor local;    // this rank's shard (requires grad); undefined for experts another rank holds
                       // and, under ZeRO-3, once partitioned (zero3: the partitions hold it)
  Shard shard;
  bool zero3 = false;
  at::Tensor RefSlice(const at::Tensor& full) const;  // `full` (ref-shaped) narrowed to this shard
};

// One use of a weight: y = op(x, w). `x` may be integer (token ids).
using WeightOp = std::function<at::Tensor(const at::Tensor& x, const at::Tensor& w)>;
// Runs a use of the sharded model's parameter `param` when that parameter is not held whole
// (ZeRO-3: gather, op, release; exec/optim/zero3.h).
using WeightHook = std::function<at::Tensor(int param, const at::Tensor& x, WeightOp op)>;

struct ShardLayout {
  int64_t tp = 1, tp_rank = 0;
  int64_t ep = 1, ep_rank = 0;
  // Pipeline stages: stage s holds layers [s*L/pp, (s+1)*L/pp), the embedding on the first, the
  // final norm and lm_head on the last (DeepSpeed's PipelineModule partitioning of a decoder).
  int64_t pp = 1, pp_rank = 0;
};

class TinyModel {
 public:
  // dtype: of every weight (reference and shard) and so of the activations; the weights are drawn
  // in fp32 and rounded once, so the reference and every shard start from the same values.
  TinyModel(const TinyConfig& cfg, uint64_t seed, const ShardLayout& layout, at::ScalarType dtype = at::kFloat);

  at::ScalarType dtype() const { return dtype_; }

  // bf16 only (runner): the next ShardedLoss routes its tokens -- rows [row0, row0 + rows) and
  // positions [col0, col0 + cols) of the last ReferenceLoss batch -- to the experts the reference
  // chose for them. Top-k is discrete: a bf16 rounding difference in a near-tied router score
  // sends a token to another expert, an O(1) difference no tolerance can tell from a broken
  // contract. The gate values (and so the router gradient) remain the shard's own.
  void PinShardRouting(int64_t row0, int64_t rows, int64_t col0, int64_t cols);

  std::vector<Param>& params() { return params_; }
  const std::vector<Param>& params() const { return params_; }
  // ZeRO-3: the sharded forward reaches its weights through `hook` (every parameter with
  // Param::zero3 set), and runs every local expert even without tokens, because each gather is a
  // collective its whole group must join.
  void SetWeightHook(WeightHook hook) { hook_ = std::move(hook); }
  // Activation checkpointing of the sharded model's decoder layers (--recompute full): each layer
  // keeps only its input and runs again in backward (exec/model/checkpoint.h).
  void SetCheckpointing(bool on, bool cpu_checkpointing) {
    checkpoint_ = on;
    cpu_checkpointing_ = cpu_checkpointing;
  }
  const CheckpointCounters& checkpoint_counters() const { return counters_; }

  // Sum of token cross entropies of `tokens` -> `targets` ([B, S] int64), divided by `denominator`.
  at::Tensor ReferenceLoss(const at::Tensor& tokens, const at::Tensor& targets, double denominator);
  // The same on this rank's shard and its slice of the batch (sequence chunk with sp).
  at::Tensor ShardedLoss(const at::Tensor& tokens, const at::Tensor& targets, double denominator,
                         const ShardComms& comms);
  // This rank's pipeline stage on one micro-batch: from `input` (token ids on the first stage, the
  // previous stage's activation [B, S, H] otherwise) through its layers; the last stage returns the
  // loss (summed cross entropy / denominator), the others their output activation.
  at::Tensor StageForward(const at::Tensor& input, const at::Tensor& targets, double denominator,
                          const ShardComms& comms);
  bool first_stage() const { return layout_.pp_rank == 0; }
  int64_t hidden() const { return cfg_.hidden; }
  bool last_stage() const { return layout_.pp_rank == layout_.pp - 1; }
  // Parameter `name`'s layer among those a PipelineModule of this decoder is built from (0 the
  // embedding, 1..L the decoder layers, L+1 the final norm, L+2 lm_head), and the stage holding it.
  int64_t PipeLayerOf(const std::string& name) const;
  int64_t StageOf(const std::string& name) const;

 private:
  // Layers [first_layer, last_layer) (last_layer -1: all); `embed`: `input` is token ids; `head`:
  // finish with the final norm, lm_head and the loss.
  at::Tensor Forward(bool reference, const at::Tensor& input, const at::Tensor& targets, double denominator,
                     const ShardComms& comms, int64_t first_layer, int64_t last_layer, bool embed, bool head);
  at::Tensor Forward(bool reference, const at::Tensor& tokens, const at::Tensor& targets, double denominator,
                     const ShardComms& comms);
  at::Tensor Moe(bool reference, int layer, const at::Tensor& h, const ShardComms& comms);
  const at::Tensor& W(bool reference, int index) const;
  // op(x, weight): directly, or through the weight hook for a ZeRO-3 parameter of the shard.
  at::Tensor Use(bool reference, int index, const at::Tensor& x, const WeightOp& op) const;
  at::Tensor SwiGlu(bool reference, int gate, int up, int down, const at::Tensor& x) const;

  TinyConfig cfg_;
  ShardLayout layout_;
  at::ScalarType dtype_ = at::kFloat;
  std::vector<Param> params_;
  // Index of each named weight in params_, per layer.
  struct LayerIdx {
    int in_norm, q, k, v, o, post_norm;
    int gate = -1, up = -1, down = -1, router = -1;
    std::vector<int> expert_gate, expert_up, expert_down;  // by global expert id
  };
  int embed_ = -1, final_norm_ = -1, lm_head_ = -1;
  std::vector<LayerIdx> layers_;
  std::vector<at::Tensor> ref_routes_;  // per MoE layer: the last reference top-k ids, [B, S, k]
  std::vector<at::Tensor> pinned_;      // per MoE layer: the shard's slice of them (PinShardRouting)
  WeightHook hook_;
  bool checkpoint_ = false, cpu_checkpointing_ = false;
  CheckpointCounters counters_;
  std::deque<LayerFn> layer_fns_;  // the checkpointed layers of the last sharded forward
};

}  // namespace dsp::exec
