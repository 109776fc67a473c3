// SPDX-License-Identifier: Apache-2.0
#include "exec/model/tiny_model.h"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>

#include "exec/model/collective_functions.h"

namespace dsp::exec {
namespace {

at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& w, double eps) {
  return x * at::rsqrt(x.pow(2).mean({-1}, /*keepdim=*/true) + eps) * w;
}

// Causal attention with grouped-query heads: q [B, S, Nq, d], k/v [B, S, Nk, d] -> [B, S, Nq, d].
at::Tensor Attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t s = q.size(1), d = q.size(3), rep = q.size(2) / k.size(2);
  at::Tensor kk = rep == 1 ? k : k.repeat_interleave(rep, 2);
  at::Tensor vv = rep == 1 ? v : v.repeat_interleave(rep, 2);
  at::Tensor qt = q.transpose(1, 2), kt = kk.transpose(1, 2), vt = vv.transpose(1, 2);  // [B, N, S, d]
  at::Tensor scores = at::matmul(qt, kt.transpose(-1, -2)) / std::sqrt(static_cast<double>(d));
  at::Tensor mask = at::ones({s, s}, at::kBool).triu(1);
  scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  return at::matmul(at::softmax(scores, -1), vt).transpose(1, 2);
}

at::Tensor MatmulT(const at::Tensor& x, const at::Tensor& w) { return at::matmul(x, w.t()); }

}  // namespace

at::Tensor Param::RefSlice(const at::Tensor& full) const {
  if (shard.dim < 0 || shard.parts == 1) return full;
  const int64_t len = full.size(shard.dim) / shard.parts;
  return full.narrow(shard.dim, shard.index * len, len);
}

TinyModel::TinyModel(const TinyConfig& cfg, uint64_t seed, const ShardLayout& layout, at::ScalarType dtype)
    : cfg_(cfg), layout_(layout), dtype_(dtype) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t h = cfg.hidden, d = cfg.head_dim;
  const Shard column{0, layout.tp_rank, layout.tp}, row{1, layout.tp_rank, layout.tp}, whole{};
  // Every rank draws every full tensor in the same order (also experts it does not hold), so the
  // generator stays in step and all ranks agree on all weights.
  auto add = [&](std::string name, ParamFamily family, std::vector<int64_t> shape, Shard shard, double std,
                 double mean = 0.0, bool expert = false, bool held = true) {
    at::Tensor full = (at::randn(shape, gen, at::kFloat) * std + mean).to(dtype);
    Param p;
    p.name = std::move(name);
    p.family = family;
    p.expert = expert;
    p.shard = shard;
    p.ref = full.clone().set_requires_grad(true);
    if (held) p.local = p.RefSlice(full).clone().set_requires_grad(true);
    params_.push_back(std::move(p));
    return static_cast<int>(params_.size()) - 1;
  };
  const double lin = 1.0 / std::sqrt(static_cast<double>(h));
  embed_ = add("model.embed_tokens.weight", ParamFamily::kEmbedding, {cfg.vocab, h}, whole, 1.0);
  const int64_t experts_per_rank = cfg.experts / std::max<int64_t>(layout.ep, 1);
  for (int64_t l = 0; l < cfg.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerIdx li;
    // Norm weights around 1 but not equal to it, so their gradients are not all alike.
    li.in_norm = add(p + "input_layernorm.weight", ParamFamily::kNorm, {h}, whole, 0.1, 1.0);
    li.q = add(p + "self_attn.q_proj.weight", ParamFamily::kAttention, {cfg.heads * d, h}, column, lin);
    li.k = add(p + "self_attn.k_proj.weight", ParamFamily::kAttention, {cfg.kv_heads * d, h}, column, lin);
    li.v = add(p + "self_attn.v_proj.weight", ParamFamily::kAttention, {cfg.kv_heads * d, h}, column, lin);
    li.o = add(p + "self_attn.o_proj.weight", ParamFamily::kAttention, {h, cfg.heads * d}, row,
               1.0 / std::sqrt(static_cast<double>(cfg.heads * d)));
    li.post_norm = add(p + "post_attention_layernorm.weight", ParamFamily::kNorm, {h}, whole, 0.1, 1.0);
    if (cfg.is_moe()) {
      li.router = add(p + "mlp.gate.weight", ParamFamily::kRouter, {cfg.experts, h}, whole, lin);
      const double down = 1.0 / std::sqrt(static_cast<double>(cfg.expert_intermediate));
      for (int64_t e = 0; e < cfg.experts; ++e) {
        const std::string q = p + "mlp.experts." + std::to_string(e) + ".";
        const bool held = e / experts_per_rank == layout.ep_rank;
        li.expert_gate.push_back(add(q + "gate_proj.weight", ParamFamily::kRoutedExperts,
                                     {cfg.expert_intermediate, h}, whole, lin, 0.0, true, held));
        li.expert_up.push_back(add(q + "up_proj.weight", ParamFamily::kRoutedExperts,
                                   {cfg.expert_intermediate, h}, whole, lin, 0.0, true, held));
        li.expert_down.push_back(add(q + "down_proj.weight", ParamFamily::kRoutedExperts,
                                     {h, cfg.expert_intermediate}, whole, down, 0.0, true, held));
      }
    } else {
      li.gate = add(p + "mlp.gate_proj.weight", ParamFamily::kDenseMlp, {cfg.intermediate, h}, column, lin);
      li.up = add(p + "mlp.up_proj.weight", ParamFamily::kDenseMlp, {cfg.intermediate, h}, column, lin);
      li.down = add(p + "mlp.down_proj.weight", ParamFamily::kDenseMlp, {h, cfg.intermediate}, row,
                    1.0 / std::sqrt(static_cast<double>(cfg.intermediate)));
    }
    layers_.push_back(std::move(li));
  }
  final_norm_ = add("model.norm.weight", ParamFamily::kNorm, {h}, whole, 0.1, 1.0);
  lm_head_ = add("lm_head.weight", ParamFamily::kLmHead, {cfg.vocab, h}, whole, lin);
  // Pipeline stages: a rank holds only its stage's parameters (every full tensor was still drawn,
  // so the generator stayed in step).
  if (layout.pp > 1) {
    for (Param& p : params_) {
      if (StageOf(p.name) != layout.pp_rank) p.local = at::Tensor();
    }
  }
}

