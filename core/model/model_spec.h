// SPDX-License-Identifier: Apache-2.0
// The model description ds-plan plans for: architecture numbers read from a Hugging Face
// config.json, the parameter tensors the matching transformers model would hold (named as in its
// checkpoints, so DeepSpeed AutoTP `layer_specs` regexes can be tested against them), and exact
// parameter counts per family.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/document.h"
#include "core/util/result.h"

namespace dsp {

// What a parameter is for. Sharding rules differ by family: TP splits attention and MLP weights,
// EP splits routed experts only, norms and routers stay replicated.
enum class ParamFamily {
  kEmbedding,      // model.embed_tokens (and gpt2's learned position embedding wpe)
  kAttention,      // q/k/v/o projections and their biases
  kDenseMlp,       // gate/up/down of a dense (non-MoE) feed-forward block
  kRouter,         // MoE gate that scores the routed experts
  kRoutedExperts,  // per-expert weights, only top-k of them run per token
  kSharedExperts,  // qwen2_moe shared expert and its sigmoid gate: run for every token
  kNorm,           // RMSNorm weights (LayerNorm weights and biases for gpt2/bloom), incl. q/k norms
  kLmHead,         // lm_head (absent when tied to the embedding)
};
inline constexpr ParamFamily kAllParamFamilies[] = {
    ParamFamily::kEmbedding, ParamFamily::kAttention,     ParamFamily::kDenseMlp,
    ParamFamily::kRouter,    ParamFamily::kRoutedExperts, ParamFamily::kSharedExperts,
    ParamFamily::kNorm,      ParamFamily::kLmHead};

// "embedding", "attention", "dense_mlp", "router", "routed_experts", "shared_experts", "norm",
// "lm_head".
std::string_view ParamFamilyName(ParamFamily family);

struct ModelSpec {
  // llama, mistral, qwen2, qwen3, mixtral, qwen2_moe, qwen3_moe, gpt2, bloom; or the config's own
  // value when assumed_llama_like is set.
  std::string model_type;
  // An unknown model_type whose keys describe a plain llama decoder: counted as llama, which is
  // right for most llama derivatives but unverified, so reports should say so.
  bool assumed_llama_like = false;

  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;           // may differ from hidden/heads (qwen3, Mistral-Nemo)
  int64_t intermediate_size = 0;  // dense MLP width; for mixtral also the expert width
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections carry a bias
  bool o_proj_bias = false;     // llama/qwen3 attention_bias also biases o_proj; qwen2 does not
  bool mlp_bias = false;        // llama mlp_bias: gate/up/down of dense MLPs
  bool qk_norm = false;         // qwen3: RMSNorm over head_dim on queries and keys

  // GPT-style decoders (gpt2, bloom; GPT-3, Megatron's GPT, MT-NLG, BLOOM load as these).
  bool gated_mlp = true;           // SwiGLU gate/up/down; false: fc1 -> GeLU -> fc2 (GPT)
  bool layer_norm = false;         // LayerNorm with weight and bias instead of RMSNorm (weight)
  int64_t learned_positions = 0;   // rows of a learned position embedding (gpt2 n_positions); 0
                                   // for rotary (llama) and ALiBi (bloom)
  bool embedding_norm = false;     // bloom's word_embeddings_layernorm after the embedding
  double hidden_dropout = 0;       // residual/embedding dropout probability (gpt2 resid_pdrop)
  double attention_dropout = 0;    // dropout on the attention probabilities (gpt2 attn_pdrop)
  bool gpt_style() const { return !gated_mlp; }

  // MoE; num_experts == 0 for dense models.
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;            // width of one routed expert
  int64_t shared_expert_intermediate_size = 0;  // 0 when there is no shared expert
  // qwen2_moe/qwen3_moe: layer i is MoE iff i is not in mlp_only_layers and
  // (i + 1) % decoder_sparse_step == 0; the other layers get a dense MLP of intermediate_size.
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;
  bool norm_topk_prob = false;  // affects routing math only, not parameter counts

  bool is_moe() const { return num_experts > 0; }
  bool IsMoeLayer(int64_t layer) const;
  int64_t NumMoeLayers() const;
  // Mixtral names its MoE block block_sparse_moe with experts w1/w2/w3; Qwen uses mlp.gate and
  // experts gate/up/down_proj.
  bool UsesMixtralNaming() const { return model_type == "mixtral"; }
};

// Reads a Hugging Face config.json object. Keys that decide the parameter count must be present
// (errors name the key); derived keys follow transformers: num_key_value_heads defaults to
// num_attention_heads, head_dim to hidden_size / num_attention_heads (128 for qwen3, as in
// Qwen3Config), a JSON null reads as absent.
Result<ModelSpec> ParseHfConfig(const Json& config);

struct ParamTensor {
  std::string name;            // e.g. "model.layers.3.self_attn.q_proj.weight"
  std::vector<int64_t> shape;  // torch layout: Linear weights are [out_features, in_features]
  ParamFamily family = ParamFamily::kAttention;
  int layer = -1;   // decoder layer index; -1 outside the layers
  int expert = -1;  // routed expert index; -1 otherwise
  int64_t numel() const;
};

// Every parameter in state_dict order of the transformers *ForCausalLM model, with checkpoint
// names (per-expert tensors, not the fused 3-D expert tensors transformers 5 builds at load time).
std::vector<ParamTensor> ParameterTensors(const ModelSpec& spec);

struct ParamCounts {
  int64_t total = 0;
  // total minus the routed experts a token does not visit (num_experts - top_k per MoE layer).
  // Embedding and lm_head are included, matching the published "active" figures (Mixtral 12.9B).
  int64_t active_per_token = 0;
  // Every family is present, 0 where the model has none, so callers can index without checks.
  std::map<ParamFamily, int64_t> by_family;
  int64_t largest_tensor = 0;  // numel of the biggest single tensor (ZeRO-3 gather working set)
};

// Arithmetic, without materialising names; equals the sums over ParameterTensors(spec).
ParamCounts CountParameters(const ModelSpec& spec);

}  // namespace dsp
