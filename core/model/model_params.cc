// SPDX-License-Identifier: Apache-2.0
// ParameterTensors and CountParameters. Both walk the same module layout as transformers'
// modeling_<type>.py; the tests hold them to each other for every preset, so a change to one must
// be mirrored in the other.
#include "core/model/model_spec.h"

#include <algorithm>
#include <string>
#include <utility>

namespace dsp {

int64_t ParamTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

class TensorList {
 public:
  void Add(std::string name, std::vector<int64_t> shape, ParamFamily family, int layer = -1,
           int expert = -1) {
    out_.push_back(ParamTensor{std::move(name), std::move(shape), family, layer, expert});
  }
  // nn.Linear(in, out, bias): weight [out, in], then bias [out].
  void Linear(const std::string& prefix, int64_t in, int64_t out, bool bias, ParamFamily family,
              int layer, int expert = -1) {
    Add(prefix + ".weight", {out, in}, family, layer, expert);
    if (bias) Add(prefix + ".bias", {out}, family, layer, expert);
  }
  // A SwiGLU MLP in Llama/Qwen declaration order: gate and up project hidden -> width, down
  // projects back.
  void GatedMlp(const std::string& prefix, int64_t hidden, int64_t width, bool bias,
                ParamFamily family, int layer, int expert = -1) {
    Linear(prefix + ".gate_proj", hidden, width, bias, family, layer, expert);
    Linear(prefix + ".up_proj", hidden, width, bias, family, layer, expert);
    Linear(prefix + ".down_proj", width, hidden, bias, family, layer, expert);
  }
  std::vector<ParamTensor> Take() { return std::move(out_); }

 private:
  std::vector<ParamTensor> out_;
};

}  // namespace

namespace {

// A LayerNorm: weight and bias of `width`.
void LayerNorm(TensorList& t, const std::string& prefix, int64_t width, int layer) {
  t.Add(prefix + ".weight", {width}, ParamFamily::kNorm, layer);
  t.Add(prefix + ".bias", {width}, ParamFamily::kNorm, layer);
}

// transformers' GPT2LMHeadModel (Conv1D weights are [in, out]) and BloomForCausalLM, in
// state_dict order.
std::vector<ParamTensor> GptStyleTensors(const ModelSpec& s) {
  TensorList t;
  const int64_t h = s.hidden_size, f = s.intermediate_size;
  const bool gpt2 = s.model_type == "gpt2";
  const std::string root = "transformer.";
  if (gpt2) {
    t.Add(root + "wte.weight", {s.vocab_size, h}, ParamFamily::kEmbedding);
    t.Add(root + "wpe.weight", {s.learned_positions, h}, ParamFamily::kEmbedding);
  } else {
    t.Add(root + "word_embeddings.weight", {s.vocab_size, h}, ParamFamily::kEmbedding);
    LayerNorm(t, root + "word_embeddings_layernorm", h, -1);
  }
  for (int64_t i = 0; i < s.num_hidden_layers; ++i) {
    const int layer = static_cast<int>(i);
    const std::string p = root + "h." + std::to_string(i);
    const auto attn = ParamFamily::kAttention, mlp = ParamFamily::kDenseMlp;
    if (gpt2) {
      LayerNorm(t, p + ".ln_1", h, layer);
      t.Add(p + ".attn.c_attn.weight", {h, 3 * h}, attn, layer);
      t.Add(p + ".attn.c_attn.bias", {3 * h}, attn, layer);
      t.Add(p + ".attn.c_proj.weight", {h, h}, attn, layer);
      t.Add(p + ".attn.c_proj.bias", {h}, attn, layer);
      LayerNorm(t, p + ".ln_2", h, layer);
      t.Add(p + ".mlp.c_fc.weight", {h, f}, mlp, layer);
      t.Add(p + ".mlp.c_fc.bias", {f}, mlp, layer);
      t.Add(p + ".mlp.c_proj.weight", {f, h}, mlp, layer);
      t.Add(p + ".mlp.c_proj.bias", {h}, mlp, layer);
    } else {
      LayerNorm(t, p + ".input_layernorm", h, layer);
      t.Linear(p + ".self_attention.query_key_value", h, 3 * h, true, attn, layer);
      t.Linear(p + ".self_attention.dense", h, h, true, attn, layer);
      LayerNorm(t, p + ".post_attention_layernorm", h, layer);
      t.Linear(p + ".mlp.dense_h_to_4h", h, f, true, mlp, layer);
      t.Linear(p + ".mlp.dense_4h_to_h", f, h, true, mlp, layer);
    }
  }
  LayerNorm(t, root + "ln_f", h, -1);
  if (!s.tie_word_embeddings) t.Add("lm_head.weight", {s.vocab_size, h}, ParamFamily::kLmHead);
  return t.Take();
}

ParamCounts CountGptStyle(const ModelSpec& s) {
  const int64_t h = s.hidden_size, f = s.intermediate_size, L = s.num_hidden_layers;
  ParamCounts c;
  for (ParamFamily fam : kAllParamFamilies) c.by_family[fam] = 0;
  c.by_family[ParamFamily::kEmbedding] = s.vocab_size * h + s.learned_positions * h;
  c.by_family[ParamFamily::kAttention] = L * (4 * h * h + 4 * h);
  c.by_family[ParamFamily::kDenseMlp] = L * (2 * h * f + f + h);
  c.by_family[ParamFamily::kNorm] = L * 4 * h + 2 * h + (s.embedding_norm ? 2 * h : 0);
  c.by_family[ParamFamily::kLmHead] = s.tie_word_embeddings ? 0 : s.vocab_size * h;
  for (const auto& [family, n] : c.by_family) c.total += n;
  c.active_per_token = c.total;
  c.largest_tensor = std::max({s.vocab_size * h, 3 * h * h, h * f});
  return c;
}

}  // namespace

