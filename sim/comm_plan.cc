// SPDX-License-Identifier: Apache-2.0
// Which collectives a plan issues per step, how big they are, on which group, and when.
// Volumes: Megatron, Ulysses and ZeRO papers (sim/comm_plan.h); insertion points and reduction
// groups: DeepSpeed 0.19.6 compile/passes (AutoTP pass, AutoSP all-to-alls), auto_ep_folding.py and
// engine.py (folding and ordinary gradient reduction); Megatron's
// tensor/pipeline parallel collectives from Narayanan et al. 2021 and Korthikanti et al. 2022;
// ZeRO-3's per-release behaviour from DeepSpeed's stage3.py / partition_parameters.py.
#include "sim/comm_plan.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/model/model_spec.h"
#include "core/rules/tensor_parallel_internal.h"
#include "sim/group_links.h"
#include "sim/param_sharding.h"

namespace dsp::sim {
namespace {

bool PerMicroStep(CommSchedule s) {
  return s == CommSchedule::kCritical || s == CommSchedule::kForwardOverlap ||
         s == CommSchedule::kBackwardOverlap;
}

// Calls that send `elements` in buckets of `bucket_elements` (DeepSpeed's reduce/allgather bucket
// sizes; 0 = one call).
double BucketCalls(double elements, double bucket_elements) {
  return bucket_elements > 0 ? std::ceil(elements / bucket_elements) : 1.0;
}

class Planner {
 public:
  explicit Planner(const SimInput& in) : in_(in) {}

  // `calls` calls of S = `bytes` each, per micro-step or per step depending on `schedule`;
  // `per_call_extra` seconds on top of each call (list copies of old ZeRO-3 releases).
  void Add(std::string_view purpose, CollectiveKind kind, GroupKind group, double bytes, double calls,
           CommSchedule schedule, StageScope scope = StageScope::kAll,
           double per_call_extra_kernels = 0, double extra_seconds = 0) {
    if (bytes <= 0 || calls <= 0) return;
    const GroupLinkInfo& g = Describe(group, kind);
    const double extra =
        per_call_extra_kernels * g.size * in_.cluster->gpu.kernel_overhead_seconds + extra_seconds;
    AddOn(g, purpose, kind, group, bytes, calls, schedule, scope, extra);
  }

  // The same on a group carved out of the global ranks (Describe's blocks: hpZ, MiCS, qgZ);
  // `group` is the table it stands in for in reports. `extra_seconds` per call: the quantization
  // kernels ZeRO++ runs around its collectives.
  void AddOnBlocks(std::string_view purpose, CollectiveKind kind, GroupKind group, int64_t block,
                   bool strided, double bytes, double calls, CommSchedule schedule,
                   double extra_seconds = 0) {
    if (bytes <= 0 || calls <= 0) return;
    GroupLinkCache& cache = in_.link_cache != nullptr ? *in_.link_cache : local_cache_;
    AddOn(cache.GetBlocks(in_, kind, block, strided), purpose, kind, group, bytes, calls, schedule,
          StageScope::kAll, extra_seconds);
  }

  void AddOn(const GroupLinkInfo& g, std::string_view purpose, CollectiveKind kind, GroupKind group,
             double bytes, double calls, CommSchedule schedule, StageScope scope, double extra) {
    if (!g.present || g.size <= 1) return;
    const double one_call = CollectiveSeconds(kind, g.size, bytes, g.link) + extra;
    const double units = PerMicroStep(schedule)
                             ? static_cast<double>(std::max<int64_t>(in_.workload.grad_accum, 1))
                             : 1.0;
    PlannedCollective p;
    p.call.purpose = purpose;
    p.call.kind = kind;
    p.call.group = group;
    p.call.group_size = g.size;
    p.call.bytes_per_call = bytes;
    p.call.calls_per_step = calls * units;
    p.call.inter_node = g.inter_node;
    p.call.seconds = one_call * calls * units;
    p.schedule = schedule;
    p.scope = scope;
    p.calls_per_unit = calls;
    p.seconds_per_unit = one_call * calls;
    p.floor_seconds = one_call;  // the first prefetch or the last bucket cannot be hidden
    out_.push_back(std::move(p));
  }

  // A buffer of `elements` sent in buckets of `bucket_elements` (DeepSpeed's reduce/allgather
  // bucket sizes): ceil(elements / bucket) calls of equal size.
  void AddBucketed(std::string_view purpose, CollectiveKind kind, GroupKind group, double elements,
                   double bytes_per_element, double bucket_elements, CommSchedule schedule,
                   StageScope scope = StageScope::kAll) {
    if (elements <= 0) return;
    const double calls = BucketCalls(elements, bucket_elements);
    Add(purpose, kind, group, elements * bytes_per_element / calls, calls, schedule,
        scope);
  }

