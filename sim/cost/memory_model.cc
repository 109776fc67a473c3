// SPDX-License-Identifier: Apache-2.0
// Per-rank memory: model states per parameter family (sim/cost/model_states.h), activations per layer
// (sim/cost/activation_memory.h), communication buffers, and the peak of the most loaded pipeline
// stage. docs/cost-model.md ("Memory") states every formula with its source.
#include "sim/cost/memory_model.h"

#include <algorithm>
#include <map>
#include <array>
#include <cmath>
#include <iterator>
#include <utility>
#include <vector>

#include "core/plan/pipe_schedule.h"
#include "sim/cost/activation_memory.h"
#include "sim/cost/loss_allocations.h"
#include "sim/comm/group_links.h"
#include "sim/cost/model_states.h"
#include "sim/cost/param_sharding.h"
#include "sim/cost/pipeline_schedule_memory.h"
#include "sim/cost/zero3_saved_weights.h"

namespace dsp::sim {
namespace {

// engine.py MEMORY_OPT_ALLREDUCE_SIZE: the stage-0 gradient all-reduce flattens up to this many
// elements at a time (buffered_allreduce_fallback).
constexpr double kStage0AllreduceElements = 5e8;

// Parameters one rank of a pipeline stage holds (after TP/EP, before ZeRO).
struct StageParams {
  // Indexed by ParamFamily (kAllParamFamilies order).
  std::array<double, std::size(kAllParamFamilies)> count{};
  std::array<double, std::size(kAllParamFamilies)> persistent{};  // ZeRO-3 tensors under
                                                                   // param_persistence_threshold
  double largest_tensor = 0;                 // DeepSpeed's "largest layer" (one module's weight)
  double largest_unit = 0;                   // largest decoder layer / embedding / lm_head
  double largest_unit_dense = 0;             // the largest unit less its routed experts
  double largest_routed = 0;                 // the routed experts of the largest MoE layer
};

// One layer's tensors (or the tensors outside the layers), as per-rank shares.
using TensorShares = std::vector<std::pair<ParamFamily, double>>;

// Layers of one kind (ModelSpec::LayerKind: MoE or dense, attention kind) hold tensors of the
// same shapes, so one layer of each kind stands for all of them; this avoids naming every tensor
// of a 256-expert model on each estimate.
TensorShares SharesOf(const std::vector<ParamTensor>& tensors, const ParallelSizes& sizes,
                      VocabSplit vocab, double attention_divisor, bool megatron_experts) {
  TensorShares out;
  for (const ParamTensor& p : tensors) {
    out.emplace_back(p.family, static_cast<double>(p.numel()) /
                                   ShardDivisor(p.family, sizes, vocab, attention_divisor, megatron_experts));
  }
  return out;
}

// The per-rank shares of one layer of every kind and of the tensors outside the layers, from the
// memo a tune run shares across evaluations of one plan when there is one.
const PlanMemo& Shares(const SimInput& in, PlanMemo& local) {
  PlanMemo& memo = in.link_cache != nullptr ? in.link_cache->memo : local;
  if (memo.has_shares) return memo;
  const ModelSpec& m = *in.model;
  const ParallelSizes& sizes = in.plan->sizes;
  const VocabSplit vocab = VocabSplitOf(in);
  const double attention = AttentionTpDivisor(in);
  const bool megatron_experts = in.engine.framework().megatron_moe_options;
  memo.outside_layers = SharesOf(NonLayerParameterTensors(m), sizes, vocab, attention, megatron_experts);
  for (const ModelSpec::LayerRun& run : m.LayerKinds(0, m.num_hidden_layers)) {
    memo.layer_kinds[m.LayerKind(run.representative)] =
        SharesOf(LayerParameterTensors(m, run.representative), sizes, vocab, attention, megatron_experts);
  }
  memo.has_shares = true;
  return memo;
}

StageParams CollectStageParams(const SimInput& in, int64_t first_layer, int64_t end_layer,
                               bool first_stage, bool last_stage) {
  const ModelSpec& m = *in.model;
  PlanMemo local;
  const PlanMemo& shares = Shares(in, local);
  StageParams out;
  // `copies` tensors of `numel` elements each.
  auto add = [&](ParamFamily family, double numel, double copies = 1) {
    out.count[static_cast<size_t>(family)] += numel * copies;
    out.largest_tensor = std::max(out.largest_tensor, numel);
    if (numel < in.zero.param_persistence_threshold) {
      out.persistent[static_cast<size_t>(family)] += numel * copies;
    }
  };
  for (const auto& [family, numel] : shares.outside_layers) {
    // A tied embedding is the lm_head too: DeepSpeed's pipeline keeps a copy on the last stage.
    const bool held = family == ParamFamily::kEmbedding
                          ? first_stage || (last_stage && m.tie_word_embeddings)
                          : last_stage;  // final norm and lm_head
    if (!held) continue;
    add(family, numel);
    out.largest_unit = std::max(out.largest_unit, numel);
    out.largest_unit_dense = std::max(out.largest_unit_dense, numel);
  }
  // Layers of one kind hold the same tensors: add each kind's once, times its count.
  for (const ModelSpec::LayerRun& run : m.LayerKinds(first_layer, end_layer)) {
    double layer_numel = 0, routed = 0;
    for (const auto& [family, numel] : shares.layer_kinds.at(m.LayerKind(run.representative))) {
      add(family, numel, static_cast<double>(run.count));
      layer_numel += numel;
      if (family == ParamFamily::kRoutedExperts) routed += numel;
    }
    out.largest_unit = std::max(out.largest_unit, layer_numel);
    out.largest_unit_dense = std::max(out.largest_unit_dense, layer_numel - routed);
    out.largest_routed = std::max(out.largest_routed, routed);
  }
  return out;
}

LayerShape BaseShape(const SimInput& in) {
  const ModelSpec& m = *in.model;
  const ParallelSizes& s = in.plan->sizes;
  LayerShape shape;
  shape.seq_len = in.workload.seq_len;
  shape.micro_batch = in.workload.micro_batch;
  shape.hidden = m.hidden_size;
  shape.heads = m.num_attention_heads;
  shape.kv_heads = m.num_key_value_heads;
  shape.head_dim = m.head_dim;
  shape.ffn = m.intermediate_size;
  shape.gated_mlp = m.gated_mlp;  // SwiGLU (llama family) or GeLU (gpt2, bloom)
  // Dropout masks are saved only when the model trains with dropout (GPT-2's 0.1; the llama
  // family and BLOOM train without).
  shape.dropout = m.hidden_dropout > 0 || m.attention_dropout > 0;
  shape.flash_attention = in.engine.flash_attention();
  // DeepSpeed trains the transformers model as written; the Megatron engines run Megatron's.
  shape.hf_eager = in.engine.hf_eager();
  shape.compiled = in.zero.deepcompile;
  if (m.qk_norm) shape.qk_norm_cols = (m.num_attention_heads + m.num_key_value_heads) * m.head_dim;
  shape.op_sac = in.engine.framework().op_level_sac && in.workload.recompute == Recompute::kSelective;
  shape.rms_norm = !m.layer_norm;
  shape.megatron_sp = in.engine.megatron_sp;
  shape.vocab_parallel = in.engine.framework().megatron_tp();
  shape.fused_loss = in.engine.fused_loss;
  shape.bf16_loss = in.engine.bf16_loss;
  shape.compiled_loss = in.engine.compiled_loss();
  shape.lm_head_input_gathered = in.engine.framework().tp_always_sequence_parallel;
  if (in.engine.framework().torchtitan_loss && !in.engine.automodel_loop()) {
    shape.loss_parallel = EffectiveTp(s.tp) > 1;
    shape.logits_freed_before_backward = in.plan->sizes.pp <= 1;
    shape.tp_partial_blocks = !shape.loss_parallel ? 0 : in.engine.tp_comm_overlap ? 1 : 2;
  }
  shape.te_modules = in.engine.te_modules;
  shape.tiled_mlp = in.engine.tiled_mlp;
  shape.tp = EffectiveTp(s.tp);
  if (const double attention = AttentionTpDivisor(in); attention > 0) {
    // Uneven key-value heads: the busiest tp rank holds N0 = N/attention query heads and G0 key-
    // value heads. Activations divide heads by tp, so count tp times rank 0's heads.
    shape.heads = static_cast<int64_t>(std::llround(static_cast<double>(m.num_attention_heads) / attention)) * shape.tp;
    shape.kv_heads = (m.num_key_value_heads / shape.tp + 1) * shape.tp;
  }
  shape.ulysses_sp = SequenceShards(in);
  if (shape.ulysses_sp > 1) shape.context_parallel = in.engine.context_parallel();
  shape.top_k = m.num_experts_per_tok;
  shape.expert_ffn = m.moe_intermediate_size;
  shape.shared_expert_ffn = m.shared_expert_intermediate_size;
  shape.expert_parallel = s.expert_parallel;
  shape.fp8_saved_inputs = in.engine.fp8 && in.engine.framework().fp8 == Fp8Linear::kTransformerEngine;
  shape.megatron_experts = s.expert_parallel && in.engine.framework().megatron_moe_options;
  shape.etp = shape.megatron_experts ? static_cast<int>(std::max<int64_t>(s.etp, 1)) : 1;
  return shape;
}

LayerShape ShapeOfLayer(const SimInput& in, const LayerShape& base, int64_t layer) {
  const ModelSpec& m = *in.model;
  LayerShape shape = base;
  shape.num_experts = m.IsMoeLayer(layer) ? m.num_experts : 0;
  switch (m.LayerAttention(layer)) {
    case AttentionKind::kSliding: shape.window = m.sliding_window; break;
    case AttentionKind::kChunked: shape.window = m.attention_chunk_size; break;
    case AttentionKind::kLinear:
      shape.linear_key_cols = m.linear_num_key_heads * m.linear_key_head_dim;
      shape.linear_value_cols = m.linear_num_value_heads * m.linear_value_head_dim;
      shape.linear_value_heads = m.linear_num_value_heads;
      break;
    case AttentionKind::kFull: break;
  }
  if (m.mla()) {
    shape.qk_head_dim = m.qk_head_dim();
    shape.v_head_dim = m.v_head_dim;
    shape.kv_heads = m.num_attention_heads;  // kv_b_proj expands the latent to every head
    shape.latent_cols = 2 * m.q_lora_rank + (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank;
  }
  if (m.attention_output_gate) shape.latent_cols += m.num_attention_heads * m.head_dim / std::max(shape.tp, 1);
  return shape;
}

// Ulysses: q, k and v go through one all-to-all before attention and the output through one
// after; send and receive buffers of the q/k/v block are live together (DeepSpeed-Ulysses
// DistributedAttention / ulysses_sp.py).
double UlyssesAllToAllBytes(const LayerShape& shape, double bytes_per_value) {
  // Gated DeltaNet layers get no all-to-all (AutoSP rewrites only SDPA calls).
  if (shape.ulysses_sp <= 1 || shape.linear_value_cols > 0) return 0;
  const double kv_cols = static_cast<double>(shape.kv_heads * shape.head_dim) * 2.0 / std::max(shape.tp, 1);
  switch (shape.context_parallel) {
    case ContextParallel::kNone:
    case ContextParallel::kAllToAll: break;  // Ulysses' buffers, the key-value heads as they are
    // PyTorch's all-gather rotater: the whole sequence's K and V of the layer, gathered.
    case ContextParallel::kAllGatherKv:
      return bytes_per_value * LocalTokens(shape) * static_cast<double>(shape.ulysses_sp) * kv_cols;
    // TransformerEngine's ring: the chunk being sent and the one being received.
    case ContextParallel::kRingP2p: return 2 * bytes_per_value * LocalTokens(shape) * kv_cols;
  }
  // k/v heads are replicated up to sp when there are fewer of them than ranks (DeepSpeed's
  // Ulysses; TransformerEngine's all-to-all needs them to divide).
  const bool all_to_all = shape.context_parallel == ContextParallel::kAllToAll;
  const int64_t kv_heads = all_to_all ? shape.kv_heads : std::max<int64_t>(shape.kv_heads, shape.ulysses_sp);
  // TransformerEngine's all-to-all moves each TP rank's own heads.
  const double cols = static_cast<double>((shape.heads + 2 * kv_heads) * shape.head_dim) /
                      (all_to_all ? std::max(shape.tp, 1) : 1);
  return 2 * bytes_per_value * LocalTokens(shape) * cols;
}

// EP dispatch: send and receive buffers of every assignment's hidden row (the combine reuses them).
double ExpertAllToAllBytes(const LayerShape& moe_shape, double bytes_per_value) {
  if (!moe_shape.expert_parallel || moe_shape.num_experts <= 0) return 0;
  return 2 * bytes_per_value * ExpertAssignmentsPerRank(moe_shape) *
         static_cast<double>(moe_shape.hidden);
}

// The GEMM weights FP8 linears cast (TransformerEngine's Megatron layers, torchao's converted
// nn.Linear): the decoder layers' projections, not embeddings, norms or routers.
constexpr ParamFamily kFp8LinearFamilies[] = {ParamFamily::kAttention, ParamFamily::kLatentProj,
                                              ParamFamily::kDenseMlp, ParamFamily::kRoutedExperts,
                                              ParamFamily::kSharedExperts};
bool IsFp8Linear(ParamFamily f) { return std::ranges::find(kFp8LinearFamilies, f) != std::end(kFp8LinearFamilies); }

double LinearParams(const StageParams& params) {
  double linear = 0;
  for (ParamFamily f : kFp8LinearFamilies) linear += params.count[static_cast<size_t>(f)];
  return linear;
}

// The same without the routed experts: torchao's float8 converter swaps nn.Linear modules only,
// not torchtitan's GroupedExperts.
double TorchaoLinearParams(const StageParams& params) {
  return LinearParams(params) - params.count[static_cast<size_t>(ParamFamily::kRoutedExperts)];
}

// TransformerEngine FP8 parameters (--fp8 --fp8-param-gather under megatron-lm): the GEMM weights
// are Float8Tensors of 1 byte with no 16-bit copy (Megatron-Core fp8_utils.get_fp8_context wraps
// model construction in fp8_model_init; the distributed optimizer keeps the fp32 masters).
bool TransformerEngineFp8Params(const SimInput& in) {
  return in.engine.fp8 && in.engine.fp8_param_gather && in.engine.framework().fp8 == Fp8Linear::kTransformerEngine;
}

// Bytes per element FSDP2 gathers for the stage's parameters: bf16, or with torchao's FP8
// all-gather (--fp8 --fp8-param-gather: fsdp_utils.py WeightWithDynamicFloat8CastTensor
// fsdp_pre_all_gather casts each shard to float8 and gathers its 1-byte data) 1 byte for the linear
// weights, averaged over the stage's parameters.
double Fsdp2GatherBytesPerElement(const SimInput& in, const StageParams& params, double stage_params) {
  const double bpv = in.workload.bytes_per_param;
  if (!in.engine.fp8 || !in.engine.fp8_param_gather || stage_params <= 0) return bpv;
  return bpv - (bpv - 1.0) * std::min(1.0, TorchaoLinearParams(params) / stage_params);
}

// Model states, family by family; returns the stage's parameter count.
double AddModelStates(const SimInput& in, const StageParams& params, MemoryReport& r) {
  const MemoryConvention conv = in.workload.convention;
  const double bpv = in.workload.bytes_per_param;
  const int zero_stage = std::clamp(in.zero.stage, 0, 3);
  double total_params = 0;
  for (ParamFamily f : kAllParamFamilies) {
    const double count = params.count[static_cast<size_t>(f)];
    total_params += count;
    const int64_t n = f == ParamFamily::kRoutedExperts ? r.expert_zero_group_size : r.zero_group_size;
    ModelStateBytes st = ModelStatesPerRank(count, n, in.zero, conv, in.workload.optimizer_state_bytes_per_param);
    if (zero_stage == 3 && conv == MemoryConvention::kZeroPaper) {
      // Parameters below param_persistence_threshold are never released after being gathered:
      // each rank keeps the whole 16-bit tensor on the GPU (stage3 persistent_parameters).
      const double persistent = params.persistent[static_cast<size_t>(f)];
      const double kept_partition = in.zero.offload_param ? 0 : 2 * persistent / static_cast<double>(n);
      st.parameters_bytes += 2 * persistent - kept_partition;
    }
    // torch_autocast keeps parameters and gradients in fp32 and needs no separate fp32 master copy
    // (runtime/torch_autocast.py, PR #6993): 4 + 4 bytes, optimizer states less the master's 4.
    if (in.precision.torch_autocast && conv == MemoryConvention::kZeroPaper) {
      const double k = in.workload.optimizer_state_bytes_per_param;
      st.parameters_bytes *= 4.0 / bpv;
      st.gradients_bytes *= 4.0 / bpv;
      if (k > 4) st.optimizer_states_bytes *= (k - 4) / k;
    }
    // FSDP2 (sharded, ZeRO stage 2/3): the sharded parameter is the fp32 tensor the optimizer
    // steps (FSDPParam.sharded_param), counted in the optimizer's K bytes; the bf16 copies exist
    // only while a group is gathered (AddBuffers).
    if (in.engine.framework().gradients == GradientSync::kFsdp2 && zero_stage >= 2 &&
        conv == MemoryConvention::kZeroPaper) {
      st.parameters_bytes = 0;
    }
    // TransformerEngine FP8 parameters: the GEMM weights are 1-byte Float8Tensors.
    if (TransformerEngineFp8Params(in) && IsFp8Linear(f) && conv == MemoryConvention::kZeroPaper) {
      st.parameters_bytes /= bpv;
    }
    // An fp32 gradient accumulation buffer (BF16Optimizer, Megatron's main_grad) replaces the
    // 16-bit gradients.
    if (conv == MemoryConvention::kZeroPaper && !in.precision.torch_autocast &&
        in.workload.gradient_bytes_per_element > bpv) {
      st.gradients_bytes *= in.workload.gradient_bytes_per_element / bpv;
    }
    // hpZ: each rank also keeps 1/hpz of every partitioned 16-bit parameter, in its own dtype, on
    // the GPU unless offload_param puts it on the host (partition_parameters.py
    // _partition_param_sec). Routed experts under AutoEP are partitioned over edp, not hpZ.
    if (zero_stage == 3 && in.zero.hpz_partition_size > 1 && f != ParamFamily::kRoutedExperts &&
        conv == MemoryConvention::kZeroPaper) {
      const double partitioned = count - params.persistent[static_cast<size_t>(f)];
      const double secondary =
          (in.precision.torch_autocast ? 4.0 : bpv) * partitioned /
          static_cast<double>(in.zero.hpz_partition_size);
      if (in.zero.offload_param) {
        st.cpu_bytes += secondary;
      } else {
        st.parameters_bytes += secondary;
        r.hpz_secondary_bytes += secondary;
      }
    }
    r.by_family[f] = FamilyMemory{st.parameters_bytes, st.gradients_bytes, st.optimizer_states_bytes};
    r.parameters_bytes += st.parameters_bytes;
    r.gradients_bytes += st.gradients_bytes;
    r.optimizer_states_bytes += st.optimizer_states_bytes;
    r.cpu_bytes += st.cpu_bytes;
  }

  return total_params;
}

// What DeepCompile's offload_opt_states leaves on the GPU of a rank's `states` bytes with `budget`
// bytes to spare: the pass's tasks, per sub-group the moments (fp32, or bf16 with
// bf16_optimizer_states) then the master (fp32, or bf16 with bf16_master_weights_and_grads), popped
// from the front while the rest does not fit.
double DeepCompileResidentStates(const SimInput& in, double states, double budget) {
  const double k = in.workload.optimizer_state_bytes_per_param;
  if (k <= 0 || states <= 0) return 0;
  const double master = in.precision.low_precision_master ? 2.0 : 4.0;
  const double moment = in.precision.bf16_optimizer_states ? 2.0 : 4.0;
  const int moments = static_cast<int>(std::lround(std::max(k - master, 0.0) / moment));
  const double partition = states / k;  // the rank's parameters
  const double sub_group = in.zero.sub_group_size > 0 ? in.zero.sub_group_size : partition;
  double resident = states;
  for (double first = 0; first < partition && resident > budget; first += sub_group) {
    const double n = std::min(sub_group, partition - first);
    for (int i = 0; i <= moments && resident > budget; ++i) resident -= n * (i < moments ? moment : master);
  }
  return std::max(resident, 0.0);
}

// Activations of the stage's layers [first, end) and, on the last stage, the output layer.
void AddActivations(const SimInput& in, int stage, int64_t first, int64_t end, MemoryReport& r) {
  const ModelSpec& m = *in.model;
  const Plan& plan = *in.plan;
  const int pp = std::max(plan.sizes.pp, 1);
  const bool last_stage = stage == pp - 1;
  const double bpv = in.workload.bytes_per_param;
  // Activations: 1F1B keeps min(pp - stage, micro-batches) micro-batches in flight on a stage
  // (DeepSpeed's TrainSchedule, runtime/pipe/schedule.py; Megatron-LM's 1F1B warms up as many;
  // torch's Schedule1F1B min(n_microbatches, num_stages - stage_index)), per call of the schedule.
  const LayerShape base_shape = BaseShape(in);
  const int64_t call = ScheduleCallMicroBatches(in);
  r.in_flight_micro_batches = TrainScheduleInFlight(call, pp, stage);
  // Interleaved 1F1B: stage s warms up W = 2(p - s - 1) + (v - 1)r chunk micro-batches, r the
  // round (InterleavedRound: p for m a multiple of p), and holds one more, each of L / (p v)
  // layers: p + (p - 2s - 1) / v micro-batches of the stage's layers, p (1 + (p - 1) / (p v)) on
  // the first (Korthikanti et al. 2022 §4.2.3). Both schedules cap the warm-up at every chunk
  // micro-batch of the call, m v (Megatron-LM's forward_backward_pipelining_with_interleaving:
  // all_warmup_microbatches, are_all_microbatches_in_warmup since March 2025; torch's
  // schedules.py _get_warmup_ops: min(warmup_ops, n_microbatches * n_local_stages)): with m = p,
  // as torchtitan's default pipeline_parallel_microbatches gives, stage 0 holds m micro-batches,
  // as 1F1B does, not p + (p - 1) / v. Megatron needs m >= p; torch takes fewer.
  double in_flight = static_cast<double>(r.in_flight_micro_batches);
  const int v = InterleavedChunks(in);
  if (v > 1 && pp > 1 && (call >= pp || in.engine.framework().torch_pipelining)) {
    const double round = static_cast<double>(InterleavedRound(in, call, pp));
    const double chunks = 2.0 * (pp - stage - 1) + (v - 1.0) * round + 1.0;
    in_flight = std::min(chunks, static_cast<double>(call) * v) / v;
  }
  double per_micro_batch = 0, working = 0, all_to_all = 0;
  // Layers of one kind (ModelSpec::LayerKind) cost the same: each kind is costed once.
  struct LayerMemory {
    bool done = false;
    double saved = 0, working = 0, all_to_all = 0;
    double input = 0;  // full recompute: the checkpointed layer input alone
  };
  std::map<int, LayerMemory> kinds;
  double largest_input = 0;
  r.layer_activations_bytes.reserve(static_cast<size_t>(std::max<int64_t>(end - first, 0)));
  for (int64_t layer = first; layer < end; ++layer) {
    LayerMemory& k = kinds[m.LayerKind(layer)];
    if (!k.done) {
      const LayerShape shape = ShapeOfLayer(in, base_shape, layer);
      k.saved = LayerActivationBytes(shape, in.workload.recompute).total_bytes();
      // Op-level AC replays a layer's forward in its backward: what it did not keep of that layer
      // is live again for the layer's backward, as under full recompute.
      if (shape.op_sac) k.working = std::max(0.0, LayerActivationBytes(shape, Recompute::kNone).total_bytes() - k.saved);
      if (in.workload.recompute == Recompute::kFull) {
        k.working = LayerActivationBytes(shape, Recompute::kNone).total_bytes();
        // partition_activations: each TP rank keeps 1/tp of the checkpointed input
        // (checkpointing.py partition_activations; Megatron SP already splits it).
        if (in.checkpointing.partition_activations && !in.engine.megatron_sp) {
          k.saved /= std::max(plan.sizes.tp, 1);
        }
        k.input = k.saved;
      }
      k.working += TiledMlpShardBytes(shape);
      k.all_to_all = UlyssesAllToAllBytes(shape, bpv) + ExpertAllToAllBytes(shape, bpv);
      k.done = true;
    }
    r.layer_activations_bytes.push_back(k.saved);
    per_micro_batch += k.saved;
    largest_input = std::max(largest_input, k.input);
    working = std::max(working, k.working);
    all_to_all = std::max(all_to_all, k.all_to_all);
  }
  const bool full_recompute = in.workload.recompute == Recompute::kFull;
  // contiguous_memory_optimization: the partitioned inputs live in buffers of number_checkpoints
  // layers, allocated whole at a forward's first checkpoint (checkpointing.py).
  if (full_recompute && in.checkpointing.contiguous_memory && in.checkpointing.number_checkpoints > 0) {
    per_micro_batch = std::max(per_micro_batch, static_cast<double>(in.checkpointing.number_checkpoints) * largest_input);
  }
  // cpu_checkpointing: the checkpointed inputs go to host memory; PR #8282's offload engine
  // (0.19.6, without partition_activations) keeps the stage's last layer's on the GPU, whose
  // backward starts right away; the older paths move every one.
  if (full_recompute && in.checkpointing.cpu_checkpointing && !r.layer_activations_bytes.empty()) {
    const double kept = in.checkpointing.keep_last_on_device() ? r.layer_activations_bytes.back() : 0;
    const double host = per_micro_batch - kept;
    r.host_activations_bytes = host * in_flight;
    per_micro_batch -= host;
  }
  // The output layer's activations (the logits and the loss's tensors) are one micro-batch's: the
  // last stage runs a micro-batch's backward right after its forward, and under interleaving the
  // last model chunk does the same (Megatron's forward_backward_pipelining_with_interleaving and
  // torch's ScheduleInterleaved1F1B warm up the earlier chunks only), so they are never in flight
  // for several micro-batches the way the stage's layers are.
  if (last_stage) r.output_activations_bytes = OutputLayerActivationBytes(base_shape, m.vocab_size);
  r.recompute_working_bytes = working;
  // The logits and their fp32 gradient are freed once lm_head's backward is done, before the first
  // layer is recomputed: with full recompute the peak holds the larger of the two, not both.
  double overlap = 0;
  if (working > 0 && last_stage) overlap = std::min(working, r.output_activations_bytes);
  // torch.distributed.pipelining's stage keeps what each forward returned until that micro-batch's
  // backward (stage.py forward_one_chunk: fwd_cache[chunk] = (output_tuple, inputs)); under full
  // recompute no layer saves it (the next stage checkpoints it). Megatron's schedules free the
  // sent output's storage (deallocate_output_tensor); DeepSpeed's pipe buffers are its own.
  if (pp > 1 && in.engine.framework().torch_pipelining) {
    const double chunk_micro_batches = std::max(0.0, in_flight * v - (last_stage ? 1.0 : 0.0));
    const double output = 2.0 /* 16-bit */ * LocalTokens(base_shape) * static_cast<double>(m.hidden_size) /
                          (base_shape.megatron_sp ? std::max(base_shape.tp, 1) : 1);
    r.stage_output_bytes = chunk_micro_batches * output;
    r.pipeline_recv_bytes = TorchPipelineRecvBytes(in, stage, output, in_flight);
  }
  r.activations_bytes =
      per_micro_batch * in_flight + r.output_activations_bytes + r.stage_output_bytes + working - overlap;
  r.all_to_all_bytes = all_to_all;
  // The loss's own peak (no recompute working set yet) and the blocks it caches (loss_allocations.h).
  if (last_stage) {
    r.loss_activations_bytes = per_micro_batch * in_flight + r.output_activations_bytes + r.stage_output_bytes;
    r.loss_cached_bytes = LossPhaseCachedBytes(base_shape, m.vocab_size, in.engine.expandable_segments);
  }
}

// FSDP2's unsharded parameters and gradient buffers on a rank (torch/distributed/fsdp/_fully_shard
// _fsdp_param_group.py, _fsdp_collectives.py foreach_all_gather / foreach_reduce). Resharding
// after forward: the group being computed and the next one prefetched (2 blocks of bf16), the root
// group [norm, output] kept unsharded from its forward to its backward, and in backward one
// block's bf16 gradients with the fp32 reduce-scatter input they are cast into. Without resharding
// (ZeRO stage 2, or any pipeline: torchtitan's "default" policy) every group of the stage stays
// gathered from forward to backward; under a pipeline gradient sync waits for the last
// micro-batch, so the unsharded gradients accumulate in reduce_dtype (FSDPParam's
// unsharded_accumulated_grad, fp32) all step. Each model chunk is a PipelineStage of its own,
// reduce-scattered and freed at its own last backward (torch/distributed/pipelining/stage.py
// backward_maybe_with_nosync: set_requires_gradient_sync(False), post_backward of every group at
// last_backward); when one call of an interleaved schedule is one round (fewer than 2 pp
// micro-batches), a rank runs all of a chunk's backwards before the next chunk's, last chunk
// first (schedules.py ScheduleInterleaved1F1B), so while every activation is held one chunk's
// gradients are: 1/v of the stage's. Stage 0 is DDP: two 25 MB buckets.
// NeMo AutoModel wraps the routed experts its own way (--automodel-experts; nemo_automodel/
// components/moe/parallelizer.py apply_fsdp): left out of fully_shard (ignored_params) when expert
// parallelism covers the data-parallel ranks (its ep_shard mesh, ds-plan's edp, of one rank): no
// gathered copy, no reduce-scatter, gradients in the parameters' own .grad (counted as gradients);
// over a larger ep_shard mesh fully_shard without a MixedPrecisionPolicy, so gathered, reduced
// and accumulated in the parameters' dtype. torchtitan wraps them on the edp mesh whatever its
// size, with the blocks' policy (models/llama4/infra/parallelize.py apply_fsdp).
double Fsdp2GatheredBytes(const SimInput& in, const StageParams& params, double stage_params, int64_t expert_group) {
  const double bpv = in.workload.bytes_per_param;
  const double gathered = Fsdp2GatherBytesPerElement(in, params, stage_params);
  // MixedPrecisionPolicy(reduce_dtype=float32) (torchtitan's default, NeMo AutoModel's): the
  // reduce-scatter runs in fp32 even when bf16 parameters keep bf16 gradients (--bf16-params).
  const double reduce_bytes = in.engine.bf16_params ? 4.0 : std::max(in.workload.gradient_bytes_per_element, bpv);
  if (in.zero.stage == 0) return 2 * 2.5e7;
  // Under AutoModel's wrapping a layer's experts are a group of their own (or none), gathered
  // beside the largest group of the rest.
  double routed = 0, routed_block = 0, routed_bytes = 0, block = params.largest_unit;
  if (in.engine.automodel_experts) {
    routed = params.count[static_cast<size_t>(ParamFamily::kRoutedExperts)];
    routed_block = params.largest_routed;
    routed_bytes = expert_group > 1 ? (in.engine.bf16_params ? 2.0 : 4.0) : 0.0;
    block = params.largest_unit_dense;
  }
  const double dense = stage_params - routed;
  // One group's gradients and reduce-scatter input at a time.
  const double reduce_buffer = std::max((bpv + reduce_bytes) * block, 2 * routed_bytes * routed_block);
  const bool pipeline = in.plan->sizes.pp > 1;
  if (in.zero.stage >= 3 && !pipeline) {
    // The root group (the output projection) stays bf16: torchao's filter_fqns skip "output".
    const double root = params.count[static_cast<size_t>(ParamFamily::kLmHead)];  // the norm is tiny
    return gathered * 2 * block + routed_bytes * 2 * routed_block + bpv * root + reduce_buffer;
  }
  // AutoModel's MoE parallelizer shards model.model, not the stage's module: the stage runs a plain
  // backward and FSDP's hooks reduce-scatter every micro-batch (docs/cost-model.md), nothing
  // accumulates unsharded. (Not with BackendConfig.enable_fsdp_optimizations, whose patched stage
  // backward defers the sync to the step's last backward; no published benchmark sets it.)
  const bool accumulates = pipeline && !in.engine.automodel_experts;
  const int v = InterleavedChunks(in);
  const int64_t call = ScheduleCallMicroBatches(in);
  const bool one_round = InterleavedRound(in, call, in.plan->sizes.pp) == call;
  const double live_gradients = v > 1 && one_round ? 1.0 / v : 1.0;
  const double accumulated = accumulates ? (reduce_bytes * dense + routed_bytes * routed) * live_gradients : 0.0;
  return gathered * dense + routed_bytes * routed + accumulated + reduce_buffer;
}

// --fp8 under TransformerEngine: each linear weight's fp8 copy and its transpose (the column-wise
// data Hopper's weight-gradient GEMM reads), cached from the first micro-batch to the step's end
// (transformer_engine/pytorch/module/linear.py, weight_workspace with is_first_microbatch): 2 bytes
// per GEMM weight on the rank. With FP8 parameters the weight is the fp8 copy and only its transpose
// is extra (TE 2.2 float8_tensor.py Float8Tensor.update_usage builds _transpose on Hopper): 1 byte.
// torchao's Float8Linear casts on the fly and caches nothing.
double Fp8WeightCopyBytes(const SimInput& in, const StageParams& params) {
  if (!in.engine.fp8 || in.engine.framework().fp8 != Fp8Linear::kTransformerEngine) return 0;
  return (TransformerEngineFp8Params(in) ? 1.0 : 2.0) * LinearParams(params);
}

// ZeRO's communication buffers and the all-to-all buffers.
void AddBuffers(const SimInput& in, const StageParams& params, double total_params, MemoryReport& r) {
  const MemoryConvention conv = in.workload.convention;
  const double bpv = in.workload.bytes_per_param;
  const int zero_stage = std::clamp(in.zero.stage, 0, 3);
  // ZeRO communication buffers.
  const double reduce_bucket = in.zero.reduce_bucket_size;
  if (conv == MemoryConvention::kDeepSpeedEstimator) {
    // The estimators count no buckets; at stage 3 they add 4 x the largest module.
    if (zero_stage == 3) r.zero_buffers_bytes = DeepSpeedZero3LayerBytes(params.largest_tensor);
  } else if (in.engine.framework().gradients == GradientSync::kFsdp2) {
    r.zero_buffers_bytes = Fsdp2GatheredBytes(in, params, total_params, r.expert_zero_group_size);
  } else if (zero_stage == 0) {
    r.zero_buffers_bytes = bpv * std::min(kStage0AllreduceElements, total_params);
  } else if (zero_stage <= 2) {
    // stage_1_and_2.py setup_buckets: one reduce_bucket_size buffer, two with overlap_comm.
    r.zero_buffers_bytes = bpv * reduce_bucket * (in.zero.overlap_comm ? 2 : 1);
  } else {
    // stage3.py: one reduce bucket, plus the gathered 16-bit parameters in flight: the unit being
    // computed and the prefetch bucket ahead of it, capped by max_live_parameters but never below
    // the module being computed and the one prefetched behind it (the coordinator always issues
    // the next fetch).
    const double live = std::max(2 * params.largest_tensor,
                                 std::min(in.zero.max_live_parameters,
                                          params.largest_unit + in.zero.prefetch_bucket_size));
    r.zero_buffers_bytes = bpv * reduce_bucket + bpv * live;
  }
  r.fp8_weight_bytes = Fp8WeightCopyBytes(in, params);
  r.buffers_bytes = r.zero_buffers_bytes + r.all_to_all_bytes + r.fp8_weight_bytes + r.pipeline_recv_bytes;
  r.cpu_bytes += r.host_activations_bytes;

  r.peak_bytes = r.parameters_bytes + r.gradients_bytes + r.optimizer_states_bytes +
                 r.activations_bytes + r.buffers_bytes;
  r.loss_peak_bytes = r.peak_bytes - r.activations_bytes + r.loss_activations_bytes;
  // DeepCompile's offload_opt_states keeps resident "whatever the memory budget allows"
  // (compile/config.py) and sends the rest to pinned host memory through forward and backward; the
  // optimizer step has them all back (AddOptimizerStepPeak counts that peak under the zero-paper
  // convention; the deepspeed convention has no step peak). The budget is the pass's
  // (compile/passes/offload_adam_states.py offload_opt_states_inc, 0.19.6): total_memory() x
  // (1 - MARGIN), MARGIN = 0.2, against the peak profiled with the states on the host; it offloads
  // whole tensors, sub-group by sub-group (ZeRO-3's sub_group_size parameters of the partition),
  // each sub-group's exp_avg, exp_avg_sq and master copy in that order, until the rest fits.
  if (in.zero.deepcompile_offload_opt_states && in.cluster != nullptr) {
    constexpr double kPassMargin = 0.2;
    const double without = r.peak_bytes - r.optimizer_states_bytes;
    const double budget = in.cluster->gpu.hbm_bytes * (1 - kPassMargin) - without;
    const double resident = DeepCompileResidentStates(in, r.optimizer_states_bytes, budget);
    r.offloaded_optimizer_states_bytes = r.optimizer_states_bytes - resident;
    r.cpu_bytes += r.offloaded_optimizer_states_bytes;
    r.peak_bytes = without + resident;
    r.loss_peak_bytes -= r.offloaded_optimizer_states_bytes;
  }
}

void AddOptimizerStepPeak(const SimInput& in, const StageParams& params, MemoryReport& r) {
  const MemoryConvention conv = in.workload.convention;
  const double bpv = in.workload.bytes_per_param;
  const int zero_stage = std::clamp(in.zero.stage, 0, 3);
  // The optimizer step runs after backward freed the activations, with the gradients it casts.
  if (conv == MemoryConvention::kZeroPaper && zero_stage >= 1 && !in.zero.offload_optimizer) {
    const double grad_bytes = in.precision.torch_autocast ? 4.0
                              : in.workload.gradient_bytes_per_element > 0 ? in.workload.gradient_bytes_per_element
                                                                            : bpv;
    // The rank's optimizer partition in elements (dense over the ZeRO group, experts over edp).
    double partition = 0;
    for (ParamFamily f : kAllParamFamilies) {
      const double n = static_cast<double>(f == ParamFamily::kRoutedExperts ? r.expert_zero_group_size
                                                                             : r.zero_group_size);
      partition += params.count[static_cast<size_t>(f)] / std::max(n, 1.0);
    }
    // The master weights' dtype: fp32, or bf16 with bf16_master_weights_and_grads.
    const double master = in.precision.low_precision_master ? 2.0 : 4.0;
    if (in.engine.framework().gradients == GradientSync::kFsdp2) {
      // torch's AdamW steps the sharded fp32 parameters and gradients in place (foreach).
      r.optimizer_step_transient_bytes = 0;
    } else if (zero_stage == 3) {
      // One sub group at a time: flattened in the gradients' dtype, then cast to the master's.
      r.optimizer_step_transient_bytes =
          (grad_bytes + (master > grad_bytes ? master : 0.0)) * std::min(partition, in.zero.sub_group_size);
    } else if (grad_bytes < master) {
      // The whole partition cast to fp32 (a no-op cast when the gradients are fp32 already).
      r.optimizer_step_transient_bytes = 4.0 * partition;
    }
    r.optimizer_step_peak_bytes = r.parameters_bytes + r.gradients_bytes + r.optimizer_states_bytes +
                                  r.zero_buffers_bytes + r.optimizer_step_transient_bytes;
    r.peak_bytes = std::max(r.peak_bytes, r.optimizer_step_peak_bytes);
  }
}

// Whether the peak and the allowances fit the GPU, and the node's host memory.
void CheckFit(const SimInput& in, MemoryReport& r) {
  const Plan& plan = *in.plan;
  r.hbm_bytes = in.cluster != nullptr ? in.cluster->gpu.hbm_bytes : 0;
  if (in.cluster != nullptr) {
    // The cluster file's allowances: fragmentation of what the caching allocator holds, and what
    // the CUDA context, NCCL and cuBLAS reserve.
    const double fragmentation = in.engine.expandable_segments ? 0.0 : in.cluster->memory.fragmentation;
    r.allowance_bytes = r.peak_bytes * fragmentation + in.cluster->memory.reserved_bytes;
  }
  r.fits = in.cluster != nullptr && r.peak_bytes + r.allowance_bytes <= r.hbm_bytes;
  if (in.cluster != nullptr) {
    // Every rank of a node shares its host memory (offloaded states, host checkpoints).
    const int64_t world = std::max<int64_t>(plan.sizes.world, 1);
    const int64_t per_node = in.cluster->gpus_per_node > 0 ? std::min<int64_t>(in.cluster->gpus_per_node, world) : 1;
    r.node_host_bytes = r.cpu_bytes * static_cast<double>(per_node);
    r.host_memory_bytes = in.cluster->host_memory_bytes;
    r.host_fits = r.host_memory_bytes <= 0 || r.node_host_bytes <= r.host_memory_bytes;
    r.fits = r.fits && r.host_fits;
  }
}

MemoryReport EstimateStage(const SimInput& in, int stage) {
  const ModelSpec& m = *in.model;
  const Plan& plan = *in.plan;
  const int pp = std::max(plan.sizes.pp, 1);
  const int64_t layers = m.num_hidden_layers;
  // Uniform split; the first layers % pp stages take one extra layer.
  const int64_t base = layers / pp, extra = layers % pp;
  const int64_t first = stage * base + std::min<int64_t>(stage, extra);
  const int64_t end = first + base + (stage < extra ? 1 : 0);
  const bool first_stage = stage == 0, last_stage = stage == pp - 1;

  MemoryReport r;
  r.pipeline_stage = stage;
  r.zero_group_size = GroupSizeOf(plan, ZeroPartitionGroup(plan, false));
  // MiCS partitions the dense model states over its shard group instead (mics.py
  // create_mics_comm_groups: blocks of mics_shard_size consecutive ranks).
  if (in.zero.stage == 3 && in.zero.mics_shard_size > 0) {
    r.zero_group_size = std::min<int64_t>(r.zero_group_size, in.zero.mics_shard_size);
  }
  r.expert_zero_group_size = GroupSizeOf(plan, ZeroPartitionGroup(plan, true));
  const StageParams params = CollectStageParams(in, first, end, first_stage, last_stage);
  const double total_params = AddModelStates(in, params, r);
  AddActivations(in, stage, first, end, r);
  AddZero3SavedWeights(in, params.count[static_cast<size_t>(ParamFamily::kRoutedExperts)], last_stage, r);
  AddBuffers(in, params, total_params, r);
  AddOptimizerStepPeak(in, params, r);
  // Not in the fit: a failed cudaMalloc frees whole cached segments and retries (loss_peak_bytes
  // keeps backward's buffers: what is reserved stays so).
  r.reserved_peak_bytes = std::max(r.peak_bytes, r.loss_cached_bytes > 0 ? r.loss_peak_bytes + r.loss_cached_bytes : 0.0);
  CheckFit(in, r);
  return r;
}

}  // namespace

MemoryReport EstimateMemory(const SimInput& input) {
  if (input.plan == nullptr || input.model == nullptr) return MemoryReport{};
  const int pp = std::max(input.plan->sizes.pp, 1);
  MemoryReport best = EstimateStage(input, 0);
  if (pp > 1) {
    // The first stage holds the most micro-batches, the last one the lm_head and the logits.
    MemoryReport last = EstimateStage(input, pp - 1);
    if (last.peak_bytes > best.peak_bytes) best = std::move(last);
  }
  return best;
}

MemoryReport EstimateStageMemory(const SimInput& input, int stage) {
  if (input.plan == nullptr || input.model == nullptr) return MemoryReport{};
  return EstimateStage(input, std::clamp(stage, 0, std::max(input.plan->sizes.pp, 1) - 1));
}

}  // namespace dsp::sim
