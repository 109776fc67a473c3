// SPDX-License-Identifier: Apache-2.0
// Internal to core/model: one walk over a model's parameters in the module order of transformers'
// modeling_<type>.py, feeding a sink. ParameterTensors lists every tensor through it and
// CountParameters counts through it (one layer per layer kind, one expert per expert list), so
// the two can never disagree.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/model/model_spec.h"

namespace dsp::model_internal {

using Dims = std::initializer_list<int64_t>;

// Sink interface (duck-typed):
//   template <class NameFn> void Tensor(NameFn&& name, Dims shape, ParamFamily, int layer,
//                                       int expert);  // name() builds the full name on demand
//   template <class Body> void Experts(int64_t count, Body&& body);  // body(int expert)
//   template <class Body> void Layers(const ModelSpec&, Body&& body);  // body(int64_t layer)
template <class Sink>
class ParamWalker {
 public:
  ParamWalker(const ModelSpec& spec, Sink& sink) : s_(spec), sink_(sink) {}

  void Walk() {
    switch (s_.family) {
      case ModelFamily::kGpt2: return Gpt2();
      case ModelFamily::kBloom: return Bloom();
      case ModelFamily::kGptNeox: return GptNeox();
      case ModelFamily::kFalcon: return Falcon();
      default: return Decoder();
    }
  }

 private:
  using F = ParamFamily;

  void T(const std::string& module, const char* leaf, Dims shape, F family, int expert = -1) {
    sink_.Tensor([&] { return module + "." + leaf; }, shape, family, layer_, expert);
  }
  // nn.Linear(in, out, bias): weight [out, in], then bias [out].
  void Linear(const std::string& m, int64_t in, int64_t out, bool bias, F family,
              int expert = -1) {
    T(m, "weight", {out, in}, family, expert);
    if (bias) T(m, "bias", {out}, family, expert);
  }
  // GPT-2's Conv1D stores the weight [in, out].
  void Conv1D(const std::string& m, int64_t in, int64_t out, F family) {
    T(m, "weight", {in, out}, family);
    T(m, "bias", {out}, family);
  }
  void Norm(const std::string& m, int64_t width, F family = F::kNorm) {
    T(m, "weight", {width}, family);
    if (s_.layer_norm) T(m, "bias", {width}, family);
  }
  // SwiGLU/GeGLU in Llama declaration order: gate and up project hidden -> width, down back.
  void GatedMlp(const std::string& m, int64_t width, bool bias, F family, int expert = -1) {
    const int64_t h = s_.hidden_size;
    Linear(m + ".gate_proj", h, width, bias, family, expert);
    Linear(m + ".up_proj", h, width, bias, family, expert);
    Linear(m + ".down_proj", width, h, bias, family, expert);
  }
  std::string LayerPrefix(int64_t i) const {
    return s_.name_prefix + "layers." + std::to_string(i);
  }
  void Head() {
    layer_ = -1;
    if (!s_.tie_word_embeddings) {
      sink_.Tensor([&] { return s_.lm_head_name; }, {s_.vocab_size, s_.hidden_size}, F::kLmHead,
                   -1, -1);
    }
  }

  // ---- llama-like decoders: llama, mistral, qwen*, mixtral, phi3, deepseek, gpt_oss, llama4,
  // qwen3_next/qwen3_5, gemma2/3.
  void Decoder() {
    const int64_t h = s_.hidden_size;
    layer_ = -1;
    T(s_.name_prefix + "embed_tokens", "weight", {s_.vocab_size, h}, F::kEmbedding);
    sink_.Layers(s_, [&](int64_t i) { DecoderLayer(i); });
    layer_ = -1;
    Norm(s_.name_prefix + "norm", h);
    Head();
  }

  void DecoderLayer(int64_t i) {
    layer_ = static_cast<int>(i);
    const std::string p = LayerPrefix(i);
    const int64_t h = s_.hidden_size;
    if (s_.LayerAttention(i) == AttentionKind::kLinear) {
      GatedDeltaNet(p + ".linear_attn");
    } else if (s_.mla()) {
      LatentAttention(p + ".self_attn");
    } else {
      Attention(p + ".self_attn");
    }
    // Every decoder layer here declares attention (or the token mixer), the MLP, then its norms.
    Mlp(p, i);
    Norm(p + ".input_layernorm", h);
    Norm(p + ".post_attention_layernorm", h);
    if (s_.norms_per_layer == 4) {
      Norm(p + ".pre_feedforward_layernorm", h);
      Norm(p + ".post_feedforward_layernorm", h);
    }
  }

