// SPDX-License-Identifier: Apache-2.0
// Tensor parallelism's collectives: Megatron's f/g pairs (Narayanan et al. 2021 §3; with sequence
// parallelism Korthikanti et al. 2022 §4.2.2), as AutoTP inserts them too (DeepSpeed 0.19.6
// compile/passes/tp_compile.py, module_inject/layers.py LinearAllreduce); Megatron's vocab-parallel
// embedding, lm_head and cross entropy (megatron/core/tensor_parallel/layers.py, cross_entropy.py);
// AutoTP's transformers-plan lm_head (tp_plan_converter.py, PR #8146) and grad_allreduce hooks.
#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "core/rules/tensor_parallel_internal.h"
#include "sim/comm/planner.h"
#include "sim/cost/param_sharding.h"
#include "sim/frameworks/framework.h"

namespace dsp::sim {
namespace {

// Per layer, the q/k norms whose gradient AutoTP's hook all-reduces over tp: transformers'
// tp_plan entries of style replicated_with_grad_allreduce, when DeepSpeed converts that plan.
double QkNormGradAllreduceHooks(const SimInput& in) {
  const ModelSpec& m = *in.model;
  if (in.plan->sizes.tp <= 1 || !in.plan->parallel.autotp_transformers_plan || !m.qk_norm ||
      in.engine.framework().tensor_parallel != TensorParallelStyle::kAutoTp) {
    return 0;
  }
  const std::vector<autotp::HfTpPlanEntry>* plan = autotp::HfTpPlan(m);
  if (plan == nullptr || !autotp::UnsupportedHfStyles(*plan, in.engine.deepspeed_version).empty()) return 0;
  double hooks = 0;
  for (const autotp::HfTpPlanEntry& e : *plan) {
    if (std::string_view(e.style) == "replicated_with_grad_allreduce") ++hooks;
  }
  return hooks;
}

// VocabParallelEmbedding all-reduces (or reduce-scatters under SP) its output; the parallel
// lm_head's input copy all-reduces the input gradient in backward; vocab_parallel_cross_entropy
// all-reduces the max, the target logit and the sum of exponentials (3 x tokens floats).
void PlanVocabParallel(const PlanContext& ctx, CollectivePlanner& plan) {
  const double activation = ctx.tokens * ctx.hidden * ctx.bytes_per_element;
  const CollectiveKind k = ctx.tp_sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  const CommSchedule critical = CommSchedule::kCritical;
  plan.Add("tp_embedding_reduce", k, GroupKind::kTp, activation, 1, critical, StageScope::kFirst);
  plan.Add("tp_lm_head_reduce", k, GroupKind::kTp, activation, 1, critical, StageScope::kLast);
  plan.Add("tp_cross_entropy_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp, ctx.tokens * 4.0, 3, critical,
           StageScope::kLast);
}

}  // namespace

void PlanTensorParallel(const PlanContext& ctx, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const ModelSpec& m = *in.model;
  const double activation = ctx.tokens * ctx.hidden * ctx.bytes_per_element;
  const CommSchedule critical = CommSchedule::kCritical;
  // Attention always has a pair; a dense MLP (or, without AutoEP, the MoE block whose experts
  // AutoTP splits like an MLP) adds a second. One all-reduce forward (row output), one backward
  // (column input gradient); folded MoE blocks have none. Sequence parallelism turns each
  // all-reduce into an all-gather plus a reduce-scatter of the same S.
  // Megatron-Core's shared expert (SharedExpertMLP) is a TP-split MLP beside the routed experts.
  const bool megatron_shared = ctx.autoep && in.engine.framework().megatron_moe_options &&
                               m.shared_expert_intermediate_size > 0;
  const double pairs = ctx.layers + ctx.dense_layers + (ctx.autoep && !megatron_shared ? 0.0 : ctx.moe_layers);
  const double calls = pairs * (ctx.forward_passes + 1.0);
  // torchao's float8 tensor parallelism (torchtitan's TP plan under float8: PrepareFloat8ModuleInput,
  // Float8RowwiseParallel; torchao/float8/float8_tensor_parallel.py) casts a pair's input to
  // float8 before the all-gather, and the gradient reaching a row-parallel output before the
  // backward all-gather (_NoopFwToFloat8BwDynamic): every all-gather moves 1 byte an element; the
  // reduce-scatters stay 16-bit.
  const bool float8 = in.engine.fp8 && in.engine.framework().fp8 == Fp8Linear::kTorchaoFloat8;
  const double gathered = float8 ? activation / ctx.bytes_per_element : activation;
  // torchtitan's op-level selective AC (FrameworkProfile::op_level_sac) saves the outputs of
  // _c10d_functional.reduce_scatter_tensor but not of the all-gathers (_save_list in
  // models/llama3/parallelize_llama.py, torchtitan 9dec370 and e7c0cae): backward gathers each
  // pair's input again to recompute the GEMMs it feeds.
  const double regathers =
      in.engine.framework().op_level_sac && in.workload.recompute == Recompute::kSelective ? pairs : 0.0;
  if (ctx.tp_sequence_parallel && in.engine.tp_comm_overlap && in.engine.framework().tp_comm_overlap) {
    // TransformerEngine's userbuffers (Megatron-Core --tp-comm-overlap): the all-gather before a
    // column-parallel GEMM and the reduce-scatter after a row-parallel one are split into tp
    // chunks pipelined with the GEMM's chunks (ring exchange), forward and in backward's dgrad.
    // torchtitan's async TP does the same in compiled graphs (torch/_inductor/fx_passes/
    // micro_pipeline_tp.py: fused_all_gather_matmul consumes the local shard while the others
    // arrive over symmetric memory, fused_matmul_reduce_scatter sends each chunk as it is
    // produced; torch 2.6, December 2024, and later). What it hides is the GEMMs' time; what it
    // cannot is the first chunk of each, 1/tp of the communication, and whatever exceeds the
    // compute of the pass.
    const double share = 1.0 / std::max(in.plan->sizes.tp, 1);
    // Op-level SAC's backward regathers feed the recomputed projections (an all-gather into a
    // matmul, the pattern the pass fuses; the gathered input is returned for the weight gradient).
    // Backward's reduce-scatters carry a pair's input gradient. Where q, k and v (and gate and up)
    // are separate modules, as in torchtitan's Llama, that gradient is the sum of their GEMMs, and
    // the pass fuses a reduce-scatter only into the one matmul that produces its input
    // (micro_pipeline_tp.py fuse_matmul_reduce_scatter: _find_producer_matmul, "no producer matmul
    // found for reduce scatter, skipping"): those stay on the critical path. TransformerEngine's
    // fused QKV and fc1 GEMMs produce theirs alone (ub_overlap_rs_dgrad).
    const bool separate_projections = in.engine.framework().trains_transformers_modules;
    for (auto [purpose, kind] : {std::pair{"tp_sp_all_gather", CollectiveKind::kAllGather},
                                 std::pair{"tp_sp_reduce_scatter", CollectiveKind::kReduceScatter}}) {
      const bool gather = kind == CollectiveKind::kAllGather;
      const double bytes = gather ? gathered : activation;
      plan.Add(purpose, kind, GroupKind::kTp, bytes, pairs * ctx.forward_passes, CommSchedule::kForwardOverlap);
      plan.SetFloorShare(share);
      if (!gather && separate_projections) {
        plan.Add(purpose, kind, GroupKind::kTp, bytes, pairs, CommSchedule::kCritical);
        continue;
      }
      plan.Add(purpose, kind, GroupKind::kTp, bytes, pairs + (gather ? regathers : 0.0), CommSchedule::kBackwardOverlap);
      plan.SetFloorShare(share);
    }
  } else if (ctx.tp_sequence_parallel) {
    plan.Add("tp_sp_all_gather", CollectiveKind::kAllGather, GroupKind::kTp, gathered, calls, critical);
    if (regathers > 0) {
      plan.Add("tp_sp_all_gather_bwd_regather", CollectiveKind::kAllGather, GroupKind::kTp, gathered, regathers,
               critical);
    }
    plan.Add("tp_sp_reduce_scatter", CollectiveKind::kReduceScatter, GroupKind::kTp, activation, calls, critical);
  } else {
    plan.Add("tp_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp, activation, calls, critical);
  }
  if (in.engine.framework().megatron_tp()) PlanVocabParallel(ctx, plan);
  // DeepSpeed's AutoTP with a preset or layer_specs keeps lm_head whole in training (no
  // LmHeadLinearAllreduce, param_sharding.cc): no logits collective. From transformers' tp_plan
  // it is "colwise_gather_output": a column LinearLayer whose logits are all-gathered over TP
  // (gather_from_tp_region: all_gather_into_tensor forward, a narrow backward), after a copy_to_tp
  // whose backward all-reduces the input gradient. Once per micro-step: the head is outside the
  // recomputed layers.
  if (VocabSplitOf(in) == VocabSplit::kLmHeadColumns) {
    plan.Add("tp_lm_head_logits_all_gather", CollectiveKind::kAllGather, GroupKind::kTp,
             ctx.tokens * static_cast<double>(m.vocab_size) * ctx.bytes_per_element, 1, critical, StageScope::kLast);
    plan.Add("tp_lm_head_input_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp, activation, 1, critical,
             StageScope::kLast);
  }
  // AutoTP's grad_allreduce hooks (auto_tp.py register_replicated_grad_hooks): transformers' plan
  // marks Qwen3's q_norm/k_norm replicated_with_grad_allreduce, and each hook sums that norm's
  // head_dim gradient over tp with a blocking dist.all_reduce, every micro-step. (Custom
  // layer_specs with grad_allreduce are drawn and scheduled but not counted here.)
  if (const double hooks = QkNormGradAllreduceHooks(in); hooks > 0) {
    plan.Add("tp_qk_norm_grad_allreduce", CollectiveKind::kAllReduce, GroupKind::kTp,
             static_cast<double>(m.head_dim) * ctx.bytes_per_element, hooks * ctx.layers, critical);
  }
}

void PlanCheckpointPartitionGathers(const PlanContext& ctx, CollectivePlanner& plan) {
  // partition_activations: before a layer is recomputed its checkpointed input is all-gathered
  // over TP (checkpointing.py get_full_inputs). Megatron SP already shards it.
  const SimInput& in = ctx.in;
  if (in.workload.recompute != Recompute::kFull || !in.checkpointing.partition_activations ||
      ctx.tp_sequence_parallel) {
    return;
  }
  plan.Add("ckpt_partition_all_gather", CollectiveKind::kAllGather, GroupKind::kTp,
           ctx.tokens * ctx.hidden * ctx.bytes_per_element, ctx.layers, CommSchedule::kCritical);
}

}  // namespace dsp::sim
