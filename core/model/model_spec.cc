// SPDX-License-Identifier: Apache-2.0
// ModelSpec's layer queries and ParseHfConfig: finds the text model of a multimodal config,
// dispatches to the family parser (parse_*.cc) and refuses what none of them reads.
#include "core/model/model_spec.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <utility>

#include "core/model/config_reader.h"

namespace dsp {

std::string_view ParamFamilyName(ParamFamily family) {
  switch (family) {
    case ParamFamily::kEmbedding: return "embedding";
    case ParamFamily::kAttention: return "attention";
    case ParamFamily::kLatentProj: return "latent_proj";
    case ParamFamily::kLinearAttention: return "linear_attention";
    case ParamFamily::kDenseMlp: return "dense_mlp";
    case ParamFamily::kRouter: return "router";
    case ParamFamily::kRoutedExperts: return "routed_experts";
    case ParamFamily::kSharedExperts: return "shared_experts";
    case ParamFamily::kNorm: return "norm";
    case ParamFamily::kLmHead: return "lm_head";
  }
  return "unknown";
}

std::string_view AttentionKindName(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::kFull: return "full";
    case AttentionKind::kSliding: return "sliding";
    case AttentionKind::kChunked: return "chunked";
    case AttentionKind::kLinear: return "linear";
  }
  return "full";
}

AttentionKind ModelSpec::LayerAttention(int64_t layer) const {
  if (layer < 0 || layer >= static_cast<int64_t>(layer_attention.size())) return AttentionKind::kFull;
  return layer_attention[static_cast<size_t>(layer)];
}

bool ModelSpec::IsMoeLayer(int64_t layer) const {
  if (num_experts <= 0 || decoder_sparse_step <= 0) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end()) {
    return false;
  }
  if (sparse_step_from_zero) {
    return layer >= first_dense_layers && layer % decoder_sparse_step == 0;
  }
  return (layer + 1) % decoder_sparse_step == 0;
}

int64_t ModelSpec::NumMoeLayers() const {
  if (num_experts <= 0 || decoder_sparse_step <= 0) return 0;
  if (mlp_only_layers.empty() && decoder_sparse_step == 1 && first_dense_layers == 0) {
    return num_hidden_layers;
  }
  int64_t n = 0;
  for (int64_t i = 0; i < num_hidden_layers; ++i) n += IsMoeLayer(i) ? 1 : 0;
  return n;
}

int ModelSpec::LayerKind(int64_t layer) const {
  return (IsMoeLayer(layer) ? 1 : 0) | (static_cast<int>(LayerAttention(layer)) << 1);
}

std::vector<ModelSpec::LayerRun> ModelSpec::LayerKinds(int64_t first, int64_t end) const {
  std::vector<LayerRun> runs;
  std::vector<int> kinds;  // kinds[i] is the kind of runs[i]; at most 8 kinds exist
  for (int64_t i = std::max<int64_t>(first, 0); i < std::min(end, num_hidden_layers); ++i) {
    const int kind = LayerKind(i);
    auto it = std::find(kinds.begin(), kinds.end(), kind);
    if (it == kinds.end()) {
      kinds.push_back(kind);
      runs.push_back(LayerRun{i, 1});
    } else {
      ++runs[static_cast<size_t>(it - kinds.begin())].count;
    }
  }
  return runs;
}

