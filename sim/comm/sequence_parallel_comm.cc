// SPDX-License-Identifier: Apache-2.0
// Sequence and context parallelism's collectives: DeepSpeed-Ulysses (arXiv 2309.14509 §3;
// DeepSpeed 0.19.6 sequence/layer.py DistributedAttention) and DeepCompile's AutoSP
// (compile/passes/sp_compile.py) all-to-alls after q, k, v and on the attention output, mirrored
// in backward; and the context parallelism of the other engines (FrameworkProfile::context_parallel):
// TransformerEngine's KV ring (Megatron-Core) and PyTorch's all-gather of K and V (torchtitan).
#include <algorithm>
#include <string>

#include "sim/comm/planner.h"

namespace dsp::sim {
namespace {

void PlanUlysses(const PlanContext& ctx, CollectivePlanner& plan, bool replicate_kv_heads = true) {
  const SimInput& in = ctx.in;
  const ModelSpec& m = *in.model;
  const ParallelSizes& sizes = in.plan->sizes;
  const double d = static_cast<double>(m.head_dim);
  // A rank's send buffer is its s/sp tokens of every head.
  const double calls = 2.0 * ctx.layers * (ctx.forward_passes + 1.0);
  const double q_width = static_cast<double>(m.num_attention_heads) * d;
  // Eager Ulysses repeats K/V heads up to sp; DeepCompile's AutoSP moves what SDPA receives,
  // all N heads when the KV heads do not divide sp (transformers repeats them with a mask,
  // validate's sp-autosp-kv-heads).
  const ParallelConfig& pc = in.plan->parallel;
  const bool compiled_autosp =
      pc.deepcompile && std::find(pc.compile_passes.begin(), pc.compile_passes.end(), "autosp") != pc.compile_passes.end();
  const double kv_heads_moved = compiled_autosp && m.num_key_value_heads % sizes.sp != 0
                                    ? static_cast<double>(m.num_attention_heads)
                                    : replicate_kv_heads ? std::max<double>(static_cast<double>(m.num_key_value_heads), sizes.sp)
                                                         : static_cast<double>(m.num_key_value_heads);
  const double kv_width = kv_heads_moved * d;
  const char* purpose = replicate_kv_heads ? "ulysses_all_to_all" : "cp_qkvo_all_to_all";
  // Megatron splits the heads over TP first: each rank moves its 1/tp of them.
  const double tp = replicate_kv_heads ? 1.0 : std::max(sizes.tp, 1);
  plan.Add(purpose, CollectiveKind::kAllToAll, GroupKind::kSp, ctx.tokens * q_width / tp * ctx.bytes_per_element, calls,
           CommSchedule::kCritical);
  plan.Add(purpose, CollectiveKind::kAllToAll, GroupKind::kSp, ctx.tokens * kv_width / tp * ctx.bytes_per_element, calls,
           CommSchedule::kCritical);
}

}  // namespace

double ContextParallelKvBytes(const PlanContext& ctx) {
  const ModelSpec& m = *ctx.in.model;
  // K and V of the rank's s/cp tokens and its 1/tp of the key-value heads (MLA: every head's).
  const double kv_heads = m.mla() ? static_cast<double>(m.num_attention_heads) : static_cast<double>(m.num_key_value_heads);
  const double width = kv_heads * static_cast<double>(m.mla() ? m.qk_head_dim() + m.v_head_dim : 2 * m.head_dim);
  return ctx.tokens * width / std::max(ctx.in.plan->sizes.tp, 1) * ctx.bytes_per_element;
}

void PlanSequenceParallel(const PlanContext& ctx, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  if (SequenceShards(in) <= 1) return;
  const double cp = in.plan->sizes.sp;
  // Layers with softmax attention exchange K and V; a linear-attention (Gated DeltaNet) layer
  // would need its own state exchange, which neither engine implements: priced as attention.
  const double layers = ctx.layers;
  const double kv = ContextParallelKvBytes(ctx);
  switch (in.engine.context_parallel()) {
    case ContextParallel::kNone: return PlanUlysses(ctx, plan);
    case ContextParallel::kAllToAll: return PlanUlysses(ctx, plan, /*replicate_kv_heads=*/false);
    case ContextParallel::kRingP2p:
      // AttnFuncWithCPAndKVP2P: cp - 1 ring steps per forward, each sending the KV chunk at hand
      // to the next rank while the attention of the current chunk runs; backward's middle steps
      // send KV and dKV together (two chunks). Overlapped with the layer's compute.
      plan.Add("cp_kv_p2p_fwd", CollectiveKind::kSendRecv, GroupKind::kSp, kv, (cp - 1.0) * layers * ctx.forward_passes,
               CommSchedule::kForwardOverlap);
      plan.Add("cp_kv_p2p_bwd", CollectiveKind::kSendRecv, GroupKind::kSp, 2.0 * kv, (cp - 1.0) * layers,
               CommSchedule::kBackwardOverlap);
      return;
    case ContextParallel::kAllGatherKv:
      // _AllGatherRotater: K and V all-gathered before the layer's attention (forward, and again
      // for its backward); dK and dV go back by the all-to-all rotater (the backward's
      // dkv_rotater): the gathered gradients' (cp - 1)/cp leave the rank, a reduce-scatter's volume.
      plan.Add("cp_kv_all_gather", CollectiveKind::kAllGather, GroupKind::kSp, kv * cp,
               layers * (ctx.forward_passes + 1.0), CommSchedule::kCritical);
      plan.Add("cp_dkv_exchange", CollectiveKind::kReduceScatter, GroupKind::kSp, kv * cp, layers,
               CommSchedule::kCritical);
      return;
  }
}

}  // namespace dsp::sim
