// SPDX-License-Identifier: Apache-2.0
// Builds the forward graph of a Hugging Face decoder (llama, mistral, qwen2/3, mixtral,
// qwen2_moe, qwen3_moe) from its ModelSpec: the graph the parallelism passes start from. Module
// paths and parameter names are the checkpoint's (ParameterTensors), shapes are symbolic:
//   B batch, S sequence, H hidden, N attention heads, G KV heads, D head_dim, F MLP width,
//   FE routed-expert width, FS shared-expert width, E experts, K experts per token, V vocab.
// Reshapes and transposes are not nodes: a node's shape is the layout its consumer sees (q after
// rotary is [B, N, S, D]), which is all the passes and the cost model need.
#pragma once

#include <cstdint>

#include "core/model/model_spec.h"
#include "core/util/result.h"
#include "sim/graph/graph.h"
#include "sim/graph/symbolic.h"

namespace dsp::sim::graph {

// Placeholders input_ids, labels, position_ids, attention_mask; embedding; per layer
// input_layernorm, q/k/v projections (q_norm/k_norm for qwen3), rotary on q and k, sdpa, o_proj,
// residual add, post_attention_layernorm, then a SwiGLU MLP or an MoE block (router, top_k, one
// `experts` node for all routed experts of the layer, shared expert), residual add; final norm,
// lm_head, cross_entropy loss and the output. docs/graph.md lists the nodes and names.
Result<Graph> BuildModelGraph(const ModelSpec& spec);

// The symbol values of `spec` for one micro-batch of `batch` sequences of `seq` tokens, so that
// SymExpr::Evaluate turns any builder shape into numbers.
SymbolValues ModelSymbolValues(const ModelSpec& spec, int64_t batch, int64_t seq);
// Binds N0, G0 and QKV0, the heads AutoTP gives tp rank 0 (the busiest): module_inject/tp_shard.py
// get_shard_size splits key-value heads G//tp + (rank < G%tp), each with its N/G query heads.
// The autotp pass writes them instead of N/T, G/T when G % tp != 0.
void BindTensorParallelHeads(const ModelSpec& spec, int64_t tp, SymbolValues& values);

}  // namespace dsp::sim::graph
