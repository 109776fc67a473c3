// SPDX-License-Identifier: Apache-2.0
// Sequence parallelism's collectives: DeepSpeed-Ulysses (arXiv 2309.14509 §3; DeepSpeed 0.19.6
// sequence/layer.py DistributedAttention) and DeepCompile's AutoSP (compile/passes/sp_compile.py)
// all-to-alls after q, k, v and on the attention output, mirrored in backward.
#include <algorithm>
#include <string>

#include "sim/comm/planner.h"

namespace dsp::sim {

void PlanSequenceParallel(const PlanContext& ctx, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  if (SequenceShards(in) <= 1) return;
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
                                    : std::max<double>(static_cast<double>(m.num_key_value_heads), sizes.sp);
  const double kv_width = kv_heads_moved * d;
  plan.Add("ulysses_all_to_all", CollectiveKind::kAllToAll, GroupKind::kSp, ctx.tokens * q_width * ctx.bytes_per_element,
           calls, CommSchedule::kCritical);
  plan.Add("ulysses_all_to_all", CollectiveKind::kAllToAll, GroupKind::kSp, ctx.tokens * kv_width * ctx.bytes_per_element,
           calls, CommSchedule::kCritical);
}

}  // namespace dsp::sim
