// SPDX-License-Identifier: Apache-2.0
// GPT-style decoders (LayerNorm with biases, GeLU MLP): gpt2, bloom, gpt_neox, falcon. Defaults
// and attribute_map aliases follow each transformers configuration_<type>.py.
#include <optional>
#include <string>
#include <utility>

#include "core/model/config_reader.h"

namespace dsp::model_internal {
namespace {

// GPT2Config and BloomConfig (transformers): a LayerNorm decoder with biased linears, a GeLU MLP
// (gpt2: n_inner, default 4h; bloom: always 4h), tied embeddings by default, learned positions
// (gpt2 n_positions) or ALiBi (bloom). Both accept their attribute_map aliases (hidden_size for
// n_embd, ...).
Result<ModelSpec> ParseGpt2OrBloom(ModelSpec s, const Reader& r) {
  const bool gpt2 = s.model_type == "gpt2";
  s.family = gpt2 ? ModelFamily::kGpt2 : ModelFamily::kBloom;
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
    return r.Fail("n_head", "(" + std::to_string(s.num_attention_heads) +
                                                  ") must divide the hidden size (" +
                                                  std::to_string(s.hidden_size) + ")");
  }
  s.head_dim = s.hidden_size / s.num_attention_heads;
  DSP_ASSIGN_OR_RETURN(s.tie_word_embeddings, r.BoolOr("tie_word_embeddings", true));
  s.gated_mlp = false;
  s.layer_norm = true;
  s.attention_bias = s.o_proj_bias = s.mlp_bias = true;
  Status status = ValidateSpec(s, r, true);
  if (!status.ok()) return status.error();
  return s;
}

void SetGptStyle(ModelSpec& s) {
  s.gated_mlp = false;
  s.layer_norm = true;
}

// GPTNeoXConfig: fused query_key_value (3h), parallel residual by default, rotary over rotary_pct
// of each head, untied embed_out; attention_bias (default true) biases query_key_value and dense.
Result<ModelSpec> ParseGptNeox(ModelSpec s, const Reader& r) {
  s.family = ModelFamily::kGptNeox;
  DSP_ASSIGN_OR_RETURN(s.hidden_size, r.RequiredInt("hidden_size", 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.num_hidden_layers, r.RequiredInt("num_hidden_layers", 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.num_attention_heads, r.RequiredInt("num_attention_heads", 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.vocab_size, r.RequiredInt("vocab_size", 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.max_position_embeddings,
                       r.IntOr("max_position_embeddings", 2048, 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.tie_word_embeddings, r.BoolOr("tie_word_embeddings", false));
  DSP_ASSIGN_OR_RETURN(s.parallel_residual, r.BoolOr("use_parallel_residual", true));
  DSP_ASSIGN_OR_RETURN(s.attention_bias, r.BoolOr("attention_bias", true));
  s.o_proj_bias = s.attention_bias;
  s.mlp_bias = true;
  DSP_ASSIGN_OR_RETURN(s.hidden_dropout, r.ProbabilityOr("hidden_dropout", 0.0));
  DSP_ASSIGN_OR_RETURN(s.attention_dropout, r.ProbabilityOr("attention_dropout", 0.0));
  if (s.hidden_size % s.num_attention_heads != 0) {
    return r.Fail("num_attention_heads", "(" + std::to_string(s.num_attention_heads) +
                                             ") must divide 'hidden_size' (" +
                                             std::to_string(s.hidden_size) + ")");
  }
  s.num_key_value_heads = s.num_attention_heads;
  s.head_dim = s.hidden_size / s.num_attention_heads;
  s.lm_head_name = "embed_out.weight";
  SetGptStyle(s);
  Status status = ValidateSpec(s, r, true);
  if (!status.ok()) return status.error();
  return s;
}

// FalconConfig (n_layer/n_head aliases): query_key_value holds (heads + 2 kv) x head_dim rows
// under new_decoder_architecture, h + 2 head_dim under multi_query, 3h otherwise
// (FalconAttention.__init__); parallel_attn shares one input norm (two, ln_attn and ln_mlp, when
// num_ln_in_parallel_attn is 2, its default with new_decoder_architecture); `bias` biases every
// linear; ffn_hidden_size defaults to 4h; embeddings tied by default.
Result<ModelSpec> ParseFalcon(ModelSpec s, const Reader& r) {
  s.family = ModelFamily::kFalcon;
  DSP_ASSIGN_OR_RETURN(s.hidden_size, r.RequiredInt("hidden_size", 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.num_hidden_layers,
                       r.RequiredAnyInt({"num_hidden_layers", "n_layer"}, 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.num_attention_heads,
                       r.RequiredAnyInt({"num_attention_heads", "n_head"}, 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.vocab_size, r.RequiredInt("vocab_size", 1, kMaxDim));
  if (s.hidden_size % s.num_attention_heads != 0) {
    return r.Fail("num_attention_heads", "(" + std::to_string(s.num_attention_heads) +
                                             ") must divide 'hidden_size' (" +
                                             std::to_string(s.hidden_size) + ")");
  }
  s.head_dim = s.hidden_size / s.num_attention_heads;
  bool new_arch = false, multi_query = true;
  DSP_ASSIGN_OR_RETURN(new_arch, r.BoolOr("new_decoder_architecture", false));
  DSP_ASSIGN_OR_RETURN(multi_query, r.BoolOr("multi_query", true));
  int64_t kv = 0;
  DSP_ASSIGN_OR_RETURN(kv, r.IntOr("num_kv_heads", s.num_attention_heads, 1, kMaxCount));
  if (new_arch) {
    s.num_key_value_heads = kv;
  } else {
    s.num_key_value_heads = multi_query ? 1 : s.num_attention_heads;
  }
  DSP_ASSIGN_OR_RETURN(s.parallel_residual, r.BoolOr("parallel_attn", true));
  std::optional<int64_t> branch_norms;
  DSP_ASSIGN_OR_RETURN(branch_norms, r.Int("num_ln_in_parallel_attn", 1, 2));
  s.branch_norms = s.parallel_residual && branch_norms.value_or(new_arch ? 2 : 1) == 2;
  DSP_ASSIGN_OR_RETURN(s.attention_bias, r.BoolOr("bias", false));
  s.o_proj_bias = s.mlp_bias = s.attention_bias;
  DSP_ASSIGN_OR_RETURN(s.alibi, r.BoolOr("alibi", false));
  DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.IntOr("ffn_hidden_size", 4 * s.hidden_size, 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.max_position_embeddings,
                       r.IntOr("max_position_embeddings", 2048, 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.tie_word_embeddings, r.BoolOr("tie_word_embeddings", true));
  DSP_ASSIGN_OR_RETURN(s.hidden_dropout, r.ProbabilityOr("hidden_dropout", 0.0));
  DSP_ASSIGN_OR_RETURN(s.attention_dropout, r.ProbabilityOr("attention_dropout", 0.0));
  SetGptStyle(s);
  Status status = ValidateSpec(s, r, true);
  if (!status.ok()) return status.error();
  return s;
}

}  // namespace

Result<ModelSpec> ParseGptFamily(ModelSpec s, const Reader& r) {
  if (s.model_type == "gpt_neox") return ParseGptNeox(std::move(s), r);
  if (s.model_type == "falcon") return ParseFalcon(std::move(s), r);
  return ParseGpt2OrBloom(std::move(s), r);
}

}  // namespace dsp::model_internal
