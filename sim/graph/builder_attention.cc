// SPDX-License-Identifier: Apache-2.0
// The token mixers of the graph builder, one per attention design, named and shaped as the
// transformers modules compute them (modeling_<type>.py): multi-head / grouped-query attention
// with separate or fused q/k/v (phi3 qkv_proj, GPT-2 c_attn, BLOOM/NeoX/Falcon query_key_value),
// qwen3_next's output gate, gpt_oss's sinks, DeepSeek's multi-head latent attention and
// qwen3_next / qwen3_5's Gated DeltaNet.
#include <string>

#include "sim/graph/builder_internal.h"

namespace dsp::sim::graph::builder_internal {
namespace {

SymExpr Sym(const char* name) { return SymExpr::Symbol(name); }

}  // namespace

std::string Builder::AttentionModule(const std::string& layer) const {
  switch (s_.family) {
    case ModelFamily::kGpt2: return layer + ".attn";
    case ModelFamily::kBloom:
    case ModelFamily::kFalcon: return layer + ".self_attention";
    case ModelFamily::kGptNeox: return layer + ".attention";
    default: return layer + ".self_attn";
  }
}

SymExpr Builder::FusedQkvWidth() const {
  if (s_.num_key_value_heads == s_.num_attention_heads) return 3 * kN * kD;
  return Sym("QKV");  // (N + 2G) * D: sums are not shapes the IR represents
}

Node* Builder::Mixer(Node* x, const std::string& layer, int64_t i) {
  if (s_.LayerAttention(i) == AttentionKind::kLinear) return GatedDeltaNet(x, layer + ".linear_attn");
  if (s_.mla()) return LatentAttention(x, AttentionModule(layer), i);
  return Attention(x, AttentionModule(layer), i);
}

// sdpa(q, k, v, mask); a sliding or chunked layer records the keys each query sees, and
// gpt_oss's sdpa reads the per-head sinks that join its softmax.
Node* Builder::Sdpa(const std::string& a, int64_t i, Node* q, Node* k, Node* v, Shape shape) {
  const bool sinks = s_.attention_sinks;
  Node* n = Op(NameOf(a, "sdpa"), ops::kSdpa, {q, k, v, mask_}, a, sinks ? a + ".sinks" : "",
               std::move(shape), sinks ? std::optional<Shape>(Shape{kN}) : std::nullopt);
  const AttentionKind kind = s_.LayerAttention(i);
  if (kind == AttentionKind::kSliding && s_.sliding_window > 0) n->window = s_.sliding_window;
  if (kind == AttentionKind::kChunked && s_.attention_chunk_size > 0) n->chunk = s_.attention_chunk_size;
  return n;
}

Node* Builder::Attention(Node* x, const std::string& a, int64_t i) {
  const bool gpt2 = s_.family == ModelFamily::kGpt2;
  const bool fused = s_.fused_qkv || s_.gpt_style();
  // llama4's full-attention layers are NoPE; GPT-2 learns positions, BLOOM (and Falcon with
  // alibi) biases the scores.
  const bool rope = s_.rotary() && !(s_.family == ModelFamily::kLlama4 &&
                                     s_.LayerAttention(i) == AttentionKind::kFull);
  Node *q = nullptr, *k = nullptr, *v = nullptr, *gate = nullptr;
  if (fused) {
    const char* leaf = gpt2 ? ".c_attn" : s_.gpt_style() ? ".query_key_value" : ".qkv_proj";
    Node* qkv = Linear(x, a + leaf, {kB, kS, FusedQkvWidth()}, kH);
    // Without rotary the heads split right here, as the consumer (sdpa) sees them.
    q = Split(qkv, a, "q", rope ? Shape{kB, kS, kN * kD} : Shape{kB, kN, kS, kD});
    k = Split(qkv, a, "k", rope ? Shape{kB, kS, kG * kD} : Shape{kB, kG, kS, kD});
    v = Split(qkv, a, "v", {kB, kS, kG * kD});
  } else {
    const bool gated = s_.attention_output_gate;
    q = Linear(x, a + ".q_proj", {kB, kS, (gated ? 2 : 1) * kN * kD}, kH);
    if (gated) {
      // Qwen3NextAttention: q_proj's per-head halves are the query and a sigmoid output gate.
      Node* both = q;
      q = Split(both, a, "q", {kB, kS, kN * kD});
      gate = Split(both, a, "gate", {kB, kS, kN * kD});
    }
    k = Linear(x, a + ".k_proj", {kB, kS, kG * kD}, kH);
    v = Linear(x, a + ".v_proj", {kB, kS, kG * kD}, kH);
  }
  if (s_.qk_norm) {
    // qwen3, gemma3, qwen3_next normalise each head before rotary; the head split happens here.
    q = Op(NameOf(a + ".q_norm"), ops::kRmsNorm, {q}, a + ".q_norm", a + ".q_norm.weight",
           {kB, kN, kS, kD}, Shape{kD});
    k = Op(NameOf(a + ".k_norm"), ops::kRmsNorm, {k}, a + ".k_norm", a + ".k_norm.weight",
           {kB, kG, kS, kD}, Shape{kD});
  }
  if (rope) {
    q = Elementwise(ops::kRotary, a, "rotary_q", {q, position_ids_}, {kB, kN, kS, kD});
    k = Elementwise(ops::kRotary, a, "rotary_k", {k, position_ids_}, {kB, kG, kS, kD});
  } else if (q->shape->size() == 3) {
    // llama4 NoPE layers: attn_temperature_tuning scales q by a function of the position.
    q = Elementwise(ops::kMul, a, "attn_temperature", {q, position_ids_}, {kB, kN, kS, kD});
  }
  Node* out = Sdpa(a, i, q, k, v, {kB, kN, kS, kD});
  if (gate != nullptr) {
    Node* sig = Elementwise(ops::kSigmoid, a, "gate_sigmoid", {gate}, {kB, kS, kN * kD});
    out = Elementwise(ops::kMul, a, "gate_mul", {out, sig}, {kB, kS, kN * kD});
  }
  const char* o_leaf = gpt2 ? ".c_proj" : s_.gpt_style() ? ".dense" : ".o_proj";
  return Linear(out, a + o_leaf, {kB, kS, kH}, kN * kD);
}

// DeepseekV2/V3Attention: q through the q_lora_rank bottleneck (or a plain q_proj), k and v up
// from the shared kv_lora_rank latent, a rope key of DR shared by every head (k_pe, expanded
// over the N heads before sdpa). Symbols: QL q_lora_rank, KL kv_lora_rank, DN/DR/DQ the nope,
// rope and full q/k head widths, DV the value head width, KLR = KL + DR, DKV = DN + DV.
Node* Builder::LatentAttention(Node* x, const std::string& a, int64_t i) {
  const SymExpr ql = Sym("QL"), kl = Sym("KL"), dq = Sym("DQ"), dn = Sym("DN"), dr = Sym("DR"),
                dv = Sym("DV");
  Node* q = nullptr;
  if (s_.q_lora_rank > 0) {
    Node* qa = Linear(x, a + ".q_a_proj", {kB, kS, ql}, kH);
    qa = Norm(qa, a + ".q_a_layernorm");
    q = Linear(qa, a + ".q_b_proj", {kB, kS, kN * dq}, ql);
  } else {
    q = Linear(x, a + ".q_proj", {kB, kS, kN * dq}, kH);
  }
  Node* q_nope = Split(q, a, "q_nope", {kB, kN, kS, dn});
  Node* q_pe = Split(q, a, "q_pe", {kB, kN, kS, dr});
  Node* kva = Linear(x, a + ".kv_a_proj_with_mqa", {kB, kS, Sym("KLR")}, kH);
  Node* latent = Split(kva, a, "kv_latent", {kB, kS, kl});
  Node* k_pe = Split(kva, a, "k_pe", {kB, 1, kS, dr});
  latent = Norm(latent, a + ".kv_a_layernorm");
  Node* kv = Linear(latent, a + ".kv_b_proj", {kB, kS, kN * Sym("DKV")}, kl);
  Node* k_nope = Split(kv, a, "k_nope", {kB, kN, kS, dn});
  Node* v = Split(kv, a, "v", {kB, kN, kS, dv});
  q_pe = Elementwise(ops::kRotary, a, "rotary_q", {q_pe, position_ids_}, {kB, kN, kS, dr});
  k_pe = Elementwise(ops::kRotary, a, "rotary_k", {k_pe, position_ids_}, {kB, 1, kS, dr});
  Node* q_full = Elementwise(ops::kConcat, a, "q_cat", {q_nope, q_pe}, {kB, kN, kS, dq});
  Node* k_full = Elementwise(ops::kConcat, a, "k_cat", {k_nope, k_pe}, {kB, kN, kS, dq});
  Node* out = Sdpa(a, i, q_full, k_full, v, {kB, kN, kS, dv});
  return Linear(out, a + ".o_proj", {kB, kS, kH}, kN * dv);
}

// Qwen3NextGatedDeltaNet / Qwen3_5GatedDeltaNet: q, k, v, z and the b/a gates from the input
// projections, a depthwise causal conv1d (kernel KC) with SiLU over the LC = 2*LK*LKD + LV*LVD
// q/k/v channels, the decay g = -exp(A_log) * softplus(a + dt_bias) and beta = sigmoid(b), the
// chunked gated delta rule (a recurrent LKD x LVD state per value head instead of a KV cache),
// the gated RMSNorm with z, out_proj. No sdpa: the sequence-parallel passes leave it alone.
Node* Builder::GatedDeltaNet(Node* x, const std::string& a) {
  const SymExpr lv = Sym("LV"), value = Sym("LV") * Sym("LVD"), lc = Sym("LC");
  Node *qkv = nullptr, *z = nullptr, *b = nullptr, *av = nullptr;
  if (s_.split_linear_proj) {
    qkv = Linear(x, a + ".in_proj_qkv", {kB, kS, lc}, kH);
    z = Linear(x, a + ".in_proj_z", {kB, kS, value}, kH);
    b = Linear(x, a + ".in_proj_b", {kB, kS, lv}, kH);
    av = Linear(x, a + ".in_proj_a", {kB, kS, lv}, kH);
  } else {
    Node* qkvz = Linear(x, a + ".in_proj_qkvz", {kB, kS, Sym("LQKVZ")}, kH);
    Node* ba = Linear(x, a + ".in_proj_ba", {kB, kS, 2 * lv}, kH);
    qkv = Split(qkvz, a, "qkv", {kB, kS, lc});
    z = Split(qkvz, a, "z", {kB, kS, value});
    b = Split(ba, a, "b", {kB, kS, lv});
    av = Split(ba, a, "a", {kB, kS, lv});
  }
  const std::string conv = a + ".conv1d";
  Node* c = Op(NameOf(conv), ops::kConv1d, {qkv}, conv, conv + ".weight", {kB, kS, lc},
               Shape{lc, 1, Sym("KC")});
  c = Elementwise(ops::kSilu, a, "conv_act", {c}, {kB, kS, lc});
  Node* decay = Op(NameOf(a, "decay"), ops::kGateDecay, {av}, a, a + ".A_log", {kB, kS, lv},
                   Shape{lv});
  Node* beta = Elementwise(ops::kSigmoid, a, "beta", {b}, {kB, kS, lv});
  Node* core = Elementwise(ops::kGatedDeltaRule, a, "delta_rule", {c, decay, beta}, {kB, kS, value});
  const std::string norm = a + ".norm";
  Node* normed = Op(NameOf(norm), ops::kRmsNorm, {core, z}, norm, norm + ".weight", {kB, kS, value},
                    Shape{Sym("LVD")});
  return Linear(normed, a + ".out_proj", {kB, kS, kH}, value);
}

}  // namespace dsp::sim::graph::builder_internal
