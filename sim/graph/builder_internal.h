// SPDX-License-Identifier: Apache-2.0
// Internal to sim/graph: the builder's state and its block helpers, split over builder.cc (the
// model skeleton, embeddings, norms, MLPs and MoE blocks) and builder_attention.cc (the token
// mixers: multi-head, fused-qkv and gated attention, MLA, Gated DeltaNet).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/model_spec.h"
#include "sim/graph/graph.h"
#include "sim/graph/symbolic.h"

namespace dsp::sim::graph::builder_internal {

inline const SymExpr kB = SymExpr::Symbol("B");
inline const SymExpr kS = SymExpr::Symbol("S");
inline const SymExpr kH = SymExpr::Symbol("H");
inline const SymExpr kN = SymExpr::Symbol("N");
inline const SymExpr kG = SymExpr::Symbol("G");
inline const SymExpr kD = SymExpr::Symbol("D");
inline const SymExpr kF = SymExpr::Symbol("F");
inline const SymExpr kFE = SymExpr::Symbol("FE");
inline const SymExpr kFS = SymExpr::Symbol("FS");
inline const SymExpr kE = SymExpr::Symbol("E");
inline const SymExpr kK = SymExpr::Symbol("K");
inline const SymExpr kV = SymExpr::Symbol("V");

// "model.layers.3.mlp" -> "layers_3_mlp" (torch.fx's naming of HF modules, without the
// leading "model."), plus "_suffix".
std::string NameOf(const std::string& module, std::string_view suffix = {});

class Builder {
 public:
  explicit Builder(const ModelSpec& spec) : s_(spec) {}
  Graph Build();

 private:
  // ---- node helpers (builder.cc)
  Node* Op(std::string name, std::string_view op, std::vector<Node*> args, std::string module,
           std::string param, Shape shape, std::optional<Shape> param_shape = std::nullopt);
  Node* Placeholder(std::string name, Shape shape);
  // rms_norm, or layer_norm for GPT-style models; the weight is [width].
  Node* Norm(Node* x, const std::string& module);
  // The weight is [out_features, in_features], as torch.nn.Linear stores it (GPT-2's Conv1D
  // stores the transpose; the graph keeps one convention so the passes split one dimension).
  Node* Linear(Node* x, const std::string& module, Shape shape, const SymExpr& in_features);
  // One slice of a fused output (qkv, gate_up, the latent kv): `split`, no parameter.
  Node* Split(Node* x, const std::string& module, std::string_view part, Shape shape);
  Node* Elementwise(std::string_view op, const std::string& module, std::string_view suffix,
                    std::vector<Node*> args, Shape shape);

  // ---- the decoder (builder.cc)
  std::string LayerModule(int64_t i) const;
  Node* Embeddings(Node* input_ids);
  Node* Layer(Node* residual, int64_t i);
  Node* Mlp(Node* x, const std::string& layer, int64_t i);
  Node* GatedMlp(Node* x, const std::string& m, const SymExpr& width, const char* gate,
                 const char* up, const char* down);
  Node* FusedGatedMlp(Node* x, const std::string& m);
  Node* GptMlp(Node* x, const std::string& m);
  Node* Moe(Node* x, const std::string& layer);
  Node* Activation(Node* x, const std::string& m, const SymExpr& width);

  // ---- token mixers (builder_attention.cc)
  Node* Mixer(Node* x, const std::string& layer, int64_t i);
  Node* Attention(Node* x, const std::string& a, int64_t i);
  Node* LatentAttention(Node* x, const std::string& a, int64_t i);
  Node* GatedDeltaNet(Node* x, const std::string& a);
  Node* Sdpa(const std::string& a, int64_t i, Node* q, Node* k, Node* v, Shape shape);
  std::string AttentionModule(const std::string& layer) const;
  // The fused qkv width: 3*N*D when every head has its own K/V, else the symbol QKV.
  SymExpr FusedQkvWidth() const;

  const ModelSpec& s_;
  Graph g_;
  Node* position_ids_ = nullptr;
  Node* mask_ = nullptr;
  std::string embed_param_;  // the embedding weight (a tied lm_head reads it)
};

}  // namespace dsp::sim::graph::builder_internal