  void Attention(const std::string& a) {
    const int64_t h = s_.hidden_size;
    const int64_t q = s_.num_attention_heads * s_.head_dim;
    const int64_t kv = s_.num_key_value_heads * s_.head_dim;
    if (s_.fused_qkv) {
      // Phi3Attention declares o_proj before qkv_proj.
      Linear(a + ".o_proj", q, h, s_.o_proj_bias, F::kAttention);
      Linear(a + ".qkv_proj", h, q + 2 * kv, s_.attention_bias, F::kAttention);
      return;
    }
    // gpt_oss: sinks is GptOssAttention's own parameter, so state_dict lists it before q_proj.
    if (s_.attention_sinks) T(a, "sinks", {s_.num_attention_heads}, F::kAttention);
    // qwen3_next's gated attention: q_proj emits the query and a same-sized output gate.
    Linear(a + ".q_proj", h, s_.attention_output_gate ? 2 * q : q, s_.attention_bias,
           F::kAttention);
    Linear(a + ".k_proj", h, kv, s_.attention_bias, F::kAttention);
    Linear(a + ".v_proj", h, kv, s_.attention_bias, F::kAttention);
    Linear(a + ".o_proj", q, h, s_.o_proj_bias, F::kAttention);
    if (s_.qk_norm) {
      Norm(a + ".q_norm", s_.head_dim);
      Norm(a + ".k_norm", s_.head_dim);
    }
  }

  // DeepseekV2/V3Attention: the low-rank down projections (and their norms) are kLatentProj,
  // the per-head up projections and o_proj kAttention.
  void LatentAttention(const std::string& a) {
    const int64_t h = s_.hidden_size, n = s_.num_attention_heads;
    const int64_t qk = s_.qk_head_dim();
    if (s_.q_lora_rank > 0) {
      Linear(a + ".q_a_proj", h, s_.q_lora_rank, s_.attention_bias, F::kLatentProj);
      Norm(a + ".q_a_layernorm", s_.q_lora_rank, F::kLatentProj);
      Linear(a + ".q_b_proj", s_.q_lora_rank, n * qk, false, F::kAttention);
    } else {
      Linear(a + ".q_proj", h, n * qk, false, F::kAttention);
    }
    Linear(a + ".kv_a_proj_with_mqa", h, s_.kv_lora_rank + s_.qk_rope_head_dim, s_.attention_bias,
           F::kLatentProj);
    Norm(a + ".kv_a_layernorm", s_.kv_lora_rank, F::kLatentProj);
    Linear(a + ".kv_b_proj", s_.kv_lora_rank, n * (s_.qk_nope_head_dim + s_.v_head_dim), false,
           F::kAttention);
    Linear(a + ".o_proj", n * s_.v_head_dim, h, s_.attention_bias, F::kAttention);
  }

  // Qwen3NextGatedDeltaNet: a depthwise causal conv over q, k and v (no bias), q/k/v/z and b/a
  // projections, per-value-head decay (dt_bias, A_log), a gated RMSNorm over the value head dim,
  // out_proj. Qwen3_5GatedDeltaNet deletes the two input projections and re-adds four, so they
  // come last.
  void GatedDeltaNet(const std::string& a) {
    const int64_t h = s_.hidden_size, vh = s_.linear_num_value_heads;
    const int64_t key = s_.linear_num_key_heads * s_.linear_key_head_dim;
    const int64_t value = vh * s_.linear_value_head_dim;
    const auto lin = F::kLinearAttention;
    T(a + ".conv1d", "weight", {2 * key + value, 1, s_.linear_conv_kernel_dim}, lin);
    if (!s_.split_linear_proj) {
      Linear(a + ".in_proj_qkvz", h, 2 * key + 2 * value, false, lin);
      Linear(a + ".in_proj_ba", h, 2 * vh, false, lin);
    }
    T(a, "dt_bias", {vh}, lin);
    T(a, "A_log", {vh}, lin);
    T(a + ".norm", "weight", {s_.linear_value_head_dim}, lin);
    Linear(a + ".out_proj", value, h, false, lin);
    if (s_.split_linear_proj) {
      Linear(a + ".in_proj_qkv", h, 2 * key + value, false, lin);
      Linear(a + ".in_proj_z", h, value, false, lin);
      Linear(a + ".in_proj_b", h, vh, false, lin);
      Linear(a + ".in_proj_a", h, vh, false, lin);
    }
  }