  std::vector<PlannedCollective> Take() { return std::move(out_); }

  // The last collective added can hide entirely (another one carries the unhidable first call).
  void DropFloor() {
    if (!out_.empty()) out_.back().floor_seconds = 0;
  }

 private:
  // Every group of a kind is scanned once per (kind, collective): per evaluation, or once per plan
  // when the caller shares a cache across evaluations (tune).
  const GroupLinkInfo& Describe(GroupKind group, CollectiveKind kind) {
    GroupLinkCache& cache = in_.link_cache != nullptr ? *in_.link_cache : local_cache_;
    return cache.Get(in_, group, kind);
  }
  GroupLinkCache local_cache_;

  const SimInput& in_;
  std::vector<PlannedCollective> out_;
};

// Parameters (elements) one rank holds before ZeRO partitions them, per reduction group.
struct RankParams {
  double dense = 0;          // reduced over dp (or sp_dp): everything but AutoEP's routed experts
  double routed = 0;         // AutoEP routed experts, reduced over edp
  double tp_replicated = 0;  // replicated across TP under folding: router, norms, shared experts
  double zero3_persistent = 0;  // tensors below stage3_param_persistence_threshold: never gathered
  double embedding = 0;      // this rank's share of the (tied) embedding, for pipeline tying
};

RankParams CountRankParams(const SimInput& in) {
  const ModelSpec& m = *in.model;
  const ParamCounts c = ModelParamCounts(in);
  auto family = [&](ParamFamily f) { return static_cast<double>(c.by_family.at(f)); };
  const ParallelSizes& sizes = in.plan->sizes;
  const double tp = sizes.tp, ep = sizes.ep, pp = sizes.pp;
  const bool autoep = sizes.expert_parallel;
  // Megatron's vocab-parallel embedding and lm_head are split over TP; AutoTP keeps them whole.
  const double vocab_split = in.engine.megatron() ? tp : 1.0;
  RankParams r;
  const double shared =
      autoep ? family(ParamFamily::kSharedExperts) : family(ParamFamily::kSharedExperts) / tp;
  const double attention_tp = AttentionTpDivisor(in) > 0 ? AttentionTpDivisor(in) : tp;
  r.embedding = (family(ParamFamily::kEmbedding) + family(ParamFamily::kLmHead)) / vocab_split;
  r.dense = family(ParamFamily::kAttention) / attention_tp + family(ParamFamily::kDenseMlp) / tp + shared + family(ParamFamily::kNorm) + family(ParamFamily::kRouter) +
            r.embedding;
  const double routed =
      autoep ? family(ParamFamily::kRoutedExperts) / ep : family(ParamFamily::kRoutedExperts) / tp;
  if (autoep) {
    r.routed = routed;
  } else {
    r.dense += routed;
  }
  if (autoep && tp > 1) {
    r.tp_replicated = family(ParamFamily::kRouter) + family(ParamFamily::kNorm) +
                      family(ParamFamily::kSharedExperts);
  }
  const double threshold = in.zero.param_persistence_threshold;
  const double h = static_cast<double>(m.hidden_size);
  if (h < threshold) r.zero3_persistent += family(ParamFamily::kNorm);
  if (h * static_cast<double>(m.num_experts) < threshold) {
    r.zero3_persistent += family(ParamFamily::kRouter);
  }
  // Biases (GPT-style models) are as small as the norms: persistent too.
  if (m.attention_bias && h * 3.0 < threshold) {
    r.zero3_persistent += static_cast<double>(m.num_hidden_layers) * 4.0 * h / tp;
  }
  // Pipeline stages hold about 1/pp of the layers each.
  r.dense /= pp;
  r.routed /= pp;
  r.tp_replicated /= pp;
  r.zero3_persistent /= pp;
  return r;
}

// ZeRO-3's view of one decoder layer: its modules in forward order, each gathered by one call
// (fetch_sub_module gathers a module's own parameters: one call per parameter before 0.6.0, one
// coalesced call per module after; the biases and norms below the persistence threshold never
// move, so both count the module's weight). `regathered` is the share of the layer's gathered
// elements that backward gathers again after a recomputed forward: a module is kept when the
// parameters used between its recomputation and its backward (DeepSpeed's reuse distance: the
// later modules of the layer, once in the recompute and once in backward) stay under
// max_reuse_distance.
struct Zero3Layer {
  double modules = 0;
  double regathered = 1.0;
};

Zero3Layer ComputeZero3Layer(const SimInput& in, bool moe) {
  // The first layer of the kind stands for all of them (attention kinds differ little in module
  // count: a linear-attention layer has as many projections as an attention one). A model whose
  // every layer is MoE has no dense layer: its non-expert modules (attention, router, shared
  // expert) are the dense gathers then.
  const ModelSpec& m = *in.model;
  int64_t layer = 0;
  while (layer < m.num_hidden_layers && m.IsMoeLayer(layer) != moe) ++layer;
  std::vector<double> weights;
  const bool skip_experts = !moe && layer >= m.num_hidden_layers;
  if (layer >= m.num_hidden_layers) layer = 0;
  for (const ParamTensor& p : LayerParameterTensors(m, layer)) {
    if (skip_experts && p.family == ParamFamily::kRoutedExperts) continue;
    const double numel = static_cast<double>(p.numel()) /
                         ShardDivisor(p.family, in.plan->sizes, VocabSplitOf(in), AttentionTpDivisor(in));
    if (numel < in.zero.param_persistence_threshold) continue;
    // AutoEP's routed experts are gathered over edp in their own call per expert weight.
    weights.push_back(numel);
  }
  Zero3Layer z;
  z.modules = static_cast<double>(weights.size());
  double total = 0, regathered = 0, after = 0;
  for (double w : weights) total += w;
  for (auto it = weights.rbegin(); it != weights.rend(); ++it) {
    if (2.0 * after >= in.zero.max_reuse_distance) regathered += *it;
    after += *it;
  }
  z.regathered = total > 0 ? regathered / total : 1.0;
  return z;
}

Zero3Layer DescribeZero3Layer(const SimInput& in, bool moe) {
  if (in.link_cache == nullptr) return ComputeZero3Layer(in, moe);
  PlanMemo& memo = in.link_cache->memo;
  const int i = moe ? 1 : 0;
  if (!memo.has_zero3[i]) {
    const Zero3Layer z = ComputeZero3Layer(in, moe);
    memo.zero3_modules[i] = z.modules;
    memo.zero3_regathered[i] = z.regathered;
    memo.has_zero3[i] = true;
  }
  return Zero3Layer{memo.zero3_modules[i], memo.zero3_regathered[i]};
}

}  // namespace

WireBytes WireBytesPerElement(const SimInput& in) {
  WireBytes w;
  const double bpe = in.workload.bytes_per_param;
  w.gradient = in.workload.gradient_bytes_per_element > 0 ? in.workload.gradient_bytes_per_element : bpe;
  if (in.precision.communication_bytes > 0) w.gradient = in.precision.communication_bytes;
  if (in.plan != nullptr && SequenceShards(in) > 1 && !in.engine.megatron()) {
    w.gradient = in.precision.seq_parallel_communication_bytes;
  }
  w.param_gather = bpe;
  if (in.precision.torch_autocast && in.model != nullptr) {
    const ParamCounts c = ModelParamCounts(in);
    const double fp32 = static_cast<double>(c.by_family.at(ParamFamily::kEmbedding) +
                                            c.by_family.at(ParamFamily::kNorm));
    const double total = static_cast<double>(std::max<int64_t>(c.total, 1));
    // Only the lower_precision_safe_modules' parameters carry the low comm_dtype.
    const double low = in.precision.autocast_linear_low_precision ? in.precision.autocast_bytes : 4.0;
    w.gradient = w.param_gather = low * (1.0 - fp32 / total) + 4.0 * fp32 / total;
  }
  if (in.zero.stage == 3 && in.zero.quantized_weights) w.param_gather = 1.0 + 4.0 / 8000.0;
  return w;
}

double QuantizationKernelSeconds(const SimInput& in, double elements) {
  const Cluster& c = *in.cluster;
  const double rate = c.gpu.hbm_bytes_per_second * (c.efficiency.memory > 0 ? c.efficiency.memory : 1.0);
  return rate > 0 ? 3.0 * elements / rate + 2 * c.gpu.kernel_overhead_seconds : 0.0;
}

bool Zero3ListCollectives(const SimInput& input) {
  return input.engine.deepspeed_version < ds_release::kZero3AllGatherBase;
}

bool Zero3SynchronousFetch(const SimInput& input) {
  return input.engine.deepspeed_version < ds_release::kZero3Coalesced;
}

namespace {

// Per layer, the q/k norms whose gradient AutoTP's hook all-reduces over tp: transformers'
// tp_plan entries of style replicated_with_grad_allreduce, when DeepSpeed converts that plan.
double QkNormGradAllreduceHooks(const SimInput& in) {
  const ModelSpec& m = *in.model;
  if (in.plan->sizes.tp <= 1 || !in.plan->parallel.autotp_transformers_plan || !m.qk_norm || in.engine.megatron()) {
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

}  // namespace

std::vector<PlannedCollective> PlanCollectives(const SimInput& in, const StepTimeOptions& options) {
  if (in.plan == nullptr || in.model == nullptr || in.cluster == nullptr) return {};
  const ModelSpec& m = *in.model;
  const ParallelSizes& sizes = in.plan->sizes;
  const EngineSettings& engine = in.engine;
  const double bpe = in.workload.bytes_per_param;
  const double tokens =
      static_cast<double>(in.workload.micro_batch * in.workload.seq_len) / SequenceShards(in);
  const double h = static_cast<double>(m.hidden_size);
  const double d = static_cast<double>(m.head_dim);
  const double top_k = static_cast<double>(m.num_experts_per_tok);
  const double pp = sizes.pp;
  const double layers = static_cast<double>(m.num_hidden_layers) / pp;
  const double moe_layers = static_cast<double>(m.NumMoeLayers()) / pp;
  const double dense_layers = layers - moe_layers;
  const bool autoep = sizes.expert_parallel;
  const bool folding = autoep && sizes.tp > 1;
  // Full recompute re-runs each layer's forward, collectives included, inside backward.
  const double fwd_passes = in.workload.recompute == Recompute::kFull ? 2.0 : 1.0;
  const CommSchedule critical = CommSchedule::kCritical;
  Planner plan(in);

  // Tensor parallelism (AutoTP or Megatron): f/g pairs. Attention always; a dense MLP (or,
  // without AutoEP, the MoE block whose experts AutoTP splits like an MLP) adds a second pair.
  // One all-reduce forward (row output), one backward (column input gradient); folded MoE blocks
  // have none. Megatron SP turns each all-reduce into an all-gather plus a reduce-scatter of the
  // same S (Korthikanti et al. §4.2.2).
  const double tp_pairs = layers + dense_layers + (autoep ? 0.0 : moe_layers);
  const double tp_calls = tp_pairs * (fwd_passes + 1.0);
  const bool tp_sp = options.tp_sequence_parallel || engine.megatron_sp;
  if (tp_sp) {
    plan.Add("tp_sp_all_gather", CollectiveKind::kAllGather, GroupKind::kTp, tokens * h * bpe,
             tp_calls, critical);
    plan.Add("tp_sp_reduce_scatter", CollectiveKind::kReduceScatter, GroupKind::kTp,
             tokens * h * bpe, tp_calls, critical);
  } else {
    plan.Add("tp_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp, tokens * h * bpe,
             tp_calls, critical);
  }
  if (engine.megatron()) {
    // VocabParallelEmbedding all-reduces (or reduce-scatters under SP) its output; the parallel
    // lm_head's input copy all-reduces the input gradient in backward; vocab_parallel_cross_entropy
    // all-reduces the max, the target logit and the sum of exponentials (3 x tokens floats).
    const CollectiveKind k = tp_sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
    plan.Add("tp_embedding_reduce", k, GroupKind::kTp, tokens * h * bpe, 1, critical,
             StageScope::kFirst);
    plan.Add("tp_lm_head_reduce", k, GroupKind::kTp, tokens * h * bpe, 1, critical,
             StageScope::kLast);
    plan.Add("tp_cross_entropy_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp,
             tokens * 4.0, 3, critical, StageScope::kLast);
  }
  // DeepSpeed's AutoTP with a preset or layer_specs keeps lm_head whole in training (no
  // LmHeadLinearAllreduce, param_sharding.cc): no logits collective. From transformers' tp_plan
  // it is "colwise_gather_output" (tp_plan_converter.py, PR #8146): a column LinearLayer whose
  // logits are all-gathered over TP (gather_from_tp_region: all_gather_into_tensor forward, a
  // narrow backward), after a copy_to_tp whose backward all-reduces the input gradient. Once per
  // micro-step: the head is outside the recomputed layers.
  if (VocabSplitOf(in) == VocabSplit::kLmHeadColumns) {
    plan.Add("tp_lm_head_logits_all_gather", CollectiveKind::kAllGather, GroupKind::kTp,
             tokens * static_cast<double>(m.vocab_size) * bpe, 1, critical, StageScope::kLast);
    plan.Add("tp_lm_head_input_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp, tokens * h * bpe, 1,
             critical, StageScope::kLast);
  }

  // AutoTP's grad_allreduce hooks (auto_tp.py register_replicated_grad_hooks): transformers' plan
  // marks Qwen3's q_norm/k_norm replicated_with_grad_allreduce, and each hook sums that norm's
  // head_dim gradient over tp with a blocking dist.all_reduce, every micro-step. (Custom
  // layer_specs with grad_allreduce are drawn and scheduled but not counted here.)
  if (const double hooks = QkNormGradAllreduceHooks(in); hooks > 0) {
    plan.Add("tp_qk_norm_grad_allreduce", CollectiveKind::kAllReduce, GroupKind::kTp, d * bpe, hooks * layers,
             critical);
  }

  // Pipeline: every micro-batch sends its activations to the next stage and its gradients back,
  // once per model chunk (virtual stage). Megatron sends 1/tp of the tensor and all-gathers it
  // inside the TP group (scatter_gather_tensors_in_pipeline); DeepSpeed's PipelineEngine sends it
  // whole from every TP rank.
  if (sizes.pp > 1) {
    const double chunks = engine.engine == Engine::kMegatronLm ? engine.virtual_stages : 1.0;
    const double split =
        engine.engine == Engine::kMegatronLm && !tp_sp ? static_cast<double>(sizes.tp) : 1.0;
    const double act = tokens * h * bpe / (tp_sp ? sizes.tp : 1.0);
    plan.Add("pp_send_recv", CollectiveKind::kSendRecv, GroupKind::kPp, act / split,
             2.0 * chunks, critical);
    if (split > 1) {
      plan.Add("pp_tp_all_gather", CollectiveKind::kAllGather, GroupKind::kTp, act, 2.0 * chunks,
               critical);
    }
  }

  // Ulysses/AutoSP: all-to-alls after q, k, v and on the attention output, mirrored in backward.
  // A rank's send buffer is its s/sp tokens of every head; K/V heads are repeated up to sp.
  if (SequenceShards(in) > 1) {
    const double ulysses_calls = 2.0 * layers * (fwd_passes + 1.0);
    const double q_width = static_cast<double>(m.num_attention_heads) * d;
    // Eager Ulysses repeats K/V heads up to sp; DeepCompile's AutoSP moves what SDPA receives,
    // all N heads when the KV heads do not divide sp (transformers repeats them with a mask,
    // validate's sp-autosp-kv-heads).
    const ParallelConfig& pc = in.plan->parallel;
    const bool compiled_autosp =
        pc.deepcompile &&
        std::find(pc.compile_passes.begin(), pc.compile_passes.end(), "autosp") != pc.compile_passes.end();
    const double kv_heads_moved =
        compiled_autosp && m.num_key_value_heads % sizes.sp != 0
            ? static_cast<double>(m.num_attention_heads)
            : std::max<double>(static_cast<double>(m.num_key_value_heads), sizes.sp);
    const double kv_width = kv_heads_moved * d;
    plan.Add("ulysses_all_to_all", CollectiveKind::kAllToAll, GroupKind::kSp, tokens * q_width * bpe,
             ulysses_calls, critical);
    plan.Add("ulysses_all_to_all", CollectiveKind::kAllToAll, GroupKind::kSp, tokens * kv_width * bpe,
             ulysses_calls, critical);
  }

  if (autoep && m.is_moe()) {
    // Dispatch and combine carry k x tokens rows of h (split over the TP peers when folded),
    // forward and again in backward.
    const double fold = folding ? sizes.tp : 1.0;
    const double a2a_bytes = tokens * top_k / fold * h * bpe;
    const double a2a_calls = moe_layers * (fwd_passes + 1.0);
    plan.Add("ep_dispatch", CollectiveKind::kAllToAll, GroupKind::kEp, a2a_bytes, a2a_calls,
             critical);
    plan.Add("ep_combine", CollectiveKind::kAllToAll, GroupKind::kEp, a2a_bytes, a2a_calls,
             critical);
    // Before the dispatch, one all_to_all_single exchanges the [ep, E/ep] int32 count matrix and
    // the host reads it back (auto_ep_layer.py _split_plan_from_expert_counts): latency, not
    // bandwidth, and nothing in backward.
    plan.Add("ep_split_counts", CollectiveKind::kAllToAll, GroupKind::kEp, 4.0 * m.num_experts,
             moe_layers * fwd_passes, critical);
    if (folding) {
      // restore_combined all-gathers the k x tokens expert rows over TP; its backward all-reduces.
      const double rows_bytes = tokens * top_k * h * bpe;
      plan.Add("fold_restore_all_gather", CollectiveKind::kAllGather, GroupKind::kTp, rows_bytes,
               moe_layers * fwd_passes, critical);
      plan.Add("fold_restore_backward_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp,
               rows_bytes, moe_layers, critical);
      // ... and with each of its four _all_gather_variable_rows calls (outputs, token indices,
      // capacity slots, weights) a row-count all_gather first; the three small ones carry one
      // int64, int64 or fp32 per assignment (ep_tp_dispatch.py restore_combined): seven latency-
      // bound all-gathers per layer and forward beside the rows.
      plan.Add("fold_restore_count_all_gather", CollectiveKind::kAllGather, GroupKind::kTp, 8.0 * sizes.tp,
               4.0 * moe_layers * fwd_passes, critical);
      plan.Add("fold_restore_index_all_gather", CollectiveKind::kAllGather, GroupKind::kTp,
               tokens * top_k * (8.0 + 8.0 + 4.0) / 3.0, 3.0 * moe_layers * fwd_passes, critical);
    }
  }

  const RankParams params = CountRankParams(in);
  const ZeroSettings& zero = in.zero;
  // Folding: TP-replicated gradients are AVERAGEd over TP in an fp32 copy at the boundary (auto_ep_folding.py).
  if (folding) {
    plan.AddBucketed("fold_tp_grad_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp,
                     params.tp_replicated, 4.0, zero.reduce_bucket_size,
                     CommSchedule::kStepExposed);
  }

  // Gradient reduction. The bytes per element are the gradients' (fp32 with an fp32 accumulation
  // buffer: BF16Optimizer, Megatron's bf16 main_grad), or communication_data_type's. Under
  // torch_autocast the lower_precision_safe_modules (the Linear weights) reduce in the autocast
  // dtype and everything else (embedding, norms) in fp32.
  const WireBytes wire = WireBytesPerElement(in);
  const double grad_bytes = wire.gradient;
  const double param_gather_bytes = wire.param_gather;
  // ZeRO++ and MiCS (stage 3).
  const Cluster& cluster = *in.cluster;
  auto quant_seconds = [&](double elements) { return QuantizationKernelSeconds(in, elements); };
  const bool zero3 = zero.stage == 3;
  const bool mics = zero3 && zero.mics_shard_size > 0;
  const bool hpz = zero3 && !mics && zero.hpz_partition_size > 1;
  const int64_t gpn = std::max(cluster.gpus_per_node, 1);
  const bool qgz = zero3 && zero.quantized_gradients && sizes.world > gpn;
  // partition_activations: before a layer is recomputed its checkpointed input is all-gathered
  // over TP (checkpointing.py get_full_inputs).
  if (in.workload.recompute == Recompute::kFull && in.checkpointing.partition_activations &&
      !tp_sp) {
    plan.Add("ckpt_partition_all_gather", CollectiveKind::kAllGather, GroupKind::kTp,
             tokens * h * bpe, layers, critical);
  }
  const GroupKind dense_group = ZeroPartitionGroup(*in.plan, false);
  if (engine.engine == Engine::kMegatronLm) {
    // Megatron-LM's DDP reduces gradient buckets while backward runs (torch DDP's hooks; its
    // "local" DDP with overlap_grad_reduce): the last micro-step's backward hides them.
    plan.AddBucketed("dp_grad_reduce", CollectiveKind::kAllReduce, dense_group, params.dense,
                     grad_bytes, 2.5e7 / grad_bytes, CommSchedule::kBoundaryOverlap);
    if (sizes.pp > 1 && m.tie_word_embeddings) {
      plan.Add("pp_embedding_grad_all_reduce", CollectiveKind::kAllReduce, GroupKind::kPp,
               static_cast<double>(m.vocab_size) * h / sizes.tp * grad_bytes, 1,
               CommSchedule::kStepExposed, StageScope::kFirst);
    }
    return plan.Take();
  }

  // DeepSpeed: all-reduce once per step at ZeRO 0/1 (gradients are not partitioned, the engine
  // reduces at the accumulation boundary); reduce-scatter every micro-step at ZeRO 2/3.
  // overlap_comm runs the buckets on a side stream during backward (ZeRO >= 1 only; ZeRO-0's
  // engine all-reduce starts after backward; the PipelineEngine reduces after the last
  // micro-batch).
  const bool partitioned_grads = zero.stage >= 2;
  CollectiveKind grad_kind =
      partitioned_grads ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  if (zero.stage == 3 && !zero.stage3_reduce_scatter) grad_kind = CollectiveKind::kAllReduce;
  CommSchedule grad_schedule = CommSchedule::kStepExposed;
  if (partitioned_grads) {
    grad_schedule = zero.overlap_comm ? CommSchedule::kBackwardOverlap : critical;
  } else if (zero.stage == 1 && zero.overlap_comm && sizes.pp == 1) {
    grad_schedule = CommSchedule::kBoundaryOverlap;
  }
  // DeepCompile ZeRO-1/2: reduce_grad all-reduces each gradient bucket on its own NCCL
  // communicator while the backward graph runs (z1.cpp / z2.cpp), ZeRO-1 only in the boundary
  // micro-step's backward.
  if (zero.deepcompile && zero.stage <= 2) {
    grad_kind = CollectiveKind::kAllReduce;
    grad_schedule = zero.stage == 1 ? CommSchedule::kBoundaryOverlap : CommSchedule::kBackwardOverlap;
  }
  if (qgz && grad_kind == CollectiveKind::kReduceScatter) {
    // qgZ (stage3.py __avg_scatter_grads -> all_to_all_quant_reduce): each bucket is quantized to
    // int4 (numel / 2 bytes), exchanged inside the node, reduced and requantized to numel / L
    // values, exchanged across nodes with the ranks of the same local index, dequantized and
    // summed. Kernels: ~3 bytes of HBM traffic per gradient.
    const double calls = BucketCalls(params.dense, zero.reduce_bucket_size);
    const double elements = params.dense / calls;
    const double local = static_cast<double>(std::min<int64_t>(gpn, sizes.world));
    plan.AddOnBlocks("qgz_intra_node_all_to_all", CollectiveKind::kAllToAll, dense_group, gpn, false,
                     elements * 0.5, calls, grad_schedule, quant_seconds(elements));
    plan.AddOnBlocks("qgz_inter_node_all_to_all", CollectiveKind::kAllToAll, dense_group, gpn, true,
                     elements * 0.5 / local, calls, grad_schedule);
  } else if (mics && grad_kind == CollectiveKind::kReduceScatter) {
    // MiCS: reduce-scatter inside the shard group every micro-step, then the shard's gradients
    // all-reduced across the replica groups at the accumulation boundary (mics.py
    // allreduce_mics_shard_grads).
    const double calls = BucketCalls(params.dense, zero.reduce_bucket_size);
    plan.AddOnBlocks("mics_grad_reduce_scatter", grad_kind, dense_group, zero.mics_shard_size, false,
                     params.dense * grad_bytes / calls, calls, grad_schedule);
    plan.AddOnBlocks("mics_grad_replica_all_reduce", CollectiveKind::kAllReduce, dense_group,
                     zero.mics_shard_size, true,
                     params.dense / static_cast<double>(zero.mics_shard_size) * grad_bytes / calls,
                     calls, CommSchedule::kBoundaryOverlap);
  } else if (zero.stage == 3 && Zero3ListCollectives(in) && grad_kind == CollectiveKind::kReduceScatter) {
    // One reduce_scatter per parameter with a list of n inputs (n copies each) in old releases.
    const Zero3Layer layer = DescribeZero3Layer(in, false);
    const double calls = std::max(1.0, layer.modules) * layers;
    plan.Add("dp_grad_reduce", grad_kind, dense_group, params.dense * grad_bytes / calls, calls,
             grad_schedule, StageScope::kAll, 1.0);
  } else {
    plan.AddBucketed("dp_grad_reduce", grad_kind, dense_group, params.dense, grad_bytes,
                     zero.reduce_bucket_size, grad_schedule);
  }
  // DeepCompile's ZeRO has one communicator, over the data-parallel group (init_z1_and_2 /
  // init_z3: dc.init): routed experts reduce there too (validate: compile-deepcompile-expert-groups).
  plan.AddBucketed(zero.deepcompile ? "dp_expert_grad_reduce" : "edp_grad_reduce", grad_kind,
                   zero.deepcompile ? dense_group : GroupKind::kEdp, params.routed, grad_bytes,
                   zero.reduce_bucket_size, grad_schedule);
  if (sizes.pp > 1 && m.tie_word_embeddings && engine.megatron()) {
    // PipelineModule's TiedLayerSpec: the embedding's gradient is all-reduced between the first
    // and last stage after the pipeline drains.
    plan.Add("pp_embedding_grad_all_reduce", CollectiveKind::kAllReduce, GroupKind::kPp,
             static_cast<double>(m.vocab_size) * h / sizes.tp * grad_bytes, 1,
             CommSchedule::kStepExposed, StageScope::kFirst);
  }

  if (zero.stage == 1 || zero.stage == 2) {
    // Each rank steps its partition, then the updated bf16 parameters are all-gathered.
    plan.AddBucketed("zero_param_all_gather", CollectiveKind::kAllGather, dense_group, params.dense,
                     bpe, zero.allgather_bucket_size, CommSchedule::kStepExposed);
    plan.AddBucketed("zero_param_all_gather", CollectiveKind::kAllGather, GroupKind::kEdp,
                     params.routed, bpe, zero.allgather_bucket_size, CommSchedule::kStepExposed);
  } else if (zero.stage == 3) {
    // Parameters are gathered module by module before forward, again before a recomputed forward,
    // and again before backward (all of it without recompute; with it, the modules whose reuse
    // distance reaches max_reuse_distance). Releases before 0.6.0 fetch synchronously (critical
    // path); later ones prefetch on a side stream behind compute.
    const bool prefetch = zero.prefetch_bucket_size > 0 && !Zero3SynchronousFetch(in);
    const CommSchedule fwd = prefetch ? CommSchedule::kForwardOverlap : critical;
    const CommSchedule bwd = prefetch ? CommSchedule::kBackwardOverlap : critical;
    const double copies = Zero3ListCollectives(in) ? 1.0 : 0.0;
    const double gathered = params.dense - params.zero3_persistent;
    const Zero3Layer dense_layer = DescribeZero3Layer(in, false);
    const bool recompute = in.workload.recompute == Recompute::kFull;
    const double modules = std::max(1.0, dense_layer.modules);
    // Calls per layer and pass; the embedding and head are one more module each.
    const double calls = modules * layers + 1.0;
    // qwZ: int8 values and one fp32 scale per group of at most 8000 (CUDAQuantizer); the
    // partition is quantized before and the gathered buffer dequantized after each call.
    const double bytes_per_call = gathered * wire.param_gather / calls;
    const double quant = zero.quantized_weights ? quant_seconds(gathered / calls) : 0.0;
    const double bwd_share = recompute ? dense_layer.regathered : 1.0;
    if (mics) {
      // MiCS gathers inside the shard group.
      plan.AddOnBlocks("zero3_all_gather_fwd", CollectiveKind::kAllGather, dense_group,
                       zero.mics_shard_size, false, bytes_per_call, calls * fwd_passes, fwd, quant);
      plan.AddOnBlocks("zero3_all_gather_bwd", CollectiveKind::kAllGather, dense_group,
                       zero.mics_shard_size, false, bytes_per_call, calls * bwd_share, bwd, quant);
    } else if (hpz) {
      // hpZ: the step's first forward gathers the primary partition over the whole group; it
      // leaves the secondary copy behind, which every later gather (recomputed forward, backward,
      // the next micro-steps) reads inside the hpZ block (partition_parameters.py
      // all_gather_coalesced with use_secondary_tensor).
      const double micro = static_cast<double>(std::max<int64_t>(in.workload.grad_accum, 1));
      plan.Add("zero3_all_gather_fwd", CollectiveKind::kAllGather, dense_group, bytes_per_call,
               calls / micro, fwd, StageScope::kAll, copies, quant);
      plan.DropFloor();  // one first prefetch per micro-step: hpz_all_gather_fwd keeps it
      plan.AddOnBlocks("hpz_all_gather_fwd", CollectiveKind::kAllGather, dense_group,
                       zero.hpz_partition_size, false, bytes_per_call, calls * (fwd_passes - 1.0 / micro),
                       fwd, quant);
      plan.AddOnBlocks("hpz_all_gather_bwd", CollectiveKind::kAllGather, dense_group,
                       zero.hpz_partition_size, false, bytes_per_call, calls * bwd_share, bwd, quant);
    } else {
      plan.Add("zero3_all_gather_fwd", CollectiveKind::kAllGather, dense_group, bytes_per_call,
               calls * fwd_passes, fwd, StageScope::kAll, copies, quant);
      plan.Add("zero3_all_gather_bwd", CollectiveKind::kAllGather, dense_group, bytes_per_call,
               calls * bwd_share, bwd, StageScope::kAll, copies, quant);
    }
    if (moe_layers > 0) {
      for (auto [purpose, schedule, passes] :
           {std::tuple{"zero3_all_gather_fwd", fwd, fwd_passes},
            std::tuple{"zero3_all_gather_bwd", bwd, 1.0}}) {
        plan.Add(purpose, CollectiveKind::kAllGather, GroupKind::kEdp,
                 params.routed * param_gather_bytes / moe_layers, moe_layers * passes, schedule,
                 StageScope::kAll, copies);
      }
    }
  }
  return plan.Take();
}

}  // namespace dsp::sim
