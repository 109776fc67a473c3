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
  kEmbedding,       // model.embed_tokens (and gpt2's learned position embedding wpe)
  kAttention,       // q/k/v/o projections and their biases (fused qkv too), attention sinks
  kLatentProj,      // MLA's low-rank projections (DeepSeek q_a/q_b, kv_a/kv_b) and their norms
  kLinearAttention, // Gated DeltaNet: in_proj_qkvz/ba, conv1d, A_log, dt_bias, norm, out_proj
  kDenseMlp,        // gate/up/down of a dense (non-MoE) feed-forward block
  kRouter,          // MoE gate that scores the routed experts (and its bias / correction bias)
  kRoutedExperts,   // per-expert weights, only top-k of them run per token
  kSharedExperts,   // shared experts (and qwen's sigmoid gate): run for every token
  kNorm,            // RMSNorm / LayerNorm weights (and biases), incl. q/k norms
  kLmHead,          // lm_head (absent when tied to the embedding)
};
inline constexpr ParamFamily kAllParamFamilies[] = {
    ParamFamily::kEmbedding,  ParamFamily::kAttention,     ParamFamily::kLatentProj,
    ParamFamily::kLinearAttention, ParamFamily::kDenseMlp, ParamFamily::kRouter,
    ParamFamily::kRoutedExperts, ParamFamily::kSharedExperts, ParamFamily::kNorm,
    ParamFamily::kLmHead};

// "embedding", "attention", "latent_proj", "linear_attention", "dense_mlp", "router",
// "routed_experts", "shared_experts", "norm", "lm_head".
std::string_view ParamFamilyName(ParamFamily family);

// How a decoder layer attends. Layers of one model may differ (gemma2/3, gpt_oss: sliding and
// full; llama4: chunked and NoPE-full; qwen3_next/qwen3_5: Gated DeltaNet and gated full).
enum class AttentionKind {
  kFull,     // every earlier token (causal)
  kSliding,  // the last sliding_window tokens
  kChunked,  // tokens of the same attention_chunk_size chunk (llama4)
  kLinear,   // Gated DeltaNet: a recurrent state per head instead of a KV cache (qwen3_next)
};
std::string_view AttentionKindName(AttentionKind kind);  // "full", "sliding", "chunked", "linear"

// Which transformers module layout (and so which checkpoint names) a model uses.
enum class ModelFamily {
  kLlama,     // llama, mistral, qwen2, qwen3, mixtral, qwen2_moe, qwen3_moe, phi3
  kGpt2,      // transformer.h.N.attn.c_attn (Conv1D)
  kBloom,     // transformer.h.N.self_attention.query_key_value
  kGptNeox,   // gpt_neox.layers.N.attention.query_key_value
  kFalcon,    // transformer.h.N.self_attention.query_key_value (multi-query / grouped)
  kDeepSeek,  // deepseek_v2, deepseek_v3, kimi_k2: MLA + DeepSeekMoE; glm4_moe: GQA + DeepSeekMoE
  kGptOss,    // gpt_oss: sinks, biased MoE with fused expert tensors
  kLlama4,    // llama4 text model: feed_forward.{router, experts, shared_expert}
  kQwenNext,  // qwen3_next, qwen3_5, qwen3_5_moe: Gated DeltaNet + gated attention
  kGemma,     // gemma2, gemma3: four norms per layer, q/k norms in gemma3
  kNemotron,  // nemotron: llama's names, mlp.{up,down}_proj (not gated), LayerNorm1P with bias
};

