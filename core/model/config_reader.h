// SPDX-License-Identifier: Apache-2.0
// Internal to core/model: reads config.json keys the way transformers' config classes do, with
// errors that name the key; shared by the per-family parsers (parse_*.cc).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/document.h"
#include "core/model/model_spec.h"
#include "core/util/result.h"

namespace dsp::model_internal {

// Sizes past these are not models but typos (or overflow bait); they also keep every product in
// CountParameters inside int64_t together with the total check at the end of ParseHfConfig.
inline constexpr int64_t kMaxDim = int64_t{1} << 24;    // hidden, ffn, vocab, head_dim, positions: 16M
inline constexpr int64_t kMaxCount = int64_t{1} << 16;  // layers, heads, experts: 65,536
inline constexpr long double kMaxTotalParams = 1e16L;   // 10 quadrillion; far beyond any real model

inline std::string Quote(std::string_view key) { return "'" + std::string(key) + "'"; }

inline std::string Shown(const Json& value) {
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

  // The raw value of `key`, or nullptr when absent or null.
  const Json* Find(std::string_view key) const {
    auto it = config_.find(key);
    return it == config_.end() || it->is_null() ? nullptr : &*it;
  }

  const std::string& context() const { return context_; }

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

  // A share in (0, 1] (partial_rotary_factor); `fallback` when absent.
  Result<double> FractionOr(std::string_view key, double fallback) const {
    auto it = config_.find(key);
    if (it == config_.end() || it->is_null()) return fallback;
    if (!it->is_number()) return Fail(key, "must be a number (got " + Shown(*it) + ")");
    const double v = it->get<double>();
    if (!(v > 0.0 && v <= 1.0)) return Fail(key, "must be in (0, 1] (got " + Shown(*it) + ")");
    return v;
  }

  // A string; `fallback` when absent.
  Result<std::string> StringOr(std::string_view key, std::string fallback) const {
    auto it = config_.find(key);
    if (it == config_.end() || it->is_null()) return fallback;
    if (!it->is_string()) return Fail(key, "must be a string (got " + Shown(*it) + ")");
    return it->get<std::string>();
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

// Propagates an Error out of the enclosing function returning Result<T>.
#define DSP_ASSIGN_OR_RETURN(lhs, expr)                \
  do {                                                 \
    auto dsp_result_ = (expr);                         \
    if (!dsp_result_.ok()) return dsp_result_.error(); \
    lhs = std::move(*dsp_result_);                     \
  } while (false)

// The number of routed experts under any of its spellings (num_local_experts, num_experts,
// n_routed_experts), which must agree.
Result<int64_t> ExpertCount(const Reader& r);

// Shape checks shared by every family and the order-of-magnitude guard that keeps every int64_t
// product in CountParameters from overflowing.
Status ValidateSpec(const ModelSpec& s, const Reader& r, bool head_dim_given);

// The keys every llama-like decoder shares: hidden_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads (default: the head count), vocab_size, head_dim (default_head_dim, or
// hidden / heads when that is 0), vocab_size (required unless default_vocab > 0),
// max_position_embeddings and tie_word_embeddings (class
// defaults given). Sets *head_dim_given for ValidateSpec.
Status ReadDecoderCore(ModelSpec& s, const Reader& r, int64_t default_head_dim,
                       int64_t default_positions, bool default_tie, bool* head_dim_given,
                       int64_t default_vocab = 0);

// One parser per family; each receives the spec with model_type set.
Result<ModelSpec> ParseLlamaFamily(ModelSpec s, const Reader& r);
Result<ModelSpec> ParseGptFamily(ModelSpec s, const Reader& r);
Result<ModelSpec> ParseDeepSeek(ModelSpec s, const Reader& r);
Result<ModelSpec> ParseGlm4Moe(ModelSpec s, const Reader& r);
Result<ModelSpec> ParseGptOss(ModelSpec s, const Reader& r);
Result<ModelSpec> ParseLlama4(ModelSpec s, const Reader& r);
Result<ModelSpec> ParseQwenNext(ModelSpec s, const Reader& r);
Result<ModelSpec> ParseGemma(ModelSpec s, const Reader& r);
Result<ModelSpec> ParseNemotron(ModelSpec s, const Reader& r);

// layer_types as a list of attention kinds ("full_attention", "sliding_attention",
// "linear_attention", "chunked_attention"); empty when the key is absent. Its length must be
// num_hidden_layers.
Result<std::vector<AttentionKind>> LayerTypes(const Reader& r, int64_t layers);

}  // namespace dsp::model_internal