  void Mlp(const std::string& p, int64_t i) {
    const int64_t h = s_.hidden_size;
    if (!s_.IsMoeLayer(i)) {
      const std::string m = p + (s_.family == ModelFamily::kLlama4 ? ".feed_forward" : ".mlp");
      if (!s_.gated_mlp) {  // NemotronMLP: up_proj -> act -> down_proj
        Linear(m + ".up_proj", h, s_.intermediate_size, s_.mlp_bias, F::kDenseMlp);
        Linear(m + ".down_proj", s_.intermediate_size, h, s_.mlp_bias, F::kDenseMlp);
      } else if (s_.fused_gate_up) {
        Linear(m + ".gate_up_proj", h, 2 * s_.intermediate_size, false, F::kDenseMlp);
        Linear(m + ".down_proj", s_.intermediate_size, h, false, F::kDenseMlp);
      } else {
        GatedMlp(m, s_.intermediate_size, s_.mlp_bias, F::kDenseMlp);
      }
      return;
    }
    const int64_t e = s_.num_experts, w = s_.moe_intermediate_size;
    const auto routed = F::kRoutedExperts;
    switch (s_.family) {
      case ModelFamily::kGptOss: {
        // GptOssMLP: router (Linear with bias), then GptOssExperts' fused tensors.
        const std::string m = p + ".mlp";
        Linear(m + ".router", h, e, true, F::kRouter);
        const std::string x = m + ".experts";
        T(x, "gate_up_proj", {e, h, 2 * w}, routed);
        T(x, "gate_up_proj_bias", {e, 2 * w}, routed);
        T(x, "down_proj", {e, w, h}, routed);
        T(x, "down_proj_bias", {e, h}, routed);
        return;
      }
      case ModelFamily::kLlama4: {
        // Llama4TextMoe: experts (fused), router, shared_expert.
        const std::string m = p + ".feed_forward";
        T(m + ".experts", "gate_up_proj", {e, h, 2 * w}, routed);
        T(m + ".experts", "down_proj", {e, w, h}, routed);
        Linear(m + ".router", h, e, false, F::kRouter);
        GatedMlp(m + ".shared_expert", s_.shared_expert_intermediate_size, false,
                 F::kSharedExperts);
        return;
      }
      case ModelFamily::kDeepSeek: {
        // DeepseekV2/V3MoE: experts, gate (weight; V3 adds e_score_correction_bias),
        // shared_experts (one MLP n_shared_experts x moe_intermediate_size wide).
        const std::string m = p + ".mlp";
        Experts(m + ".experts", w, false);
        Linear(m + ".gate", h, e, false, F::kRouter);
        if (s_.router_score_bias) T(m + ".gate", "e_score_correction_bias", {e}, F::kRouter);
        if (s_.shared_expert_intermediate_size > 0) {
          // DeepseekV2MLP carries mlp_bias (dense and shared MLPs, never the experts).
          GatedMlp(m + ".shared_experts", s_.shared_expert_intermediate_size, s_.mlp_bias,
                   F::kSharedExperts);
        }
        return;
      }
      default: break;
    }
    if (s_.UsesMixtralNaming()) {
      const std::string m = p + ".block_sparse_moe";
      Linear(m + ".gate", h, e, false, F::kRouter);
      sink_.Experts(e, [&](int x) {
        // MixtralBlockSparseTop2MLP: w1 = gate, w2 = down, w3 = up, declared in that order.
        const std::string ex = m + ".experts." + std::to_string(x);
        Linear(ex + ".w1", h, w, false, routed, x);
        Linear(ex + ".w2", w, h, false, routed, x);
        Linear(ex + ".w3", h, w, false, routed, x);
      });
      return;
    }
    // Qwen2/3 MoE, qwen3_next and qwen3_5_moe: gate, experts, shared_expert, shared_expert_gate.
    const std::string m = p + ".mlp";
    Linear(m + ".gate", h, e, false, F::kRouter);
    if (s_.fused_experts) {
      // qwen3_5_moe checkpoints hold Qwen3NextExperts' fused tensors (gate rows, then up).
      T(m + ".experts", "gate_up_proj", {e, 2 * w, h}, routed);
      T(m + ".experts", "down_proj", {e, h, w}, routed);
    } else {
      Experts(m + ".experts", w, false);
    }
    if (s_.shared_expert_intermediate_size > 0) {
      GatedMlp(m + ".shared_expert", s_.shared_expert_intermediate_size, false, F::kSharedExperts);
      // A [1, hidden] sigmoid gate scaling the shared expert's output; it belongs to the
      // shared-expert path (always active, replicated under EP).
      if (s_.shared_expert_gate) Linear(m + ".shared_expert_gate", h, 1, false, F::kSharedExperts);
    }
  }

  // Per-expert gate/up/down tensors, as checkpoints name them.
  void Experts(const std::string& m, int64_t width, bool bias) {
    sink_.Experts(s_.num_experts, [&](int x) {
      GatedMlp(m + "." + std::to_string(x), width, bias, F::kRoutedExperts, x);
    });
  }