struct ModelSpec {
  // The config's model_type (for a multimodal checkpoint, the text model's), or the config's own
  // value when assumed_llama_like is set.
  std::string model_type;
  // The config's "_attn_implementation" (or "attn_implementation") when it names one: "sdpa",
  // "flash_attention_2", "eager", ...; empty when the file leaves it to transformers.
  std::string attn_implementation;
  ModelFamily family = ModelFamily::kLlama;
  // An unknown model_type whose keys describe a plain llama decoder: counted as llama, which is
  // right for most llama derivatives but unverified, so reports should say so.
  bool assumed_llama_like = false;
  // Prefix of every decoder name: "model." for *ForCausalLM checkpoints; multimodal checkpoints
  // nest the language model ("language_model.model." for llama4 and gemma3,
  // "model.language_model." for qwen3_5). lm_head_name is the head's full tensor name.
  std::string name_prefix = "model.";
  std::string lm_head_name = "lm_head.weight";
  // What the plan leaves out of the published checkpoint, one phrase each ("vision tower",
  // "1 MTP layer (14.0B parameters)"); reports print them.
  std::vector<std::string> left_out;

  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;           // may differ from hidden/heads (qwen3, Mistral-Nemo, gemma)
  int64_t intermediate_size = 0;  // dense MLP width; for mixtral also the expert width
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections carry a bias
  bool o_proj_bias = false;     // llama/qwen3 attention_bias also biases o_proj; qwen2 does not
  bool mlp_bias = false;        // llama mlp_bias: gate/up/down of dense MLPs
  bool qk_norm = false;         // qwen3, gemma3, qwen3_next: RMSNorm over head_dim on q and k
  bool fused_qkv = false;       // one qkv_proj / query_key_value tensor (phi3, gpt_neox, falcon)
  bool fused_gate_up = false;   // phi3's gate_up_proj
  bool attention_sinks = false; // gpt_oss: a learned logit per head joins the softmax
  bool attention_output_gate = false;  // qwen3_next: q_proj also emits a sigmoid gate per column
  bool parallel_residual = false;      // gpt_neox / falcon: attention and MLP read the same input
  int64_t norms_per_layer = 2;         // gemma: 4 (pre/post attention, pre/post feed-forward)
  bool branch_norms = false;           // falcon new_decoder_architecture: ln_attn and ln_mlp

  // Layer kinds; empty means every layer is kFull.
  std::vector<AttentionKind> layer_attention;
  int64_t sliding_window = 0;        // tokens a kSliding layer sees
  int64_t attention_chunk_size = 0;  // tokens of a kChunked layer's chunk
  AttentionKind LayerAttention(int64_t layer) const;

  // Multi-head latent attention (deepseek_v2/v3) when kv_lora_rank > 0: q through a q_lora_rank
  // bottleneck (or a plain q_proj when q_lora_rank is 0), k/v from a shared kv_lora_rank latent
  // plus a qk_rope_head_dim rotary key shared by all heads.
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  bool mla() const { return kv_lora_rank > 0; }
  // Per-head width of q·k (and of v): head_dim without MLA.
  int64_t qk_head_dim() const { return mla() ? qk_nope_head_dim + qk_rope_head_dim : head_dim; }
  int64_t value_head_dim() const { return mla() ? v_head_dim : head_dim; }

  // Gated DeltaNet (kLinear layers).
  int64_t linear_num_key_heads = 0;
  int64_t linear_num_value_heads = 0;
  int64_t linear_key_head_dim = 0;
  int64_t linear_value_head_dim = 0;
  int64_t linear_conv_kernel_dim = 0;
  // qwen3_5: in_proj_qkv, in_proj_z, in_proj_b, in_proj_a instead of qwen3_next's in_proj_qkvz and
  // in_proj_ba (same total).
  bool split_linear_proj = false;

  // GPT-style decoders (gpt2, bloom, gpt_neox, falcon; GPT-3, Megatron's GPT, MT-NLG, BLOOM load
  // as these).
  bool gated_mlp = true;           // SwiGLU/GeGLU gate/up/down; false: fc1 -> GeLU -> fc2 (GPT)
  bool layer_norm = false;         // LayerNorm with weight and bias instead of RMSNorm (weight)
  int64_t learned_positions = 0;   // rows of a learned position embedding (gpt2 n_positions); 0
                                   // for rotary (llama) and ALiBi (bloom)
  bool embedding_norm = false;     // bloom's word_embeddings_layernorm after the embedding
  double hidden_dropout = 0;       // residual/embedding dropout probability (gpt2 resid_pdrop)
  double attention_dropout = 0;    // dropout on the attention probabilities (gpt2 attn_pdrop)
  // GPT-style names: fused query_key_value / c_attn, dense, dense_h_to_4h (nemotron keeps llama's).
  bool gpt_style() const { return !gated_mlp && family != ModelFamily::kNemotron; }
  bool squared_relu = false;       // nemotron's relu2 activation: relu(x)^2
  // Share of each head's dimensions the rotary embedding turns (nemotron partial_rotary_factor,
  // default 0.5); the rest pass through.
  double rotary_fraction = 1.0;
  bool rotary() const { return learned_positions == 0 && family != ModelFamily::kBloom &&
                               !(family == ModelFamily::kFalcon && alibi); }
  bool alibi = false;              // falcon's alibi option (bloom always)