int64_t TinyModel::PipeLayerOf(const std::string& name) const {
  if (name == "model.embed_tokens.weight") return 0;
  if (name == "model.norm.weight") return cfg_.layers + 1;
  if (name == "lm_head.weight") return cfg_.layers + 2;
  const size_t at = std::string("model.layers.").size();
  return std::stoll(name.substr(at, name.find('.', at) - at)) + 1;
}

int64_t TinyModel::StageOf(const std::string& name) const {
  const int64_t layer = PipeLayerOf(name), per = cfg_.layers / layout_.pp;
  if (layer == 0) return 0;
  if (layer > cfg_.layers) return layout_.pp - 1;
  return (layer - 1) / per;
}

void TinyModel::PinShardRouting(int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
  pinned_.assign(ref_routes_.size(), at::Tensor());
  for (size_t l = 0; l < ref_routes_.size(); ++l) {
    if (ref_routes_[l].defined()) pinned_[l] = ref_routes_[l].narrow(0, row0, rows).narrow(1, col0, cols).contiguous();
  }
}

const at::Tensor& TinyModel::W(bool reference, int index) const {
  return reference ? params_[index].ref : params_[index].local;
}

at::Tensor TinyModel::Use(bool reference, int index, const at::Tensor& x, const WeightOp& op) const {
  if (!reference && params_[index].zero3) return hook_(index, x, op);
  return op(x, W(reference, index));
}

at::Tensor TinyModel::SwiGlu(bool ref, int gate, int up, int down, const at::Tensor& x) const {
  at::Tensor a = at::silu(Use(ref, gate, x, MatmulT)) * Use(ref, up, x, MatmulT);
  return Use(ref, down, a, MatmulT);
}

at::Tensor TinyModel::ReferenceLoss(const at::Tensor& tokens, const at::Tensor& targets, double denominator) {
  return Forward(true, tokens, targets, denominator, ShardComms{});
}

at::Tensor TinyModel::ShardedLoss(const at::Tensor& tokens, const at::Tensor& targets, double denominator,
                                  const ShardComms& comms) {
  return Forward(false, tokens, targets, denominator, comms);
}

at::Tensor TinyModel::StageForward(const at::Tensor& input, const at::Tensor& targets, double denominator,
                                   const ShardComms& comms) {
  const int64_t per = cfg_.layers / layout_.pp;
  return Forward(false, input, targets, denominator, comms, layout_.pp_rank * per, (layout_.pp_rank + 1) * per,
                 first_stage(), last_stage());
}

at::Tensor TinyModel::Forward(bool ref, const at::Tensor& tokens, const at::Tensor& targets, double denominator,
                              const ShardComms& comms) {
  return Forward(ref, tokens, targets, denominator, comms, 0, -1, true, true);
}

