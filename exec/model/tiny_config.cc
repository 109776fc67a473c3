// SPDX-License-Identifier: Apache-2.0
#include "exec/model/tiny_config.h"

#include <algorithm>
#include <numeric>

namespace dsp::exec {
namespace {

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

}  // namespace

ModelSpec DefaultTinyModel(bool moe) {
  ModelSpec m;
  m.model_type = moe ? "qwen3_moe" : "llama";
  m.hidden_size = 64;
  m.num_hidden_layers = 2;
  m.num_attention_heads = 4;
  m.num_key_value_heads = 2;
  m.head_dim = 16;
  m.intermediate_size = 128;
  m.vocab_size = 512;
  m.max_position_embeddings = 256;
  if (moe) {
    m.num_experts = 8;
    m.num_experts_per_tok = 2;
    m.moe_intermediate_size = 32;
    m.norm_topk_prob = true;
  }
  return m;
}

Result<TinyConfig> MakeTinyConfig(const ModelSpec& model, const ParallelSizes& sizes, int64_t micro_batch,
                                  int64_t layers) {
  TinyConfig t;
  t.model_type = model.model_type;
  const int64_t pp = std::max<int64_t>(1, sizes.pp);
  // Two decoder layers, or one per pipeline stage when there are more stages.
  t.layers = RoundUp(2, pp);
  if (layers > 0) {
    if (layers % pp != 0) {
      return Error{"the checkpoint's tiny decoder has " + std::to_string(layers) + " layers, which " +
                   std::to_string(pp) + " pipeline stages cannot split evenly: resume it with --pp dividing " +
                   std::to_string(layers)};
    }
    t.layers = layers;
  }
  const int64_t tp = std::max(1, sizes.tp), sp = std::max(1, sizes.sp), ep = std::max(1, sizes.ep);
  const int64_t shard = std::lcm(tp, sp);
  // Keep the model's grouped-query ratio where the shard sizes allow it.
  const bool gqa = model.num_key_value_heads > 0 && model.num_key_value_heads < model.num_attention_heads;
  t.heads = RoundUp(4, shard);
  t.kv_heads = t.heads;
  if (gqa && (t.heads / 2) % shard == 0) t.kv_heads = t.heads / 2;
  t.head_dim = 8;
  t.hidden = 32;
  t.intermediate = RoundUp(64, tp);
  t.vocab = 96;
  t.seq_len = RoundUp(16, sp);
  t.micro_batch = std::clamp<int64_t>(micro_batch, 1, 4);
  if (model.is_moe()) {
    t.experts = RoundUp(std::min<int64_t>(model.num_experts, 8), ep);
    t.top_k = std::clamp<int64_t>(model.num_experts_per_tok, 1, std::min<int64_t>(t.experts, 2));
    t.expert_intermediate = RoundUp(32, tp);
    t.norm_topk_prob = model.norm_topk_prob;
  } else if (sizes.expert_parallel) {
    return Error{"the config enables expert_parallel but the model (" + model.model_type +
                 ") has no experts: pass an MoE model with --model"};
  }
  return t;
}

}  // namespace dsp::exec