std::vector<ParamTensor> ParameterTensors(const ModelSpec& s) {
  if (s.gpt_style()) return GptStyleTensors(s);
  TensorList t;
  const int64_t h = s.hidden_size;
  const int64_t q_width = s.num_attention_heads * s.head_dim;
  const int64_t kv_width = s.num_key_value_heads * s.head_dim;
  t.Add("model.embed_tokens.weight", {s.vocab_size, h}, ParamFamily::kEmbedding);

  for (int64_t i = 0; i < s.num_hidden_layers; ++i) {
    const int layer = static_cast<int>(i);
    const std::string p = "model.layers." + std::to_string(i);
    const std::string attn = p + ".self_attn";
    t.Linear(attn + ".q_proj", h, q_width, s.attention_bias, ParamFamily::kAttention, layer);
    t.Linear(attn + ".k_proj", h, kv_width, s.attention_bias, ParamFamily::kAttention, layer);
    t.Linear(attn + ".v_proj", h, kv_width, s.attention_bias, ParamFamily::kAttention, layer);
    t.Linear(attn + ".o_proj", q_width, h, s.o_proj_bias, ParamFamily::kAttention, layer);
    if (s.qk_norm) {
      t.Add(attn + ".q_norm.weight", {s.head_dim}, ParamFamily::kNorm, layer);
      t.Add(attn + ".k_norm.weight", {s.head_dim}, ParamFamily::kNorm, layer);
    }

    if (!s.IsMoeLayer(i)) {
      t.GatedMlp(p + ".mlp", h, s.intermediate_size, s.mlp_bias, ParamFamily::kDenseMlp, layer);
    } else if (s.UsesMixtralNaming()) {
      const std::string moe = p + ".block_sparse_moe";
      t.Linear(moe + ".gate", h, s.num_experts, false, ParamFamily::kRouter, layer);
      for (int64_t e = 0; e < s.num_experts; ++e) {
        // MixtralBlockSparseTop2MLP: w1 = gate, w2 = down, w3 = up, declared in that order.
        const std::string ex = moe + ".experts." + std::to_string(e);
        const int64_t w = s.moe_intermediate_size;
        const auto routed = ParamFamily::kRoutedExperts;
        t.Linear(ex + ".w1", h, w, false, routed, layer, static_cast<int>(e));
        t.Linear(ex + ".w2", w, h, false, routed, layer, static_cast<int>(e));
        t.Linear(ex + ".w3", h, w, false, routed, layer, static_cast<int>(e));
      }
    } else {
      const std::string moe = p + ".mlp";
      t.Linear(moe + ".gate", h, s.num_experts, false, ParamFamily::kRouter, layer);
      for (int64_t e = 0; e < s.num_experts; ++e) {
        t.GatedMlp(moe + ".experts." + std::to_string(e), h, s.moe_intermediate_size, false,
                   ParamFamily::kRoutedExperts, layer, static_cast<int>(e));
      }
      if (s.shared_expert_intermediate_size > 0) {
        t.GatedMlp(moe + ".shared_expert", h, s.shared_expert_intermediate_size, false,
                   ParamFamily::kSharedExperts, layer);
        // A [1, hidden] sigmoid gate scaling the shared expert's output; it belongs to the
        // shared-expert path (always active, replicated under EP).
        t.Linear(moe + ".shared_expert_gate", h, 1, false, ParamFamily::kSharedExperts, layer);
      }
    }
    t.Add(p + ".input_layernorm.weight", {h}, ParamFamily::kNorm, layer);
    t.Add(p + ".post_attention_layernorm.weight", {h}, ParamFamily::kNorm, layer);
  }

  t.Add("model.norm.weight", {h}, ParamFamily::kNorm);
  if (!s.tie_word_embeddings) t.Add("lm_head.weight", {s.vocab_size, h}, ParamFamily::kLmHead);
  return t.Take();
}