at::Tensor TinyModel::Forward(bool ref, const at::Tensor& tokens, const at::Tensor& targets, double denominator,
                              const ShardComms& comms, int64_t first_layer, int64_t last_layer, bool embed,
                              bool head) {
  Comm* tp = ref ? nullptr : comms.tp;
  Comm* sp = ref ? nullptr : comms.sp;
  const bool skip = !ref && comms.no_copy_allreduce;
  const int64_t tpn = ref ? 1 : layout_.tp, d = cfg_.head_dim;
  const int64_t b = tokens.size(0), s = tokens.size(1);
  const int64_t nq = cfg_.heads / tpn, nk = cfg_.kv_heads / tpn;
  const double eps = cfg_.rms_eps;
  auto norm = [eps](const at::Tensor& x, const at::Tensor& w) { return RmsNorm(x, w, eps); };
  at::Tensor x = embed ? Use(ref, embed_, tokens, [](const at::Tensor& t, const at::Tensor& w) { return at::embedding(w, t); })
                       : tokens;
  // One decoder layer, x -> x'; checkpointed in the sharded run under --recompute full.
  auto layer = [this, ref, tp, sp, skip, b, s, nq, nk, d, norm, comms](size_t l, const at::Tensor& in) {
    const LayerIdx& li = layers_[l];
    at::Tensor x = in;
    at::Tensor h = CopyToTp(Use(ref, li.in_norm, x, norm), tp, skip);
    at::Tensor q = Use(ref, li.q, h, MatmulT).view({b, s, nq, d});
    at::Tensor k = Use(ref, li.k, h, MatmulT).view({b, s, nk, d});
    at::Tensor v = Use(ref, li.v, h, MatmulT).view({b, s, nk, d});
    // Ulysses: scatter heads, gather the sequence, so attention sees every position.
    at::Tensor o = HeadsToSeq(Attention(SeqToHeads(q, sp), SeqToHeads(k, sp), SeqToHeads(v, sp)), sp);
    o = ReduceFromTp(Use(ref, li.o, o.reshape({b, s, nq * d}), MatmulT), tp);
    x = x + o;
    h = Use(ref, li.post_norm, x, norm);
    if (cfg_.is_moe()) {
      x = x + Moe(ref, static_cast<int>(l), h, comms);
    } else {
      at::Tensor hc = CopyToTp(h, tp, skip);
      x = x + ReduceFromTp(SwiGlu(ref, li.gate, li.up, li.down, hc), tp);
    }
    return x;
  };
  if (!ref) layer_fns_.clear();
  const size_t end = last_layer < 0 ? layers_.size() : static_cast<size_t>(last_layer);
  for (size_t l = static_cast<size_t>(first_layer); l < end; ++l) {
    if (ref || !checkpoint_) {
      x = layer(l, x);
      continue;
    }
    layer_fns_.emplace_back([layer, l](const at::Tensor& in) { return layer(l, in); });
    x = CheckpointLayer(x, &layer_fns_.back(), cpu_checkpointing_, &counters_);
  }
  if (!head) return x;
  x = Use(ref, final_norm_, x, norm);
  // The cross entropy in fp32 (a no-op for fp32 runs), as mixed-precision training does: bf16
  // log_softmax over the vocabulary would lose the small probabilities.
  at::Tensor logits = Use(ref, lm_head_, x, MatmulT).to(at::kFloat);
  at::Tensor nll = at::nll_loss(at::log_softmax(logits.reshape({b * s, cfg_.vocab}), -1), targets.reshape({b * s}),
                                {}, at::Reduction::Sum, -100);
  return nll / denominator;
}

