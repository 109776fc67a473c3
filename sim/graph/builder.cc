// SPDX-License-Identifier: Apache-2.0
#include "sim/graph/builder.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dsp::sim::graph {

namespace {

const SymExpr kB = SymExpr::Symbol("B");
const SymExpr kS = SymExpr::Symbol("S");
const SymExpr kH = SymExpr::Symbol("H");
const SymExpr kN = SymExpr::Symbol("N");
const SymExpr kG = SymExpr::Symbol("G");
const SymExpr kD = SymExpr::Symbol("D");
const SymExpr kF = SymExpr::Symbol("F");
const SymExpr kFE = SymExpr::Symbol("FE");
const SymExpr kFS = SymExpr::Symbol("FS");
const SymExpr kE = SymExpr::Symbol("E");
const SymExpr kK = SymExpr::Symbol("K");
const SymExpr kV = SymExpr::Symbol("V");

// Node names follow the module path the way torch.fx names HF modules ("model.layers.3.mlp" ->
// "layers_3_mlp"), so they are stable across builds and readable in dumps.
std::string NameOf(const std::string& module, std::string_view suffix = {}) {
  std::string_view path = module;
  if (path.starts_with("model.")) path.remove_prefix(6);
  std::string name(path);
  for (char& c : name) {
    if (c == '.') c = '_';
  }
  if (!suffix.empty()) {
    if (!name.empty()) name += '_';
    name += suffix;
  }
  return name;
}

class Builder {
 public:
  explicit Builder(const ModelSpec& spec) : s_(spec) {}

  Graph Build() {
    Node* input_ids = Placeholder("input_ids", {kB, kS});
    Node* labels = Placeholder("labels", {kB, kS});
    position_ids_ = Placeholder("position_ids", {kB, kS});
    mask_ = Placeholder("attention_mask", {kB, 1, kS, kS});
    const std::string embed = "model.embed_tokens";
    Node* h = Op(NameOf(embed), ops::kEmbedding, {input_ids}, embed, embed + ".weight",
                 {kB, kS, kH}, Shape{kV, kH});
    for (int64_t i = 0; i < s_.num_hidden_layers; ++i) h = Layer(h, i);
    Node* normed = Norm(h, "model.norm");
    const std::string head_param =
        s_.tie_word_embeddings ? embed + ".weight" : std::string("lm_head.weight");
    Node* logits =
        Op("lm_head", ops::kLinear, {normed}, "lm_head", head_param, {kB, kS, kV}, Shape{kV, kH});
    Node* loss = Op("loss", ops::kCrossEntropy, {logits, labels}, "", "", Shape{});
    g_.Append(NodeSpec{.name = "output", .op = std::string(ops::kOutput), .args = {loss}});
    return std::move(g_);
  }

 private:
  Node* Op(std::string name, std::string_view op, std::vector<Node*> args, std::string module,
           std::string param, Shape shape, std::optional<Shape> param_shape = std::nullopt) {
    return g_.Append(NodeSpec{.name = std::move(name),
                              .op = std::string(op),
                              .args = std::move(args),
                              .module = std::move(module),
                              .param = std::move(param),
                              .param_shape = std::move(param_shape),
                              .shape = std::move(shape)});
  }

  Node* Placeholder(std::string name, Shape shape) {
    return Op(std::move(name), ops::kPlaceholder, {}, "", "", std::move(shape));
  }

  Node* Norm(Node* x, const std::string& module) {
    return Op(NameOf(module), ops::kRmsNorm, {x}, module, module + ".weight", *x->shape,
              Shape{x->shape->back()});
  }

  // The weight is [out_features, in_features], as torch.nn.Linear stores it.
  Node* Linear(Node* x, const std::string& module, Shape shape, const SymExpr& in_features) {
    Shape weight{shape.back(), in_features};
    return Op(NameOf(module), ops::kLinear, {x}, module, module + ".weight", std::move(shape),
              std::move(weight));
  }

  Node* Layer(Node* residual, int64_t i) {
    const std::string p = "model.layers." + std::to_string(i);
    const std::string attn = p + ".self_attn";
    Node* x = Norm(residual, p + ".input_layernorm");
    Node* q = Linear(x, attn + ".q_proj", {kB, kS, kN * kD}, kH);
    Node* k = Linear(x, attn + ".k_proj", {kB, kS, kG * kD}, kH);
    Node* v = Linear(x, attn + ".v_proj", {kB, kS, kG * kD}, kH);
    if (s_.qk_norm) {
      // qwen3 normalises each head before rotary; the head split happens here.
      q = Op(NameOf(attn + ".q_norm"), ops::kRmsNorm, {q}, attn + ".q_norm",
             attn + ".q_norm.weight", {kB, kN, kS, kD}, Shape{kD});
      k = Op(NameOf(attn + ".k_norm"), ops::kRmsNorm, {k}, attn + ".k_norm",
             attn + ".k_norm.weight", {kB, kG, kS, kD}, Shape{kD});
    }
    q = Op(NameOf(attn, "rotary_q"), ops::kRotary, {q, position_ids_}, attn, "", {kB, kN, kS, kD});
    k = Op(NameOf(attn, "rotary_k"), ops::kRotary, {k, position_ids_}, attn, "", {kB, kG, kS, kD});
    Node* a = Op(NameOf(attn, "sdpa"), ops::kSdpa, {q, k, v, mask_}, attn, "", {kB, kN, kS, kD});
    Node* o = Linear(a, attn + ".o_proj", {kB, kS, kH}, kN * kD);
    Node* h = Op(NameOf(p, "residual_attn"), ops::kAdd, {residual, o}, p, "", {kB, kS, kH});

    x = Norm(h, p + ".post_attention_layernorm");
    Node* mlp_out = nullptr;
    if (!s_.IsMoeLayer(i)) {
      mlp_out = GatedMlp(x, p + ".mlp", kF, "gate_proj", "up_proj", "down_proj");
    } else {
      mlp_out = Moe(x, p);
    }
    return Op(NameOf(p, "residual_mlp"), ops::kAdd, {h, mlp_out}, p, "", {kB, kS, kH});
  }

