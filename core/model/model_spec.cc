// SPDX-License-Identifier: Apache-2.0
#include "core/model/model_spec.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

namespace dsp {

std::string_view ParamFamilyName(ParamFamily family) {
  switch (family) {
    case ParamFamily::kEmbedding: return "embedding";
    case ParamFamily::kAttention: return "attention";
    case ParamFamily::kDenseMlp: return "dense_mlp";
    case ParamFamily::kRouter: return "router";
    case ParamFamily::kRoutedExperts: return "routed_experts";
    case ParamFamily::kSharedExperts: return "shared_experts";
    case ParamFamily::kNorm: return "norm";
    case ParamFamily::kLmHead: return "lm_head";
  }
  return "unknown";
}

bool ModelSpec::IsMoeLayer(int64_t layer) const {
  if (num_experts <= 0 || decoder_sparse_step <= 0) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end()) {
    return false;
  }
  return (layer + 1) % decoder_sparse_step == 0;
}

int64_t ModelSpec::NumMoeLayers() const {
  if (num_experts <= 0 || decoder_sparse_step <= 0) return 0;
  if (mlp_only_layers.empty() && decoder_sparse_step == 1) return num_hidden_layers;
  int64_t n = 0;
  for (int64_t i = 0; i < num_hidden_layers; ++i) n += IsMoeLayer(i) ? 1 : 0;
  return n;
}