ParamCounts CountParameters(const ModelSpec& s) {
  if (s.gpt_style()) return CountGptStyle(s);
  const int64_t h = s.hidden_size;
  const int64_t q_width = s.num_attention_heads * s.head_dim;
  const int64_t kv_width = s.num_key_value_heads * s.head_dim;
  const int64_t moe_layers = s.NumMoeLayers();
  const int64_t dense_layers = s.num_hidden_layers - moe_layers;

  const int64_t attention_per_layer = 2 * h * q_width + 2 * h * kv_width +
                                      (s.attention_bias ? q_width + 2 * kv_width : 0) +
                                      (s.o_proj_bias ? h : 0);
  const int64_t dense_mlp_per_layer =
      3 * h * s.intermediate_size + (s.mlp_bias ? 2 * s.intermediate_size + h : 0);
  const int64_t per_expert = 3 * h * s.moe_intermediate_size;
  const int64_t shared_per_layer =
      s.shared_expert_intermediate_size > 0 ? 3 * h * s.shared_expert_intermediate_size + h : 0;
  const int64_t norm_per_layer = 2 * h + (s.qk_norm ? 2 * s.head_dim : 0);

  ParamCounts c;
  for (ParamFamily f : kAllParamFamilies) c.by_family[f] = 0;
  c.by_family[ParamFamily::kEmbedding] = s.vocab_size * h;
  c.by_family[ParamFamily::kAttention] = s.num_hidden_layers * attention_per_layer;
  c.by_family[ParamFamily::kDenseMlp] = dense_layers * dense_mlp_per_layer;
  c.by_family[ParamFamily::kRouter] = moe_layers * s.num_experts * h;
  c.by_family[ParamFamily::kRoutedExperts] = moe_layers * s.num_experts * per_expert;
  c.by_family[ParamFamily::kSharedExperts] = moe_layers * shared_per_layer;
  c.by_family[ParamFamily::kNorm] = s.num_hidden_layers * norm_per_layer + h;
  c.by_family[ParamFamily::kLmHead] = s.tie_word_embeddings ? 0 : s.vocab_size * h;

  for (const auto& [family, n] : c.by_family) c.total += n;
  const int64_t idle_experts = std::max<int64_t>(s.num_experts - s.num_experts_per_tok, 0);
  c.active_per_token = c.total - moe_layers * idle_experts * per_expert;

  // Candidates for the biggest tensor: embedding / lm_head, q and o projections, the widest MLP
  // matrix, the router.
  c.largest_tensor = std::max({s.vocab_size * h, h * q_width, h * kv_width});
  if (dense_layers > 0) c.largest_tensor = std::max(c.largest_tensor, h * s.intermediate_size);
  if (moe_layers > 0) {
    c.largest_tensor = std::max({c.largest_tensor, h * s.moe_intermediate_size, h * s.num_experts,
                                 h * s.shared_expert_intermediate_size});
  }
  return c;
}

}  // namespace dsp