  // SwiGLU: down(silu(gate(x)) * up(x)).
  Node* GatedMlp(Node* x, const std::string& m, const SymExpr& width, const char* gate,
                 const char* up, const char* down) {
    Node* g = Linear(x, m + "." + gate, {kB, kS, width}, kH);
    Node* u = Linear(x, m + "." + up, {kB, kS, width}, kH);
    Node* act = Op(NameOf(m, "act_fn"), ops::kSilu, {g}, m, "", {kB, kS, width});
    Node* prod = Op(NameOf(m, "mul"), ops::kMul, {act, u}, m, "", {kB, kS, width});
    return Linear(prod, m + "." + down, {kB, kS, kH}, width);
  }

  Node* Moe(Node* x, const std::string& p) {
    const std::string m = p + (s_.UsesMixtralNaming() ? ".block_sparse_moe" : ".mlp");
    Node* logits = Op(NameOf(m + ".gate"), ops::kRouter, {x}, m + ".gate", m + ".gate.weight",
                      {kB * kS, kE}, Shape{kE, kH});
    Node* topk = Op(NameOf(m, "top_k"), ops::kTopK, {logits}, m, "", {kB * kS, kK});
    // One node for all routed experts of the layer: the passes split it by expert group, and a
    // per-expert node would multiply the graph by E (128 for qwen3-30b) for no information. The
    // param is a glob over the per-expert tensors, its shape E experts of three FE x H matrices
    // (gate, up and down; w1, w3 and w2 in Mixtral).
    const std::string experts = m + ".experts";
    Node* out = Op(NameOf(experts), ops::kExperts, {x, topk}, experts, experts + ".*",
                   {kB, kS, kH}, Shape{kE, SymExpr(3), kFE, kH});
    if (s_.shared_expert_intermediate_size > 0) {
      // qwen2_moe: out += sigmoid(shared_expert_gate(x)) * shared_expert(x).
      const std::string shared = m + ".shared_expert";
      Node* se = GatedMlp(x, shared, kFS, "gate_proj", "up_proj", "down_proj");
      Node* gate = Linear(x, m + ".shared_expert_gate", {kB, kS, 1}, kH);
      Node* sig = Op(NameOf(m, "shared_expert_sigmoid"), ops::kSigmoid, {gate}, m, "",
                     {kB, kS, 1});
      Node* scaled = Op(NameOf(m, "shared_expert_scale"), ops::kMul, {sig, se}, m, "",
                        {kB, kS, kH});
      out = Op(NameOf(m, "add"), ops::kAdd, {out, scaled}, m, "", {kB, kS, kH});
    }
    return out;
  }

  const ModelSpec& s_;
  Graph g_;
  Node* position_ids_ = nullptr;
  Node* mask_ = nullptr;
};

}  // namespace

Result<Graph> BuildModelGraph(const ModelSpec& spec) {
  if (spec.num_hidden_layers <= 0 || spec.hidden_size <= 0 || spec.num_attention_heads <= 0) {
    return Error{"model has no layers, hidden size or attention heads to build a graph from"};
  }
  // The graph mirrors the llama-family modules (RMSNorm, rotary, q/k/v projections, SwiGLU or a
  // routed MoE block); drawing MLA, Gated DeltaNet, fused projections, gemma's four norms or a
  // GPT block with those would be wrong, so say so instead (simulate and tune support them).
  if (spec.family != ModelFamily::kLlama || spec.fused_qkv || spec.fused_gate_up) {
    return Error{"model_type '" + spec.model_type +
                 "' has no graph view yet (visualize graph draws llama, mistral, qwen2/3, mixtral "
                 "and qwen2/3 MoE decoders); simulate and tune support it"};
  }
  return Builder(spec).Build();
}

SymbolValues ModelSymbolValues(const ModelSpec& spec, int64_t batch, int64_t seq) {
  return SymbolValues{{"B", batch},
                      {"S", seq},
                      {"H", spec.hidden_size},
                      {"N", spec.num_attention_heads},
                      {"G", spec.num_key_value_heads},
                      {"D", spec.head_dim},
                      {"F", spec.intermediate_size},
                      {"FE", spec.moe_intermediate_size},
                      {"FS", spec.shared_expert_intermediate_size},
                      {"E", spec.num_experts},
                      {"K", spec.num_experts_per_tok},
                      {"V", spec.vocab_size}};
}

}  // namespace dsp::sim::graph
