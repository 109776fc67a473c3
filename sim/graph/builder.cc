// SPDX-License-Identifier: Apache-2.0
#include "sim/graph/builder.h"

#include <string>
#include <utility>
#include <vector>

#include "sim/graph/builder_internal.h"

namespace dsp::sim::graph {
namespace builder_internal {
namespace {

bool GptStyle(const ModelSpec& s) {
  return s.family == ModelFamily::kGpt2 || s.family == ModelFamily::kBloom ||
         s.family == ModelFamily::kGptNeox || s.family == ModelFamily::kFalcon;
}

std::string StripWeight(const std::string& tensor) {
  constexpr std::string_view kWeight = ".weight";
  return tensor.ends_with(kWeight) ? tensor.substr(0, tensor.size() - kWeight.size()) : tensor;
}

}  // namespace

std::string NameOf(const std::string& module, std::string_view suffix) {
  std::string name = NodeNameOfPath(module);
  if (!suffix.empty()) {
    if (!name.empty()) name += '_';
    name += suffix;
  }
  return name;
}

Graph Builder::Build() {
  Node* input_ids = Placeholder("input_ids", {kB, kS});
  Node* labels = Placeholder("labels", {kB, kS});
  position_ids_ = Placeholder("position_ids", {kB, kS});
  mask_ = Placeholder("attention_mask", {kB, 1, kS, kS});
  Node* h = Embeddings(input_ids);
  for (int64_t i = 0; i < s_.num_hidden_layers; ++i) h = Layer(h, i);
  const std::string final_norm = s_.family == ModelFamily::kGptNeox ? "gpt_neox.final_layer_norm"
                                 : GptStyle(s_)                   ? "transformer.ln_f"
                                                                  : s_.name_prefix + "norm";
  Node* normed = Norm(h, final_norm);
  const std::string head = StripWeight(s_.lm_head_name);
  const std::string head_param = s_.tie_word_embeddings ? embed_param_ : s_.lm_head_name;
  Node* logits = Op("lm_head", ops::kLinear, {normed}, head, head_param, {kB, kS, kV}, Shape{kV, kH});
  Node* loss = Op("loss", ops::kCrossEntropy, {logits, labels}, "", "", Shape{});
  g_.Append(NodeSpec{.name = "output", .op = std::string(ops::kOutput), .args = {loss}});
  return std::move(g_);
}

Node* Builder::Op(std::string name, std::string_view op, std::vector<Node*> args,
                  std::string module, std::string param, Shape shape,
                  std::optional<Shape> param_shape) {
  return g_.Append(NodeSpec{.name = std::move(name),
                            .op = std::string(op),
                            .args = std::move(args),
                            .module = std::move(module),
                            .param = std::move(param),
                            .param_shape = std::move(param_shape),
                            .shape = std::move(shape)});
}

Node* Builder::Placeholder(std::string name, Shape shape) {
  return Op(std::move(name), ops::kPlaceholder, {}, "", "", std::move(shape));
}

Node* Builder::Norm(Node* x, const std::string& module) {
  return Op(NameOf(module), s_.layer_norm ? ops::kLayerNorm : ops::kRmsNorm, {x}, module,
            module + ".weight", *x->shape, Shape{x->shape->back()});
}

Node* Builder::Linear(Node* x, const std::string& module, Shape shape,
                      const SymExpr& in_features) {
  Shape weight{shape.back(), in_features};
  return Op(NameOf(module), ops::kLinear, {x}, module, module + ".weight", std::move(shape),
            std::move(weight));
}

Node* Builder::Split(Node* x, const std::string& module, std::string_view part, Shape shape) {
  return Op(NameOf(module, part), ops::kSplit, {x}, module, "", std::move(shape));
}

Node* Builder::Elementwise(std::string_view op, const std::string& module,
                           std::string_view suffix, std::vector<Node*> args, Shape shape) {
  return Op(NameOf(module, suffix), op, std::move(args), module, "", std::move(shape));
}

std::string Builder::LayerModule(int64_t i) const {
  const std::string n = std::to_string(i);
  switch (s_.family) {
    case ModelFamily::kGpt2:
    case ModelFamily::kBloom:
    case ModelFamily::kFalcon: return "transformer.h." + n;
    case ModelFamily::kGptNeox: return "gpt_neox.layers." + n;
    default: return s_.name_prefix + "layers." + n;
  }
}

Node* Builder::Embeddings(Node* input_ids) {
  std::string embed;
  switch (s_.family) {
    case ModelFamily::kGpt2: embed = "transformer.wte"; break;
    case ModelFamily::kBloom:
    case ModelFamily::kFalcon: embed = "transformer.word_embeddings"; break;
    case ModelFamily::kGptNeox: embed = "gpt_neox.embed_in"; break;
    default: embed = s_.name_prefix + "embed_tokens"; break;
  }
  embed_param_ = embed + ".weight";
  Node* h = Op(NameOf(embed), ops::kEmbedding, {input_ids}, embed, embed_param_, {kB, kS, kH},
               Shape{kV, kH});
  if (s_.learned_positions > 0) {
    // GPT-2: hidden = wte(input_ids) + wpe(position_ids); L is the table's n_positions.
    const std::string wpe = "transformer.wpe";
    Node* pos = Op(NameOf(wpe), ops::kEmbedding, {position_ids_}, wpe, wpe + ".weight",
                   {kB, kS, kH}, Shape{SymExpr::Symbol("L"), kH});
    h = Op("embed_add", ops::kAdd, {h, pos}, "transformer", "", {kB, kS, kH});
  }
  if (s_.embedding_norm) h = Norm(h, "transformer.word_embeddings_layernorm");
  return h;
}

// Pre-norm residual blocks. GPT-NeoX and Falcon's parallel residual feed one input to both
// branches (x + attn(ln1(x)) + mlp(ln2(x)); Falcon-7B shares ln1); gemma also normalises each
// branch's output before its residual add.
Node* Builder::Layer(Node* residual, int64_t i) {
  const std::string p = LayerModule(i);
  const bool gpt2 = s_.family == ModelFamily::kGpt2;
  const bool gemma = s_.family == ModelFamily::kGemma;
  const std::string norm1 = p + (gpt2 ? ".ln_1" : s_.branch_norms ? ".ln_attn" : ".input_layernorm");
  Node* x = Norm(residual, norm1);
  Node* mixed = Mixer(x, p, i);
  if (gemma) mixed = Norm(mixed, p + ".post_attention_layernorm");
  if (s_.parallel_residual) {
    Node* mlp_in = x;
    if (s_.branch_norms) {
      mlp_in = Norm(residual, p + ".ln_mlp");
    } else if (s_.family == ModelFamily::kGptNeox) {
      mlp_in = Norm(residual, p + ".post_attention_layernorm");
    }
    Node* mlp_out = Mlp(mlp_in, p, i);
    Node* h = Elementwise(ops::kAdd, p, "residual_attn", {residual, mixed}, {kB, kS, kH});
    return Elementwise(ops::kAdd, p, "residual_mlp", {h, mlp_out}, {kB, kS, kH});
  }
  Node* h = Elementwise(ops::kAdd, p, "residual_attn", {residual, mixed}, {kB, kS, kH});
  const std::string norm2 = p + (gpt2    ? ".ln_2"
                                 : gemma ? ".pre_feedforward_layernorm"
                                         : ".post_attention_layernorm");
  Node* mlp_out = Mlp(Norm(h, norm2), p, i);
  if (gemma) mlp_out = Norm(mlp_out, p + ".post_feedforward_layernorm");
  return Elementwise(ops::kAdd, p, "residual_mlp", {h, mlp_out}, {kB, kS, kH});
}

Node* Builder::Activation(Node* x, const std::string& m, const SymExpr& width) {
  // gemma's GeGLU and the GPT MLPs use GeLU; the llama family SiLU.
  const bool gelu = s_.family == ModelFamily::kGemma || s_.gpt_style();
  const std::string_view op = s_.squared_relu ? ops::kRelu2 : gelu ? ops::kGelu : ops::kSilu;
  return Elementwise(op, m, "act_fn", {x}, {kB, kS, width});
}

Node* Builder::Mlp(Node* x, const std::string& layer, int64_t i) {
  if (s_.IsMoeLayer(i)) return Moe(x, layer);
  if (s_.gpt_style()) return GptMlp(x, layer + ".mlp");
  const std::string m = layer + (s_.family == ModelFamily::kLlama4 ? ".feed_forward" : ".mlp");
  if (!s_.gated_mlp) {  // NemotronMLP: down_proj(act(up_proj(x)))
    Node* up = Linear(x, m + ".up_proj", {kB, kS, kF}, kH);
    return Linear(Activation(up, m, kF), m + ".down_proj", {kB, kS, kH}, kF);
  }
  if (s_.fused_gate_up) return FusedGatedMlp(x, m);
  return GatedMlp(x, m, kF, "gate_proj", "up_proj", "down_proj");
}

// SwiGLU / GeGLU: down(act(gate(x)) * up(x)).
Node* Builder::GatedMlp(Node* x, const std::string& m, const SymExpr& width, const char* gate,
                        const char* up, const char* down) {
  Node* g = Linear(x, m + "." + gate, {kB, kS, width}, kH);
  Node* u = Linear(x, m + "." + up, {kB, kS, width}, kH);
  Node* act = Activation(g, m, width);
  Node* prod = Elementwise(ops::kMul, m, "mul", {act, u}, {kB, kS, width});
  return Linear(prod, m + "." + down, {kB, kS, kH}, width);
}

// Phi-3: gate_up_proj emits gate and up side by side (Phi3MLP chunks it in two).
Node* Builder::FusedGatedMlp(Node* x, const std::string& m) {
  Node* gate_up = Linear(x, m + ".gate_up_proj", {kB, kS, 2 * kF}, kH);
  Node* g = Split(gate_up, m, "gate", {kB, kS, kF});
  Node* u = Split(gate_up, m, "up", {kB, kS, kF});
  Node* act = Activation(g, m, kF);
  Node* prod = Elementwise(ops::kMul, m, "mul", {act, u}, {kB, kS, kF});
  return Linear(prod, m + ".down_proj", {kB, kS, kH}, kF);
}

// fc -> GeLU -> proj: GPT-2's c_fc/c_proj, BLOOM/NeoX/Falcon's dense_h_to_4h/dense_4h_to_h.
Node* Builder::GptMlp(Node* x, const std::string& m) {
  const bool gpt2 = s_.family == ModelFamily::kGpt2;
  Node* fc = Linear(x, m + (gpt2 ? ".c_fc" : ".dense_h_to_4h"), {kB, kS, kF}, kH);
  Node* act = Activation(fc, m, kF);
  return Linear(act, m + (gpt2 ? ".c_proj" : ".dense_4h_to_h"), {kB, kS, kH}, kF);
}

Node* Builder::Moe(Node* x, const std::string& layer) {
  const bool llama4 = s_.family == ModelFamily::kLlama4;
  const bool gpt_oss = s_.family == ModelFamily::kGptOss;
  const std::string m = layer + (s_.UsesMixtralNaming() ? ".block_sparse_moe"
                                 : llama4               ? ".feed_forward"
                                                        : ".mlp");
  // gpt_oss and llama4 name the scorer `router`, every other family `gate`.
  const std::string router = m + (llama4 || gpt_oss ? ".router" : ".gate");
  Node* logits = Op(NameOf(router), ops::kRouter, {x}, router, router + ".weight", {kB * kS, kE},
                    Shape{kE, kH});
  // deepseek_v3 (noaux_tc) adds gate.e_score_correction_bias to the scores it picks from.
  const bool score_bias = s_.router_score_bias;
  Node* topk = Op(NameOf(m, "top_k"), ops::kTopK, {logits}, m,
                  score_bias ? router + ".e_score_correction_bias" : "", {kB * kS, kK},
                  score_bias ? std::optional<Shape>(Shape{kE}) : std::nullopt);
  // One node for all routed experts of the layer: the passes split it by expert group, and a
  // per-expert node would multiply the graph by E (256 for DeepSeek-V3) for no information. The
  // param is a glob over the layer's expert tensors (per expert, or the fused [E, ...] tensors
  // of gpt_oss, llama4 and qwen3_5_moe), its shape E experts of three FE x H matrices (gate, up
  // and down; w1, w3 and w2 in Mixtral).
  const std::string experts = m + ".experts";
  Node* out = Op(NameOf(experts), ops::kExperts, {x, topk}, experts, experts + ".*", {kB, kS, kH},
                 Shape{kE, SymExpr(3), kFE, kH});
  if (s_.shared_expert_intermediate_size > 0) {
    // qwen: shared_expert (scaled by sigmoid(shared_expert_gate(x))); deepseek: shared_experts;
    // llama4: shared_expert. Every token runs it.
    const std::string shared =
        m + (s_.family == ModelFamily::kDeepSeek ? ".shared_experts" : ".shared_expert");
    Node* se = GatedMlp(x, shared, kFS, "gate_proj", "up_proj", "down_proj");
    if (s_.shared_expert_gate) {
      Node* gate = Linear(x, m + ".shared_expert_gate", {kB, kS, 1}, kH);
      Node* sig = Elementwise(ops::kSigmoid, m, "shared_expert_sigmoid", {gate}, {kB, kS, 1});
      se = Elementwise(ops::kMul, m, "shared_expert_scale", {sig, se}, {kB, kS, kH});
    }
    out = Elementwise(ops::kAdd, m, "add", {out, se}, {kB, kS, kH});
  }
  return out;
}

}  // namespace builder_internal

Result<Graph> BuildModelGraph(const ModelSpec& spec) {
  if (spec.num_hidden_layers <= 0 || spec.hidden_size <= 0 || spec.num_attention_heads <= 0) {
    return Error{"model has no layers, hidden size or attention heads to build a graph from"};
  }
  return builder_internal::Builder(spec).Build();
}

void BindTensorParallelHeads(const ModelSpec& spec, int64_t tp, SymbolValues& values) {
  const int64_t kv = spec.num_key_value_heads;
  if (tp < 1 || kv <= 0) return;
  const int64_t g0 = kv / tp + (kv % tp != 0 ? 1 : 0);
  const int64_t n0 = g0 * (spec.num_attention_heads / kv);
  values["G0"] = g0;
  values["N0"] = n0;
  values["QKV0"] = (n0 + 2 * g0) * spec.head_dim;
}

SymbolValues ModelSymbolValues(const ModelSpec& spec, int64_t batch, int64_t seq) {
  const int64_t qk = spec.qk_head_dim();
  const int64_t key = spec.linear_num_key_heads * spec.linear_key_head_dim;
  const int64_t value = spec.linear_num_value_heads * spec.linear_value_head_dim;
  return SymbolValues{
      {"B", batch},
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
      {"V", spec.vocab_size},
      {"L", spec.learned_positions},
      {"QKV", (spec.num_attention_heads + 2 * spec.num_key_value_heads) * spec.head_dim},
      // MLA
      {"QL", spec.q_lora_rank},
      {"KL", spec.kv_lora_rank},
      {"DQ", qk},
      {"DN", spec.qk_nope_head_dim},
      {"DR", spec.qk_rope_head_dim},
      {"DV", spec.value_head_dim()},
      {"KLR", spec.kv_lora_rank + spec.qk_rope_head_dim},
      {"DKV", spec.qk_nope_head_dim + spec.v_head_dim},
      // Gated DeltaNet
      {"LK", spec.linear_num_key_heads},
      {"LKD", spec.linear_key_head_dim},
      {"LV", spec.linear_num_value_heads},
      {"LVD", spec.linear_value_head_dim},
      {"LC", 2 * key + value},
      {"LQKVZ", 2 * key + 2 * value},
      {"KC", spec.linear_conv_kernel_dim},
  };
}

}  // namespace dsp::sim::graph
