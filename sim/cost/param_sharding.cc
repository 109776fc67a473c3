// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/param_sharding.h"

#include "core/rules/tensor_parallel_internal.h"

#include "core/plan/plan.h"

namespace dsp::sim {

// How many ranks share one copy of a family before ZeRO: AutoTP splits attention and dense MLP
// weights (column/row); embedding and lm_head stay whole (AutoTP training replaces only the
// decoder layers' linears: nn.Embedding is never replaced, and replace_module.py's set_lm_head
// returns early in training mode); norms and routers stay replicated;
// AutoEP places num_experts/ep whole experts on a rank, and AutoTP skips AutoEP subtrees, so
// shared experts stay whole under AutoEP. Without AutoEP, AutoTP splits every expert by t.
VocabSplit VocabSplitOf(const SimInput& in) {
  if (in.vocab_split) return *in.vocab_split;
  if (in.engine.framework().megatron_tp()) return VocabSplit::kVocabParallel;
  if (in.plan == nullptr || in.model == nullptr || !in.plan->parallel.autotp_transformers_plan ||
      in.plan->sizes.tp <= 1 || in.engine.deepspeed_version < ds_release::kAutoTpHfPlan) {
    return VocabSplit::kNone;
  }
  const std::vector<autotp::HfTpPlanEntry>* plan = autotp::HfTpPlan(*in.model);
  // A plan DeepSpeed rejects (validate's tp-hf-plan-unsupported) or falls back from keeps the
  // heuristic parser's whole lm_head.
  if (plan == nullptr || !autotp::UnsupportedHfStyles(*plan, in.engine.deepspeed_version).empty()) {
    return VocabSplit::kNone;
  }
  for (const autotp::HfTpPlanEntry& e : *plan) {
    const std::string_view pattern = e.pattern, style = e.style;
    if ((pattern == "lm_head" || pattern == "embed_out") && style == "colwise_gather_output") {
      return VocabSplit::kLmHeadColumns;
    }
  }
  return VocabSplit::kNone;
}

double AttentionTpDivisor(const SimInput& in) {
  if (in.plan == nullptr || in.model == nullptr || in.engine.framework().megatron_tp()) return 0;
  const int tp = EffectiveTp(in.plan->sizes.tp);
  const int64_t kv = in.model->num_key_value_heads, heads = in.model->num_attention_heads;
  if (tp <= 1 || kv <= 0 || heads <= 0 || kv % tp == 0) return 0;
  const int64_t kv0 = kv / tp + 1;
  const double heads0 = static_cast<double>(kv0) * static_cast<double>(heads / kv);
  return static_cast<double>(heads) / heads0;
}

double ShardDivisor(ParamFamily family, const ParallelSizes& s, VocabSplit vocab, double attention_divisor,
                    bool megatron_experts) {
  const int tp = EffectiveTp(s.tp);
  if (family == ParamFamily::kAttention && attention_divisor > 0) return attention_divisor;
  if (vocab == VocabSplit::kVocabParallel &&
      (family == ParamFamily::kEmbedding || family == ParamFamily::kLmHead)) {
    return tp;
  }
  if (vocab == VocabSplit::kLmHeadColumns && family == ParamFamily::kLmHead) return tp;
  switch (family) {
    case ParamFamily::kAttention:
    case ParamFamily::kDenseMlp:
      return tp;
    case ParamFamily::kEmbedding:
    case ParamFamily::kLmHead:
    case ParamFamily::kNorm:
    case ParamFamily::kRouter:
      return 1;
    // MLA's down projections are the deepseek_v2 preset's skip rows (q_a_proj,
    // kv_a_proj_with_mqa; their norms are never Linear): replicated over TP.
    case ParamFamily::kLatentProj:
      return 1;
    // No AutoTP preset or layer_specs pattern names Gated DeltaNet's projections, and AutoTP
    // leaves a model's unmatched linears whole: replicated over TP.
    case ParamFamily::kLinearAttention:
      return 1;
    case ParamFamily::kRoutedExperts:
      return s.expert_parallel ? s.ep * s.etp : tp;
    // Megatron's SharedExpertMLP uses the dense TP group's column/row parallel linears.
    case ParamFamily::kSharedExperts:
      return s.expert_parallel && !megatron_experts ? 1 : tp;
  }
  return 1;
}

double PartitionedParamsPerRank(const SimInput& input) {
  const Plan& plan = *input.plan;
  const ParamCounts counts = ModelParamCounts(input);
  const double dense_group = static_cast<double>(GroupSizeOf(plan, ZeroPartitionGroup(plan, false)));
  const double expert_group = static_cast<double>(GroupSizeOf(plan, ZeroPartitionGroup(plan, true)));
  double params = 0;
  for (const auto& [family, count] : counts.by_family) {
    const double per_rank = static_cast<double>(count) /
                            ShardDivisorOf(family, input) /
                            static_cast<double>(plan.sizes.pp);
    params += per_rank / (family == ParamFamily::kRoutedExperts ? expert_group : dense_group);
  }
  return params;
}

double ShardDivisorOf(ParamFamily family, const SimInput& input) {
  return ShardDivisor(family, input.plan->sizes, VocabSplitOf(input), AttentionTpDivisor(input),
                      input.engine.framework().megatron_moe_options);
}

}  // namespace dsp::sim