  // MoE; num_experts == 0 for dense models.
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;            // width of one routed expert
  int64_t shared_expert_intermediate_size = 0;  // total width of the shared expert(s); 0: none
  bool shared_expert_gate = false;  // qwen: sigmoid(shared_expert_gate(x)) scales the shared path
  bool router_bias = false;         // gpt_oss: the router Linear has a bias
  bool router_score_bias = false;   // deepseek_v3 noaux_tc: gate.e_score_correction_bias [E]
  bool expert_bias = false;         // gpt_oss: expert projections carry biases
  bool fused_experts = false;       // checkpoint holds one [E, ...] tensor per projection
                                    // (gpt_oss, llama4) instead of one tensor per expert
  // qwen2_moe/qwen3_moe/llama4: layer i is MoE iff i is not in mlp_only_layers and
  // (i + 1) % decoder_sparse_step == 0; deepseek: i >= first_dense_layers and
  // i % decoder_sparse_step == 0 (moe_layer_freq). The other layers get a dense MLP of
  // intermediate_size.
  int64_t decoder_sparse_step = 1;
  bool sparse_step_from_zero = false;  // deepseek's rule (see above)
  int64_t first_dense_layers = 0;      // deepseek first_k_dense_replace
  std::vector<int64_t> mlp_only_layers;
  bool norm_topk_prob = false;  // affects routing math only, not parameter counts
  // deepseek_v3's group-limited routing (DeepseekV3TopkRouter.get_topk_indices): the experts form
  // n_group contiguous groups, a token's top-k come from its best topk_group of them. 1 and 1: none.
  int64_t n_group = 1;
  int64_t topk_group = 1;
  // DeepSeek-V2's topk_method ("greedy", "group_limited_greedy"; V3's "noaux_tc"): AutoEP's
  // deepseek_v2 preset scores groups by their maximum only under group_limited_greedy.
  std::string topk_method;
  int64_t mtp_layers = 0;       // multi-token-prediction layers the checkpoint ships and
                                // transformers drops on load (deepseek_v3 num_nextn_predict_layers,
                                // qwen3_next/qwen3_5 mtp.*): counted apart, never trained here

  bool is_moe() const { return num_experts > 0; }
  bool IsMoeLayer(int64_t layer) const;
  int64_t NumMoeLayers() const;
  // Mixtral names its MoE block block_sparse_moe with experts w1/w2/w3; Qwen uses mlp.gate and
  // experts gate/up/down_proj.
  bool UsesMixtralNaming() const { return model_type == "mixtral"; }

  // Layers with the same kind hold tensors of the same shapes and cost the same: MoE or dense
  // MLP, and the attention kind. Cost and memory models evaluate one layer of each kind.
  int LayerKind(int64_t layer) const;
  struct LayerRun {
    int64_t representative = 0;  // first layer of this kind in the range
    int64_t count = 0;           // layers of this kind in the range
  };
  // The kinds present in [first, end), in order of first appearance.
  std::vector<LayerRun> LayerKinds(int64_t first, int64_t end) const;
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
// names: per-expert tensors where the checkpoint has them (mixtral, qwen, deepseek), not the fused
// 3-D tensors transformers 5 builds at load time; fused [E, ...] tensors where the checkpoint
// itself holds them (gpt_oss, llama4), with expert -1.
std::vector<ParamTensor> ParameterTensors(const ModelSpec& spec);

// The tensors of decoder layer `layer` alone, and those outside the layers (embedding, final
// norm, head), in ParameterTensors order: what a cost model needs for one layer of a kind
// without naming every tensor of a 256-expert model.
std::vector<ParamTensor> LayerParameterTensors(const ModelSpec& spec, int64_t layer);
std::vector<ParamTensor> NonLayerParameterTensors(const ModelSpec& spec);

struct ParamCounts {
  int64_t total = 0;
  // total minus the routed experts a token does not visit (num_experts - top_k per MoE layer).
  // Embedding and lm_head are included, matching the published "active" figures (Mixtral 12.9B).
  int64_t active_per_token = 0;
  // Every family is present, 0 where the model has none, so callers can index without checks.
  std::map<ParamFamily, int64_t> by_family;
  int64_t largest_tensor = 0;  // numel of the biggest single tensor (ZeRO-3 gather working set)
  // deepseek_v3's multi-token-prediction layers: in the published checkpoint, not in `total`
  // (transformers does not build them; the DeepSeek-V3 report's 671B excludes them too).
  int64_t mtp = 0;
};

// The same walk as ParameterTensors without building names, one layer per layer kind and one
// expert per expert list: equals the sums over ParameterTensors(spec) by construction.
ParamCounts CountParameters(const ModelSpec& spec);

}  // namespace dsp