at::Tensor TinyModel::Moe(bool ref, int layer, const at::Tensor& h, const ShardComms& comms) {
  const LayerIdx& li = layers_[layer];
  const int64_t hid = cfg_.hidden, k = cfg_.top_k;
  Comm* ep = ref ? nullptr : comms.ep;
  Comm* tp = ref ? nullptr : comms.tp;
  const bool sharded = ep != nullptr && ep->size() > 1;
  const bool folded = sharded && tp != nullptr && tp->size() > 1;
  at::Tensor x = h.reshape({-1, hid});
  // Folded: each peer's gradient into the MoE input covers only its own assignments (times tp,
  // from restore's backward); averaging over tp makes it whole and equal on every peer.
  if (folded) x = TpMeanGrad(x, tp);
  const int64_t t = x.size(0);
  // The gate in fp32, as DeepSpeed's TopKGate does (its wg is .float(), its input cast to fp32):
  // in bf16 near-tied router scores would pick different experts in the sharded and the reference
  // run. A no-op for fp32 runs; the gate values go back to the model's dtype.
  at::Tensor probs = at::softmax(Use(ref, li.router, x, [](const at::Tensor& in, const at::Tensor& w) {
                                   return at::matmul(in.to(at::kFloat), w.to(at::kFloat).t());
                                 }),
                                 -1);
  auto [topv, topi] = at::topk(probs, k, -1);
  if (ref) {
    if (ref_routes_.size() < layers_.size()) ref_routes_.resize(layers_.size());
    ref_routes_[layer] = topi.reshape({h.size(0), h.size(1), k});
  } else if (static_cast<size_t>(layer) < pinned_.size() && pinned_[layer].defined()) {
    topi = pinned_[layer].reshape({-1, k});
    topv = probs.gather(-1, topi);  // the shard's own gate values, so the router gradient is its own
  }
  if (cfg_.norm_topk_prob) topv = topv / topv.sum({-1}, true);
  topv = topv.to(x.scalar_type());
  auto expert = [&](int64_t e, const at::Tensor& rows) {
    return SwiGlu(ref, li.expert_gate[e], li.expert_up[e], li.expert_down[e], rows);
  };
  // ZeRO-3: a gather is a collective of the expert's whole group, so every local expert runs,
  // with or without tokens (DeepSpeed gathers the module's parameters whenever it is called).
  const bool every_expert = !ref && hook_ != nullptr;
  at::Tensor out = at::zeros({t, hid}, x.options());
  if (!sharded) {
    for (int64_t e = 0; e < cfg_.experts; ++e) {
      at::Tensor hit = topi == e;  // [T, k]
      at::Tensor idx = hit.any(-1).nonzero().squeeze(1);
      if (idx.numel() == 0 && !every_expert) continue;
      at::Tensor gate = (topv * hit).sum(-1).index_select(0, idx).unsqueeze(1);
      out = out.index_add(0, idx, expert(e, x.index_select(0, idx)) * gate);
    }
    return out.view(h.sizes());
  }
  // EP dispatch: one row per (token, slot) assignment, sent to the rank holding its expert, in
  // rank order; combine sends the expert outputs back the same way and weights them at home.
  //
  // Folded TP x EP (auto_ep_folding.py, PR #8064): every tp peer routes all of its (identical) tokens
  // ("route-full") but dispatches only the assignments whose index is its tp rank modulo tp
  // ("partition-dispatch"), so each (token, expert) pair travels once per tp group; "restore"
  // all-gathers the weighted rows across tp so every peer holds the full output again.
  const int64_t p = ep->size(), per_rank = cfg_.experts / p;
  at::Tensor flat_e = topi.reshape({-1});                               // [T*k]
  at::Tensor flat_t = at::arange(t, at::kLong).repeat_interleave(k);     // token of each assignment
  at::Tensor flat_g = topv.reshape({-1});
  if (folded) {
    at::Tensor mine = at::arange(tp->rank(), t * k, tp->size(), at::kLong);
    flat_e = flat_e.index_select(0, mine);
    flat_t = flat_t.index_select(0, mine);
    flat_g = flat_g.index_select(0, mine);
  }
  at::Tensor dest = at::floor_divide(flat_e, per_rank);
  at::Tensor order = std::get<1>(at::sort(dest, /*stable=*/true, 0, false));
  std::vector<int64_t> send(p, 0);
  auto dest_acc = dest.accessor<int64_t, 1>();
  for (int64_t i = 0; i < dest.size(0); ++i) ++send[dest_acc[i]];
  at::Tensor counts = at::empty({p, 1}, at::kFloat);
  for (int64_t j = 0; j < p; ++j) counts[j][0] = static_cast<float>(send[j]);
  at::Tensor got = ValueOrThrow(ep->AllToAll(counts, {}, {}));
  std::vector<int64_t> recv(p);
  for (int64_t j = 0; j < p; ++j) recv[j] = static_cast<int64_t>(got[j][0].item<float>());
  at::Tensor tok = flat_t.index_select(0, order);
  at::Tensor ids = flat_e.index_select(0, order).to(at::kFloat).unsqueeze(1);
  at::Tensor rows = AllToAllRows(x.index_select(0, tok), ep, send, recv);
  at::Tensor rows_e = ValueOrThrow(ep->AllToAll(ids, send, recv)).squeeze(1).to(at::kLong);
  at::Tensor y = at::zeros_like(rows);
  for (int64_t e = layout_.ep_rank * per_rank; e < (layout_.ep_rank + 1) * per_rank; ++e) {
    at::Tensor idx = (rows_e == e).nonzero().squeeze(1);
    if (idx.numel() == 0 && !every_expert) continue;
    y = y.index_add(0, idx, expert(e, rows.index_select(0, idx)));
  }
  at::Tensor back = AllToAllRows(y, ep, recv, send) * flat_g.index_select(0, order).unsqueeze(1);
  if (folded) {
    std::vector<int64_t> per_peer;
    back = RestoreRows(back, tp, &per_peer);
    std::vector<int64_t> same(tp->size(), tok.size(0));
    tok = ValueOrThrow(tp->AllToAll(tok.to(at::kFloat).unsqueeze(1).repeat({tp->size(), 1}), same, per_peer))
              .squeeze(1)
              .to(at::kLong);
  }
  return out.index_add(0, tok, back).view(h.sizes());
}

}  // namespace dsp::exec