  // ---- GPT-style decoders: LayerNorm with biases, GeLU MLP.
  void Gpt2() {
    const int64_t h = s_.hidden_size, f = s_.intermediate_size;
    const std::string root = "transformer";
    layer_ = -1;
    T(root + ".wte", "weight", {s_.vocab_size, h}, F::kEmbedding);
    T(root + ".wpe", "weight", {s_.learned_positions, h}, F::kEmbedding);
    sink_.Layers(s_, [&](int64_t i) {
      layer_ = static_cast<int>(i);
      const std::string p = root + ".h." + std::to_string(i);
      Norm(p + ".ln_1", h);
      Conv1D(p + ".attn.c_attn", h, 3 * h, F::kAttention);
      Conv1D(p + ".attn.c_proj", h, h, F::kAttention);
      Norm(p + ".ln_2", h);
      Conv1D(p + ".mlp.c_fc", h, f, F::kDenseMlp);
      Conv1D(p + ".mlp.c_proj", f, h, F::kDenseMlp);
    });
    layer_ = -1;
    Norm(root + ".ln_f", h);
    Head();
  }

  void Bloom() {
    const int64_t h = s_.hidden_size, f = s_.intermediate_size;
    const std::string root = "transformer";
    layer_ = -1;
    T(root + ".word_embeddings", "weight", {s_.vocab_size, h}, F::kEmbedding);
    Norm(root + ".word_embeddings_layernorm", h);
    sink_.Layers(s_, [&](int64_t i) {
      layer_ = static_cast<int>(i);
      const std::string p = root + ".h." + std::to_string(i);
      Norm(p + ".input_layernorm", h);
      Linear(p + ".self_attention.query_key_value", h, 3 * h, true, F::kAttention);
      Linear(p + ".self_attention.dense", h, h, true, F::kAttention);
      Norm(p + ".post_attention_layernorm", h);
      Linear(p + ".mlp.dense_h_to_4h", h, f, true, F::kDenseMlp);
      Linear(p + ".mlp.dense_4h_to_h", f, h, true, F::kDenseMlp);
    });
    layer_ = -1;
    Norm(root + ".ln_f", h);
    Head();
  }

  // GPTNeoXForCausalLM: gpt_neox.embed_in, layers (norms first, then attention and MLP),
  // final_layer_norm, embed_out (the untied head).
  void GptNeox() {
    const int64_t h = s_.hidden_size, f = s_.intermediate_size;
    const std::string root = "gpt_neox";
    layer_ = -1;
    T(root + ".embed_in", "weight", {s_.vocab_size, h}, F::kEmbedding);
    sink_.Layers(s_, [&](int64_t i) {
      layer_ = static_cast<int>(i);
      const std::string p = root + ".layers." + std::to_string(i);
      Norm(p + ".input_layernorm", h);
      Norm(p + ".post_attention_layernorm", h);
      Linear(p + ".attention.query_key_value", h, 3 * h, s_.attention_bias, F::kAttention);
      Linear(p + ".attention.dense", h, h, s_.attention_bias, F::kAttention);
      Linear(p + ".mlp.dense_h_to_4h", h, f, true, F::kDenseMlp);
      Linear(p + ".mlp.dense_4h_to_h", f, h, true, F::kDenseMlp);
    });
    layer_ = -1;
    Norm(root + ".final_layer_norm", h);
    Head();
  }

  // FalconForCausalLM: fused query_key_value of (heads + 2 kv_heads) x head_dim rows (one K/V
  // head under multi_query, 3h for the original layout), parallel attention and MLP.
  void Falcon() {
    const int64_t h = s_.hidden_size, f = s_.intermediate_size, d = s_.head_dim;
    const std::string root = "transformer";
    const bool bias = s_.attention_bias;
    layer_ = -1;
    T(root + ".word_embeddings", "weight", {s_.vocab_size, h}, F::kEmbedding);
    sink_.Layers(s_, [&](int64_t i) {
      layer_ = static_cast<int>(i);
      const std::string p = root + ".h." + std::to_string(i);
      const int64_t qkv = (s_.num_attention_heads + 2 * s_.num_key_value_heads) * d;
      Linear(p + ".self_attention.query_key_value", h, qkv, bias, F::kAttention);
      Linear(p + ".self_attention.dense", h, h, bias, F::kAttention);
      Linear(p + ".mlp.dense_h_to_4h", h, f, bias, F::kDenseMlp);
      Linear(p + ".mlp.dense_4h_to_h", f, h, bias, F::kDenseMlp);
      if (s_.branch_norms) {
        Norm(p + ".ln_attn", h);  // new_decoder_architecture: one norm per branch
        Norm(p + ".ln_mlp", h);
      } else {
        Norm(p + ".input_layernorm", h);
        if (!s_.parallel_residual) Norm(p + ".post_attention_layernorm", h);
      }
    });
    layer_ = -1;
    Norm(root + ".ln_f", h);
    Head();
  }

  const ModelSpec& s_;
  Sink& sink_;
  int layer_ = -1;
};

}  // namespace dsp::model_internal