namespace {

enum class Arch { kLlama, kMistral, kQwen2, kQwen3, kMixtral, kQwen2Moe, kQwen3Moe, kGpt2, kBloom };

std::optional<Arch> KnownArch(const std::string& model_type) {
  if (model_type == "llama") return Arch::kLlama;
  if (model_type == "mistral") return Arch::kMistral;
  if (model_type == "qwen2") return Arch::kQwen2;
  if (model_type == "qwen3") return Arch::kQwen3;
  if (model_type == "mixtral") return Arch::kMixtral;
  if (model_type == "qwen2_moe") return Arch::kQwen2Moe;
  if (model_type == "qwen3_moe") return Arch::kQwen3Moe;
  if (model_type == "gpt2") return Arch::kGpt2;
  if (model_type == "bloom") return Arch::kBloom;
  return std::nullopt;
}

// Sizes past these are not models but typos (or overflow bait); they also keep every product in
// CountParameters inside int64_t together with the total check at the end of ParseHfConfig.
constexpr int64_t kMaxDim = int64_t{1} << 24;    // hidden, ffn, vocab, head_dim, positions: 16M
constexpr int64_t kMaxCount = int64_t{1} << 16;  // layers, heads, experts: 65,536
constexpr long double kMaxTotalParams = 1e16L;   // 10 quadrillion; far beyond any real model

std::string Quote(std::string_view key) { return "'" + std::string(key) + "'"; }

std::string Shown(const Json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

// Reads config.json keys the way transformers' config classes do: absent and null both mean
// "use the default" (configs saved by transformers write `"head_dim": null`).
class Reader {
 public:
  Reader(const Json& config, std::string context) : config_(config), context_(std::move(context)) {}

  Error Fail(std::string_view key, const std::string& what) const {
    return Error{context_ + ": " + Quote(key) + " " + what};
  }

  bool Has(std::string_view key) const {
    auto it = config_.find(key);
    return it != config_.end() && !it->is_null();
  }

  Result<std::optional<int64_t>> Int(std::string_view key, int64_t min, int64_t max) const {
    auto it = config_.find(key);
    if (it == config_.end() || it->is_null()) return std::optional<int64_t>();
    if (!it->is_number_integer()) {
      return Fail(key, "must be an integer (got " + Shown(*it) + ")");
    }
    if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(max)) {
      return Fail(key,
                  "is too large (got " + Shown(*it) + ", at most " + std::to_string(max) + ")");
    }
    int64_t v = it->get<int64_t>();
    if (v < min)
      return Fail(key, "must be at least " + std::to_string(min) + " (got " + Shown(*it) + ")");
    if (v > max)
      return Fail(key,
                  "is too large (got " + Shown(*it) + ", at most " + std::to_string(max) + ")");
    return std::optional<int64_t>(v);
  }

  Result<int64_t> RequiredInt(std::string_view key, int64_t min, int64_t max) const {
    auto v = Int(key, min, max);
    if (!v.ok()) return v.error();
    if (!v->has_value()) return Fail(key, "is missing (required)");
    return **v;
  }

  Result<int64_t> IntOr(std::string_view key, int64_t fallback, int64_t min, int64_t max) const {
    auto v = Int(key, min, max);
    if (!v.ok()) return v.error();
    return v->value_or(fallback);
  }

  Result<double> ProbabilityOr(std::string_view key, double fallback) const {
    auto it = config_.find(key);
    if (it == config_.end() || it->is_null()) return fallback;
    if (!it->is_number()) return Fail(key, "must be a number (got " + Shown(*it) + ")");
    const double v = it->get<double>();
    if (!(v >= 0.0 && v < 1.0)) return Fail(key, "must be in [0, 1) (got " + Shown(*it) + ")");
    return v;
  }

  // The first of several spellings that is present (transformers' attribute_map aliases, e.g.
  // GPT2Config's n_embd for hidden_size); two spellings with different values are an error.
  Result<std::optional<int64_t>> AnyInt(std::initializer_list<std::string_view> keys, int64_t min,
                                        int64_t max) const {
    std::optional<int64_t> found;
    std::string_view found_key;
    for (std::string_view key : keys) {
      auto v = Int(key, min, max);
      if (!v.ok()) return v.error();
      if (!v->has_value()) continue;
      if (found && *found != **v) {
        return Fail(key, "(" + std::to_string(**v) + ") disagrees with " + Quote(found_key) +
                             " (" + std::to_string(*found) + ")");
      }
      found = **v;
      found_key = key;
    }
    return found;
  }

  Result<int64_t> RequiredAnyInt(std::initializer_list<std::string_view> keys, int64_t min,
                                 int64_t max) const {
    auto v = AnyInt(keys, min, max);
    if (!v.ok()) return v.error();
    if (!v->has_value()) return Fail(*keys.begin(), "is missing (required)");
    return **v;
  }

  Result<bool> BoolOr(std::string_view key, bool fallback) const {
    auto it = config_.find(key);
    if (it == config_.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) return Fail(key, "must be true or false (got " + Shown(*it) + ")");
    return it->get<bool>();
  }

  Result<std::vector<int64_t>> IntList(std::string_view key) const {
    std::vector<int64_t> out;
    auto it = config_.find(key);
    if (it == config_.end() || it->is_null()) return out;
    if (!it->is_array())
      return Fail(key, "must be a list of layer indices (got " + Shown(*it) + ")");
    for (const Json& item : *it) {
      if (!item.is_number_integer()) {
        return Fail(key, "must hold integers only (got " + Shown(item) + ")");
      }
      // Out-of-range indices are kept: transformers ignores them too, and IsMoeLayer never asks.
      out.push_back(item.is_number_unsigned() && item.get<uint64_t>() > uint64_t{INT64_MAX}
                        ? INT64_MAX
                        : item.get<int64_t>());
    }
    return out;
  }

 private:
  const Json& config_;
  std::string context_;
};

// Propagates an Error out of the enclosing function returning Result<ModelSpec>.
#define DSP_ASSIGN_OR_RETURN(lhs, expr)                \
  do {                                                 \
    auto dsp_result_ = (expr);                         \
    if (!dsp_result_.ok()) return dsp_result_.error(); \
    lhs = std::move(*dsp_result_);                     \
  } while (false)

// Keys that mean the model is not a plain llama decoder; counting such a config as llama would
// silently drop experts or latent-attention weights, so an unknown model_type with any of them is
// refused instead.
constexpr const char* kNonLlamaMarkers[] = {
    "num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size",
    "kv_lora_rank",      "q_lora_rank", "n_shared_experts", "num_experts_per_tok"};

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

Status Validate(const ModelSpec& s, const Reader& r, bool head_dim_given) {
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

// GPT2Config and BloomConfig (transformers): a LayerNorm decoder with biased linears, a GeLU MLP
// (gpt2: n_inner, default 4h; bloom: always 4h), tied embeddings by default, learned positions
// (gpt2 n_positions) or ALiBi (bloom). Both accept their attribute_map aliases (hidden_size for
// n_embd, ...).
Result<ModelSpec> ParseGptStyle(ModelSpec s, const Reader& r, Arch arch) {
  const bool gpt2 = arch == Arch::kGpt2;
  if (gpt2) {
    DSP_ASSIGN_OR_RETURN(s.hidden_size, r.RequiredAnyInt({"n_embd", "hidden_size"}, 1, kMaxDim));
    DSP_ASSIGN_OR_RETURN(s.num_hidden_layers,
                         r.RequiredAnyInt({"n_layer", "num_hidden_layers"}, 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.num_attention_heads,
                         r.RequiredAnyInt({"n_head", "num_attention_heads"}, 1, kMaxCount));
    std::optional<int64_t> inner;
    DSP_ASSIGN_OR_RETURN(inner, r.AnyInt({"n_inner", "intermediate_size"}, 1, kMaxDim));
    s.intermediate_size = inner.value_or(4 * s.hidden_size);
    DSP_ASSIGN_OR_RETURN(s.vocab_size, r.RequiredInt("vocab_size", 1, kMaxDim));
    std::optional<int64_t> positions;
    DSP_ASSIGN_OR_RETURN(positions, r.AnyInt({"n_positions", "max_position_embeddings"}, 1, kMaxDim));
    s.max_position_embeddings = positions.value_or(1024);  // GPT2Config default
    s.learned_positions = s.max_position_embeddings;
    DSP_ASSIGN_OR_RETURN(s.hidden_dropout, r.ProbabilityOr("resid_pdrop", 0.1));
    DSP_ASSIGN_OR_RETURN(s.attention_dropout, r.ProbabilityOr("attn_pdrop", 0.1));
  } else {
    DSP_ASSIGN_OR_RETURN(s.hidden_size, r.RequiredAnyInt({"n_embed", "hidden_size"}, 1, kMaxDim));
    DSP_ASSIGN_OR_RETURN(s.num_hidden_layers,
                         r.RequiredAnyInt({"n_layer", "num_hidden_layers"}, 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.num_attention_heads,
                         r.RequiredAnyInt({"n_head", "num_attention_heads"}, 1, kMaxCount));
    s.intermediate_size = 4 * s.hidden_size;  // BloomMLP: dense_h_to_4h, dense_4h_to_h
    DSP_ASSIGN_OR_RETURN(s.vocab_size, r.RequiredInt("vocab_size", 1, kMaxDim));
    // ALiBi: no position embedding; the trained context is the seq_length the run used.
    DSP_ASSIGN_OR_RETURN(s.max_position_embeddings, r.IntOr("seq_length", 2048, 1, kMaxDim));
    DSP_ASSIGN_OR_RETURN(s.hidden_dropout, r.ProbabilityOr("hidden_dropout", 0.0));
    DSP_ASSIGN_OR_RETURN(s.attention_dropout, r.ProbabilityOr("attention_dropout", 0.0));
    s.embedding_norm = true;
  }
  s.num_key_value_heads = s.num_attention_heads;
  if (s.hidden_size % s.num_attention_heads != 0) {
    return r.Fail(gpt2 ? "n_head" : "n_head", "(" + std::to_string(s.num_attention_heads) +
                                                  ") must divide the hidden size (" +
                                                  std::to_string(s.hidden_size) + ")");
  }
  s.head_dim = s.hidden_size / s.num_attention_heads;
  DSP_ASSIGN_OR_RETURN(s.tie_word_embeddings, r.BoolOr("tie_word_embeddings", true));
  s.gated_mlp = false;
  s.layer_norm = true;
  s.attention_bias = s.o_proj_bias = s.mlp_bias = true;
  Status status = Validate(s, r, true);
  if (!status.ok()) return status.error();
  return s;
}

Result<ModelSpec> Parse(const Json& config) {
  if (!config.is_object()) return Error{"model config: expected a JSON object (a config.json)"};
  auto type_it = config.find("model_type");
  if (type_it == config.end() || type_it->is_null()) {
    return Error{"model config: 'model_type' is missing (required)"};
  }
  if (!type_it->is_string()) {
    return Error{"model config: 'model_type' must be a string (got " + Shown(*type_it) + ")"};
  }
  ModelSpec s;
  s.model_type = type_it->get<std::string>();
  // Hugging Face model types are short identifiers; a long or odd one is not a config.json and
  // would otherwise be echoed into every message and report.
  const bool identifier = !s.model_type.empty() && s.model_type.size() <= 64 &&
                          std::all_of(s.model_type.begin(), s.model_type.end(), [](unsigned char c) {
                            return std::isalnum(c) || c == '_' || c == '-' || c == '.';
                          });
  if (!identifier) {
    return Error{"model config: 'model_type' must be a short identifier like \"llama\" (letters, digits, _ - .; "
                 "at most 64), got " + Shown(*type_it)};
  }
  Reader r(config, "model config (" + s.model_type + ")");

  std::optional<Arch> arch = KnownArch(s.model_type);
  if (!arch) {
    for (const char* key : kNonLlamaMarkers) {
      if (r.Has(key)) {
        return Error{"model config: model_type '" + s.model_type + "' is not supported: it has " +
                     Quote(key) +
                     ", so it is not a plain llama-like decoder (supported: llama, "
                     "mistral, qwen2, qwen3, mixtral, qwen2_moe, qwen3_moe, gpt2, bloom)"};
      }
    }
    s.assumed_llama_like = true;
    arch = Arch::kLlama;
  }
  if (*arch == Arch::kGpt2 || *arch == Arch::kBloom) return ParseGptStyle(std::move(s), r, *arch);
  const bool moe = *arch == Arch::kMixtral || *arch == Arch::kQwen2Moe || *arch == Arch::kQwen3Moe;
  const bool qwen_moe = *arch == Arch::kQwen2Moe || *arch == Arch::kQwen3Moe;

  DSP_ASSIGN_OR_RETURN(s.hidden_size, r.RequiredInt("hidden_size", 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.num_hidden_layers, r.RequiredInt("num_hidden_layers", 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.num_attention_heads, r.RequiredInt("num_attention_heads", 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.num_key_value_heads,
                       r.IntOr("num_key_value_heads", s.num_attention_heads, 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.vocab_size, r.RequiredInt("vocab_size", 1, kMaxDim));

  const bool head_dim_given = r.Has("head_dim") || *arch == Arch::kQwen3;
  // Qwen3Config declares head_dim = 128; every other class here falls back to hidden / heads.
  const int64_t default_head_dim =
      *arch == Arch::kQwen3 ? 128 : s.hidden_size / s.num_attention_heads;
  DSP_ASSIGN_OR_RETURN(s.head_dim,
                       r.IntOr("head_dim", std::max<int64_t>(default_head_dim, 1), 1, kMaxDim));

  // Defaults of each transformers config class; only used when the key is absent.
  int64_t default_positions = 2048;  // LlamaConfig
  if (*arch == Arch::kMistral || *arch == Arch::kMixtral) default_positions = 4096 * 32;
  if (*arch == Arch::kQwen2 || *arch == Arch::kQwen3 || qwen_moe) default_positions = 32768;
  DSP_ASSIGN_OR_RETURN(s.max_position_embeddings,
                       r.IntOr("max_position_embeddings", default_positions, 1, int64_t{1} << 40));
  DSP_ASSIGN_OR_RETURN(s.tie_word_embeddings, r.BoolOr("tie_word_embeddings", false));

  switch (*arch) {
    case Arch::kLlama: {
      bool bias = false;
      DSP_ASSIGN_OR_RETURN(bias, r.BoolOr("attention_bias", false));
      s.attention_bias = s.o_proj_bias = bias;
      DSP_ASSIGN_OR_RETURN(s.mlp_bias, r.BoolOr("mlp_bias", false));
      break;
    }
    case Arch::kQwen2:  // q/k/v always biased, o_proj never (hard-coded in Qwen2Attention)
      s.attention_bias = true;
      break;
    case Arch::kQwen2Moe:  // Qwen2MoeConfig.qkv_bias, default true; o_proj unbiased
      DSP_ASSIGN_OR_RETURN(s.attention_bias, r.BoolOr("qkv_bias", true));
      break;
    case Arch::kQwen3:
    case Arch::kQwen3Moe: {
      bool bias = false;
      DSP_ASSIGN_OR_RETURN(bias, r.BoolOr("attention_bias", false));
      s.attention_bias = s.o_proj_bias = bias;
      s.qk_norm = true;
      break;
    }
    case Arch::kMistral:
    case Arch::kMixtral: break;  // no bias options in these classes
    case Arch::kGpt2:
    case Arch::kBloom: break;  // ParseGptStyle
  }

  if (moe) {
    DSP_ASSIGN_OR_RETURN(s.num_experts, ExpertCount(r));
    DSP_ASSIGN_OR_RETURN(s.num_experts_per_tok, r.RequiredInt("num_experts_per_tok", 1, kMaxCount));
    // Mixtral always renormalises the top-k weights; the Qwen blocks make it an option.
    s.norm_topk_prob = true;
    if (qwen_moe) DSP_ASSIGN_OR_RETURN(s.norm_topk_prob, r.BoolOr("norm_topk_prob", false));
  }
  if (*arch == Arch::kMixtral) {
    // Mixtral experts are the full-width MLP; every layer is sparse.
    DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));
    s.moe_intermediate_size = s.intermediate_size;
  } else if (qwen_moe) {
    DSP_ASSIGN_OR_RETURN(s.moe_intermediate_size,
                         r.RequiredInt("moe_intermediate_size", 1, kMaxDim));
    DSP_ASSIGN_OR_RETURN(s.decoder_sparse_step, r.IntOr("decoder_sparse_step", 1, 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.mlp_only_layers, r.IntList("mlp_only_layers"));
    if (*arch == Arch::kQwen2Moe) {
      DSP_ASSIGN_OR_RETURN(s.shared_expert_intermediate_size,
                           r.RequiredInt("shared_expert_intermediate_size", 1, kMaxDim));
    }
    // intermediate_size only matters for the dense layers; when there are none the class default
    // stands in, as it would in transformers.
    const bool has_dense_layer = s.NumMoeLayers() < s.num_hidden_layers;
    const int64_t class_default = *arch == Arch::kQwen2Moe ? 5632 : 6144;
    if (has_dense_layer) {
      DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));
    } else {
      DSP_ASSIGN_OR_RETURN(s.intermediate_size,
                           r.IntOr("intermediate_size", class_default, 1, kMaxDim));
    }
  } else {
    DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));
  }

  Status status = Validate(s, r, head_dim_given);
  if (!status.ok()) return status.error();
  return s;
}

#undef DSP_ASSIGN_OR_RETURN

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