namespace model_internal {

Result<int64_t> ExpertCount(const Reader& r) {
  // transformers maps num_experts <-> num_local_experts (Qwen3MoeConfig.attribute_map), so a
  // config saved by either spelling must work for every MoE type.
  auto local = r.Int("num_local_experts", 1, kMaxCount);
  if (!local.ok()) return local.error();
  auto plain = r.Int("num_experts", 1, kMaxCount);
  if (!plain.ok()) return plain.error();
  if (local->has_value() && plain->has_value() && **local != **plain) {
    return r.Fail("num_experts", "(" + std::to_string(**plain) +
                                     ") disagrees with 'num_local_experts' (" +
                                     std::to_string(**local) + ")");
  }
  if (local->has_value()) return **local;
  if (plain->has_value()) return **plain;
  return r.Fail("num_experts",
                "is missing (required for MoE; mixtral spells it num_local_experts)");
}

Status ValidateSpec(const ModelSpec& s, const Reader& r, bool head_dim_given) {
  if (!head_dim_given && s.hidden_size % s.num_attention_heads != 0) {
    return r.Fail("num_attention_heads",
                  "(" + std::to_string(s.num_attention_heads) + ") must divide 'hidden_size' (" +
                      std::to_string(s.hidden_size) + ") when 'head_dim' is not given");
  }
  if (s.num_attention_heads % s.num_key_value_heads != 0) {
    return r.Fail("num_key_value_heads", "(" + std::to_string(s.num_key_value_heads) +
                                             ") must divide 'num_attention_heads' (" +
                                             std::to_string(s.num_attention_heads) + ")");
  }
  if (s.is_moe() && s.num_experts_per_tok > s.num_experts) {
    return r.Fail("num_experts_per_tok", "(" + std::to_string(s.num_experts_per_tok) +
                                             ") exceeds the number of experts (" +
                                             std::to_string(s.num_experts) + ")");
  }
  // Order-of-magnitude total in floating point, so absurd inputs are refused before any int64_t
  // product can overflow in CountParameters.
  long double h = s.hidden_size, L = s.num_hidden_layers;
  long double attn = h * s.head_dim * (2.0L * s.num_attention_heads + 2.0L * s.num_key_value_heads);
  long double mlp = 3.0L * h * s.intermediate_size;
  long double moe = (s.num_experts * 3.0L * s.moe_intermediate_size + s.num_experts +
                     3.0L * s.shared_expert_intermediate_size + 1.0L) *
                    h;
  long double total = L * (attn + mlp + moe + 8.0L * h) + 2.0L * s.vocab_size * h;
  if (total > kMaxTotalParams) {
    return Error{
        "model config: the parameter count (~" + std::to_string(static_cast<double>(total)) +
        ") is implausibly large; check 'hidden_size', 'num_hidden_layers' and the expert sizes"};
  }
  return Status::Ok();
}

Status ReadDecoderCore(ModelSpec& s, const Reader& r, int64_t default_head_dim,
                       int64_t default_positions, bool default_tie, bool* head_dim_given,
                       int64_t default_vocab) {
  auto read = [&]() -> Result<bool> {
    DSP_ASSIGN_OR_RETURN(s.hidden_size, r.RequiredInt("hidden_size", 1, kMaxDim));
    DSP_ASSIGN_OR_RETURN(s.num_hidden_layers, r.RequiredInt("num_hidden_layers", 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.num_attention_heads,
                         r.RequiredInt("num_attention_heads", 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.num_key_value_heads,
                         r.IntOr("num_key_value_heads", s.num_attention_heads, 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.vocab_size, default_vocab > 0
                                           ? r.IntOr("vocab_size", default_vocab, 1, kMaxDim)
                                           : r.RequiredInt("vocab_size", 1, kMaxDim));
    *head_dim_given = r.Has("head_dim") || default_head_dim > 0;
    const int64_t fallback =
        default_head_dim > 0 ? default_head_dim : s.hidden_size / s.num_attention_heads;
    DSP_ASSIGN_OR_RETURN(s.head_dim, r.IntOr("head_dim", std::max<int64_t>(fallback, 1), 1, kMaxDim));
    DSP_ASSIGN_OR_RETURN(s.max_position_embeddings,
                         r.IntOr("max_position_embeddings", default_positions, 1, int64_t{1} << 40));
    DSP_ASSIGN_OR_RETURN(s.tie_word_embeddings, r.BoolOr("tie_word_embeddings", default_tie));
    return true;
  };
  Result<bool> ok = read();
  if (!ok.ok()) return ok.error();
  return Status::Ok();
}

Result<std::vector<AttentionKind>> LayerTypes(const Reader& r, int64_t layers) {
  std::vector<AttentionKind> out;
  const Json* types = r.Find("layer_types");
  if (types == nullptr) return out;
  if (!types->is_array()) return r.Fail("layer_types", "must be a list of strings (got " + Shown(*types) + ")");
  if (static_cast<int64_t>(types->size()) != layers) {
    return r.Fail("layer_types", "has " + std::to_string(types->size()) +
                                     " entries; 'num_hidden_layers' is " + std::to_string(layers));
  }
  for (const Json& t : *types) {
    const std::string name = t.is_string() ? t.get<std::string>() : std::string();
    if (name == "full_attention") {
      out.push_back(AttentionKind::kFull);
    } else if (name == "sliding_attention") {
      out.push_back(AttentionKind::kSliding);
    } else if (name == "chunked_attention") {
      out.push_back(AttentionKind::kChunked);
    } else if (name == "linear_attention") {
      out.push_back(AttentionKind::kLinear);
    } else {
      return r.Fail("layer_types", "holds " + Shown(t) +
                                       "; expected full_attention, sliding_attention, "
                                       "chunked_attention or linear_attention");
    }
  }
  return out;
}

}  // namespace model_internal

namespace {

using model_internal::Quote;
using model_internal::Reader;
using model_internal::Shown;

// Every model_type ParseHfConfig reads, with its parser.
using Parser = Result<ModelSpec> (*)(ModelSpec, const Reader&);
struct KnownType {
  const char* model_type;
  Parser parse;
};
constexpr KnownType kKnownTypes[] = {
    {"llama", model_internal::ParseLlamaFamily},   {"mistral", model_internal::ParseLlamaFamily},
    {"qwen2", model_internal::ParseLlamaFamily},   {"qwen3", model_internal::ParseLlamaFamily},
    {"mixtral", model_internal::ParseLlamaFamily}, {"qwen2_moe", model_internal::ParseLlamaFamily},
    {"qwen3_moe", model_internal::ParseLlamaFamily}, {"phi3", model_internal::ParseLlamaFamily},
    {"gpt2", model_internal::ParseGptFamily},      {"bloom", model_internal::ParseGptFamily},
    {"gpt_neox", model_internal::ParseGptFamily},  {"falcon", model_internal::ParseGptFamily},
    {"deepseek_v2", model_internal::ParseDeepSeek}, {"deepseek_v3", model_internal::ParseDeepSeek},
    {"gpt_oss", model_internal::ParseGptOss},      {"llama4_text", model_internal::ParseLlama4},
    {"qwen3_next", model_internal::ParseQwenNext}, {"qwen3_5_text", model_internal::ParseQwenNext},
    {"qwen3_5_moe_text", model_internal::ParseQwenNext},
    {"gemma2", model_internal::ParseGemma},        {"gemma3_text", model_internal::ParseGemma},
    {"nemotron", model_internal::ParseNemotron},
    // Kimi K2's config.json says model_type kimi_k2 with DeepseekV3ForCausalLM (remote code whose
    // DeepseekV3Config only renames model_type): DeepSeek-V3's architecture with its own sizes.
    {"kimi_k2", model_internal::ParseDeepSeek},
    {"glm4_moe", model_internal::ParseGlm4Moe},
    {"qwen3_vl_text", model_internal::ParseLlamaFamily},
    {"qwen3_vl_moe_text", model_internal::ParseLlamaFamily},
    {"qwen2_vl_text", model_internal::ParseLlamaFamily},
    {"qwen2_5_vl_text", model_internal::ParseLlamaFamily},
};

std::string SupportedTypes() {
  std::string out;
  for (const KnownType& t : kKnownTypes) {
    if (!out.empty()) out += ", ";
    out += t.model_type;
  }
  return out + " (and llama4, qwen3_5, qwen3_5_moe, gemma3, qwen3_vl, qwen3_vl_moe, qwen2_vl, qwen2_5_vl through their text_config)";
}

// Multimodal checkpoints whose config.json nests the language model under text_config, with the
// name prefix their safetensors give its tensors and the head's name.
struct Multimodal {
  const char* model_type;
  const char* name_prefix;
  const char* lm_head_name;
  const char* left_out;
  // Qwen2-VL and Qwen2.5-VL hub configs keep the language model's keys at the top level (the
  // checkpoints name its tensors model.layers.*); configs transformers 5 saves nest them in
  // text_config (model.language_model.*). Either is read.
  bool flat_ok = false;
};
constexpr Multimodal kMultimodal[] = {
    {"llama4", "language_model.model.", "language_model.lm_head.weight",
     "vision tower and multimodal projector (vision_config)"},
    {"gemma3", "language_model.model.", "language_model.lm_head.weight",
     "vision tower and multimodal projector (vision_config)"},
    {"qwen3_5", "model.language_model.", "lm_head.weight",
     "vision tower and merger (vision_config)"},
    {"qwen3_5_moe", "model.language_model.", "lm_head.weight",
     "vision tower and merger (vision_config)"},
    {"qwen3_vl", "model.language_model.", "lm_head.weight",
     "vision tower, merger and DeepStack mergers (vision_config)"},
    {"qwen3_vl_moe", "model.language_model.", "lm_head.weight",
     "vision tower, merger and DeepStack mergers (vision_config)"},
    {"qwen2_vl", "model.language_model.", "lm_head.weight", "vision tower and merger (vision_config)", true},
    {"qwen2_5_vl", "model.language_model.", "lm_head.weight", "vision tower and merger (vision_config)",
     true},
};

// Keys that mean the model is not a plain llama decoder; counting such a config as llama would
// silently drop experts or latent-attention weights, so an unknown model_type with any of them is
// refused instead.
constexpr const char* kNonLlamaMarkers[] = {
    "num_local_experts", "num_experts",       "n_routed_experts", "moe_intermediate_size",
    "kv_lora_rank",      "q_lora_rank",       "n_shared_experts", "num_experts_per_tok",
    "layer_types",       "linear_num_key_heads", "sliding_window_pattern", "text_config",
    // A vision tower beside a flat language model: counting only the decoder would drop it unsaid.
    "vision_config",
    // Mamba/SSM hybrids (nemotron_h hybrid_override_pattern, Jamba attn_layer_period and
    // layers_block_type, Mamba2 mixers' ssm_state_size / mamba_num_heads) and MoE under other
    // names (ERNIE-4.5 moe_num_experts, DBRX ffn_config).
    "hybrid_override_pattern", "attn_layer_period", "layers_block_type", "ssm_state_size",
    "mamba_num_heads", "moe_num_experts", "ffn_config"};

Result<std::string> ModelTypeOf(const Json& config, std::string_view where) {
  auto type_it = config.find("model_type");
  if (type_it == config.end() || type_it->is_null()) {
    return Error{"model config: 'model_type' is missing" + std::string(where) + " (required)"};
  }
  if (!type_it->is_string()) {
    return Error{"model config: 'model_type' must be a string (got " + Shown(*type_it) + ")"};
  }
  std::string type = type_it->get<std::string>();
  // Hugging Face model types are short identifiers; a long or odd one is not a config.json and
  // would otherwise be echoed into every message and report.
  const bool identifier = !type.empty() && type.size() <= 64 &&
                          std::all_of(type.begin(), type.end(), [](unsigned char c) {
                            return std::isalnum(c) || c == '_' || c == '-' || c == '.';
                          });
  if (!identifier) {
    return Error{"model config: 'model_type' must be a short identifier like \"llama\" (letters, "
                 "digits, _ - .; at most 64), got " + Shown(*type_it)};
  }
  return type;
}

Result<ModelSpec> Parse(const Json& root) {
  if (!root.is_object()) return Error{"model config: expected a JSON object (a config.json)"};
  Result<std::string> type = ModelTypeOf(root, "");
  if (!type.ok()) return type.error();
  const Json* config = &root;
  Json merged;  // text_config plus the outer tie_word_embeddings, when that is needed
  ModelSpec s;
  for (const Multimodal& mm : kMultimodal) {
    if (*type != mm.model_type) continue;
    auto text = root.find("text_config");
    if (mm.flat_ok && text == root.end()) {
      type = std::string(mm.model_type) + "_text";
      s.name_prefix = "model.";
      s.left_out.push_back(mm.left_out);
      break;
    }
    if (text == root.end() || !text->is_object()) {
      return Error{"model config (" + *type + "): 'text_config' is missing (required: the " +
                   "language model's config)"};
    }
    config = &*text;
    // Some text_config objects omit model_type; the outer type names the text class then. One that
    // is there must be valid.
    auto inner_type = config->find("model_type");
    if (inner_type == config->end() || inner_type->is_null()) {
      type = std::string(mm.model_type) + "_text";
    } else {
      type = ModelTypeOf(*config, " in 'text_config'");
      if (!type.ok()) return type.error();
    }
    s.name_prefix = mm.name_prefix;
    s.lm_head_name = mm.lm_head_name;
    s.left_out.push_back(mm.left_out);
    // The head's tie is the outer config's attribute in these classes.
    auto tie = root.find("tie_word_embeddings");
    if (tie != root.end() && tie->is_boolean() && !text->contains("tie_word_embeddings")) {
      merged = *text;
      merged["tie_word_embeddings"] = *tie;
      config = &merged;
    }
    break;
  }
  s.model_type = *type;
  for (const char* key : {"_attn_implementation", "attn_implementation"}) {
    for (const Json* c : {config, &root}) {
      auto it = c->find(key);
      if (s.attn_implementation.empty() && it != c->end() && it->is_string()) {
        s.attn_implementation = it->get<std::string>();
      }
    }
  }
  Reader r(*config, "model config (" + s.model_type + ")");
  for (const KnownType& t : kKnownTypes) {
    if (s.model_type == t.model_type) return t.parse(std::move(s), r);
  }
  for (const char* key : kNonLlamaMarkers) {
    if (r.Has(key)) {
      return Error{"model config: model_type '" + s.model_type + "' is not supported: it has " +
                   Quote(key) + ", so it is not a plain llama-like decoder (supported: " +
                   SupportedTypes() + ")"};
    }
  }
  s.assumed_llama_like = true;
  return model_internal::ParseLlamaFamily(std::move(s), r);
}

}  // namespace

Result<ModelSpec> ParseHfConfig(const Json& config) {
  // The reads above check types before every get<>, so nothing should throw; the guard keeps the
  // no-exceptions promise even if a future edit forgets a check.
  try {
    return Parse(config);
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("model config: ") + e.what()};
  }
}

}  // namespace dsp
