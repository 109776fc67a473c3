// SPDX-License-Identifier: Apache-2.0
// NemotronConfig (transformers models/nemotron/configuration_nemotron.py) as modeling_nemotron.py
// builds it: llama's module names and GQA attention (q/k/v/o_proj, all biased when
// attention_bias), a non-gated MLP (NemotronMLP: down_proj(act(up_proj(x))), act = hidden_act,
// relu2 by default: ReLUSquaredActivation), NemotronLayerNorm1P norms (nn.LayerNorm with weight
// and bias, applied with weight + 1) and a rotary embedding over partial_rotary_factor of each
// head (apply_rotary_pos_emb turns the first head_dim x factor channels, default 0.5). NVIDIA's
// Nemotron-4 15B and 340B load as this (15.63B and 341.0B parameters, model_params_test.cc).
#include "core/model/config_reader.h"

namespace dsp::model_internal {

Result<ModelSpec> ParseNemotron(ModelSpec s, const Reader& r) {
  s.family = ModelFamily::kNemotron;
  bool head_dim_given = false;
  // NemotronConfig: head_dim None -> hidden / heads, max_position_embeddings 4096, untied.
  Status core = ReadDecoderCore(s, r, 0, 4096, false, &head_dim_given);
  if (!core.ok()) return core.error();
  DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.attention_bias, r.BoolOr("attention_bias", false));
  s.o_proj_bias = s.attention_bias;
  DSP_ASSIGN_OR_RETURN(s.mlp_bias, r.BoolOr("mlp_bias", false));
  DSP_ASSIGN_OR_RETURN(s.rotary_fraction, r.FractionOr("partial_rotary_factor", 0.5));
  std::string act;
  DSP_ASSIGN_OR_RETURN(act, r.StringOr("hidden_act", "relu2"));
  s.squared_relu = act == "relu2";
  s.gated_mlp = false;
  s.layer_norm = true;
  Status status = ValidateSpec(s, r, head_dim_given);
  if (!status.ok()) return status.error();
  return s;
}

}  // namespace dsp::model_internal
