// SPDX-License-Identifier: Apache-2.0
#include "sim/session/evaluation.h"

#include <algorithm>
#include <cmath>

#include "core/config/batch_triple.h"
#include "core/config/config_view.h"
#include "core/schema/schema_check.h"
#include "core/json/hjson_parser.h"
#include "core/rules/autoep_detection.h"
#include "core/rules/ds_semantics.h"

namespace dsp::sim {
namespace {

struct Batch {
  int64_t micro = 0;
  int64_t accum = 0;
};

// DeepSpeed's batch fill-in (runtime/config.py _set_batch_related_parameters) with the
// world size DeepSpeedConfig divides by: the full world with AutoTP, world / sequence_parallel_size
// when that key is set, the pipeline data-parallel size with pp. Validation already checked the
// triple, so only "auto" values (deferred to the Hugging Face Trainer) can be missing here.
Result<Batch> FillBatch(const Json& config, int64_t world, int64_t pp, int64_t mpu_tp, int64_t cp) {
  ConfigView v(config);
  auto b = v.IntNullUnset("/train_batch_size"), m = v.IntNullUnset("/train_micro_batch_size_per_gpu"),
       g = v.IntNullUnset("/gradient_accumulation_steps");
  for (const auto* s : {&b, &m, &g}) {
    if (s->is_auto()) {
      return Error{DottedName(s->pointer) + " is \"auto\": simulate needs the value the Trainer would fill in "
                   "(--set " + DottedName(s->pointer) + "=N)"};
    }
  }
  if (!b.present() && !m.present()) {
    return Error{"the config sets neither train_batch_size nor train_micro_batch_size_per_gpu "
                 "(elasticity?): pass --set train_micro_batch_size_per_gpu=N"};
  }
  auto ws = BatchWorldSize(v, world, pp, mpu_tp, cp);
  if (!ws) return Error{"no world size for the batch triple"};
  const BatchTriple t = FillBatchTriple(b.opt(), m.opt(), g.opt(), ws->ws);
  Batch out{static_cast<int64_t>(t.micro), static_cast<int64_t>(t.gas)};
  if (out.micro <= 0 || out.accum <= 0) return Error{"the batch triple does not resolve to positive sizes"};
  return out;
}

// --tp-comm-overlap, worded for the command line (TpCommOverlapBlocker says what is missing).
Status CheckTpCommOverlapFlag(const FrameworkProfile& fw, const PlanKnobs& k) {
  const EngineSettings& e = k.engine;
  switch (TpCommOverlapBlocker(fw, k.megatron_tp, e.megatron_sp, e.torch_compile, e.te_modules)) {
    case TpOverlapBlocker::kNone: return Status::Ok();
    case TpOverlapBlocker::kNoOverlap:
      return Error{"--tp-comm-overlap needs --engine megatron-lm (TransformerEngine's userbuffers) or fsdp2 with "
                   "--torch-compile (torchtitan's async TP)"};
    case TpOverlapBlocker::kNoTensorParallel: return Error{"--tp-comm-overlap needs --tp of 2 or more"};
    case TpOverlapBlocker::kNeedsSequenceParallel: return Error{"--tp-comm-overlap needs --megatron-sp"};
    case TpOverlapBlocker::kNeedsCompile:
      return Error{"--tp-comm-overlap under fsdp2 is torchtitan's async TP: it needs --torch-compile"};
    case TpOverlapBlocker::kTeModules:
      return Error{"--tp-comm-overlap (torchtitan's async TP) fuses PyTorch's matmuls: not with --te-modules"};
  }
  return Status::Ok();
}

Status CheckEngine(const PlanKnobs& k, const Cluster& cluster) {
  const EngineSettings& e = k.engine;
  const FrameworkProfile& fw = e.framework();
  if (!fw.megatron_tp()) {
    if (k.megatron_tp > 0) {
      return Error{"--tp is the tensor-parallel size of --engine megatron-lm, megatron-deepspeed and fsdp2 "
                   "(DeepSpeed's AutoTP size is tensor_parallel.autotp_size)"};
    }
    if (e.megatron_sp) return Error{"--megatron-sp needs --engine megatron-lm or megatron-deepspeed"};
  }
  if (e.virtual_stages > 1 && !fw.interleaved_pipeline) {
    return Error{"--virtual-stages needs --engine megatron-lm or fsdp2 (DeepSpeed's PipelineEngine has no "
                 "interleaved schedule)"};
  }
  if (k.cp > 1 && fw.context_parallel == ContextParallel::kNone) {
    return Error{"--cp needs --engine megatron-lm or fsdp2 (DeepSpeed's sequence parallelism is Ulysses: "
                 "sequence_parallel_size in the config)"};
  }
  if (k.ep > 1 && !fw.expert_parallel_flag) {
    return Error{"--ep needs --engine megatron-lm or fsdp2 (DeepSpeed's expert parallelism is AutoEP: "
                 "expert_parallel.autoep_size in the config)"};
  }
  if (e.fp8) {
    if (fw.fp8 == Fp8Linear::kNone) {
      return Error{"--fp8 needs --engine megatron-lm (TransformerEngine) or fsdp2 (torchao float8)"};
    }
    if (cluster.gpu.Fp8PeakFlops() <= 0) {
      return Error{"--fp8: the cluster's GPU has no FP8 tensor cores (gpu.peak_fp8_flops_per_second is 0)"};
    }
  }
  if (e.megatron_sp && k.megatron_tp <= 1) return Error{"--megatron-sp needs --tp of 2 or more"};
  if (e.tp_comm_overlap) {
    if (Status s = CheckTpCommOverlapFlag(fw, k); !s.ok()) return s;
  }
  if (e.tiled_mlp && fw.op_level_sac && k.recompute == Recompute::kSelective) {
    return Error{"--tiled-mlp with --engine fsdp2 --recompute selective: torchtitan's op-level activation "
                 "checkpointing and TiledMLP are not modelled together"};
  }
  if ((e.fused_loss || e.tiled_mlp) && !fw.trains_transformers_modules) {
    return Error{std::string(e.fused_loss ? "--fused-loss (Liger-Kernel's" : "--tiled-mlp (DeepSpeed's TiledMLP") +
                 " patches transformers' modules): use it with --engine deepspeed or fsdp2"};
  }
  if (e.cp_comm != ContextParallel::kNone && fw.context_parallel != ContextParallel::kRingP2p) {
    return Error{"--cp-comm-type is Megatron-Core's: use it with --engine megatron-lm"};
  }
  if (k.etp > 0 && !fw.megatron_moe_options) return Error{"--etp needs --engine megatron-lm"};
  if ((e.moe_grouped_gemm || e.moe_dispatcher != MoeDispatcher::kAllToAll) && !fw.megatron_moe_options) {
    return Error{"--moe-grouped-gemm and --moe-token-dispatcher are Megatron-Core's: use them with --engine megatron-lm"};
  }
  if (e.bf16_grad_buffer && !fw.megatron_precision_options) {
    return Error{"--bf16-grad-buffer is Megatron-Core's gradient buffer: use it with --engine megatron-lm (DeepSpeed's "
                 "config says its own: data_types.grad_accum_dtype)"};
  }
  const bool fsdp2 = fw.gradients == GradientSync::kFsdp2;
  if (e.bf16_params && !fsdp2) {
    return Error{"--bf16-params is FSDP2's parameter dtype: use it with --engine fsdp2 (DeepSpeed's config says "
                 "its own: bf16.bf16_master_weights_and_grads; Megatron's: --bf16-optimizer-states)"};
  }
  if (e.bf16_optimizer_states && !fw.megatron_precision_options && !(fsdp2 && e.bf16_params)) {
    return Error{fsdp2 ? "--bf16-optimizer-states under fsdp2 needs --bf16-params: torch's optimizers keep their "
                         "states in the parameters' dtype"
                       : "--bf16-optimizer-states is NeMo's distributed_fused_adam dtype: use it with --engine "
                         "megatron-lm, or fsdp2 with --bf16-params (DeepSpeed's config says its own: "
                         "bf16.bf16_master_weights_and_grads, bf16_optimizer_states)"};
  }
  if (e.bf16_loss && !fw.trains_transformers_modules) {
    return Error{"--bf16-loss changes a PyTorch cross-entropy's upcast: use it with --engine deepspeed or fsdp2 "
                 "(Megatron's fused vocab-parallel cross-entropy computes in fp32)"};
  }
  if (e.bf16_loss && e.fused_loss) return Error{"--bf16-loss and --fused-loss: Liger's fused loss never upcasts"};
  if (e.automodel_experts && !fsdp2) {
    return Error{"--automodel-experts is how NeMo AutoModel wraps experts in FSDP2: use it with --engine fsdp2"};
  }
  if (e.automodel_experts && k.ep <= 1) return Error{"--automodel-experts wraps expert-parallel experts: it needs --ep"};
  if (e.fake_balanced_gate && !fsdp2) {
    return Error{"--fake-balanced-gate is NeMo AutoModel's FakeBalancedGate on FSDP2: use it with --engine fsdp2"};
  }
  if (e.torch_compile && !fsdp2) {
    return Error{"--torch-compile is torchtitan's compile.enable on FSDP2: use it with --engine fsdp2 (DeepSpeed's "
                 "compiler is compile.deepcompile in the config; the megatron engines run fused kernels)"};
  }
  if (e.eager_loss && !e.torch_compile) {
    return Error{"--eager-loss says torch.compile leaves the loss out: give it with --torch-compile"};
  }
  if (e.fake_balanced_gate && k.ep <= 1) {
    return Error{"--fake-balanced-gate routes tokens to expert-parallel experts: it needs --ep"};
  }
  if (e.pipeline_schedule_micro_batches < 0) return Error{"--pp-schedule-micro-batches must be 1 or more"};
  if (e.pipeline_schedule_micro_batches > 0) {
    // Megatron-LM's forward_backward_func and DeepSpeed's PipelineEngine.train_batch run every
    // micro-batch of the step in one schedule; torchtitan and NeMo AutoModel call theirs per local batch.
    if (!fw.pipeline_calls_per_local_batch) {
      return Error{"--pp-schedule-micro-batches is how torchtitan and NeMo AutoModel step their pipeline schedule "
                   "(once per local batch): use it with --engine fsdp2 (Megatron-LM and DeepSpeed run the whole "
                   "step in one schedule)"};
    }
    if (k.pp <= 1) return Error{"--pp-schedule-micro-batches splits a pipeline's micro-batches: it needs --pp"};
  }
  if (e.te_modules && !fsdp2) {
    return Error{"--te-modules is NeMo AutoModel's TransformerEngine backend on FSDP2: use it with --engine fsdp2 "
                 "(the megatron engines always run fused modules)"};
  }
  if (e.fp8_param_gather) {
    if (!fw.fp8_param_gather) return Error{"--fp8-param-gather needs --engine megatron-lm or fsdp2"};
    if (!e.fp8) return Error{"--fp8-param-gather needs --fp8"};
  }
  return Status::Ok();
}

// int64 token counts and double FLOPs stay exact far beyond any real run; past 2^40 tokens per
// micro-batch they would not. Each call of the pipeline schedule runs a whole local batch
// (local_batch_size / pipeline_parallel_microbatch_size micro-batches), and a step is a whole
// number of them.
Status CheckBatch(const Batch& batch, int64_t seq_len, const EngineSettings& engine) {
  if (batch.micro > (int64_t{1} << 30) || batch.accum > (int64_t{1} << 30) ||
      batch.micro > (int64_t{1} << 40) / std::max<int64_t>(seq_len, 1)) {
    return Error{"micro-batch " + std::to_string(batch.micro) + " x sequence length " + std::to_string(seq_len) +
                 " (accumulation " + std::to_string(batch.accum) +
                 ") is beyond what the cost model handles (2^40 tokens per micro-batch, 2^30 micro-batches)"};
  }
  const int64_t n = engine.pipeline_schedule_micro_batches;
  if (n <= 0 || batch.accum % n == 0) return Status::Ok();
  return Error{"--pp-schedule-micro-batches " + std::to_string(n) + " does not divide the step's " +
               std::to_string(batch.accum) +
               " micro-batches per rank: each call of the schedule runs a whole local batch "
               "(local_batch_size / pipeline_parallel_microbatch_size), and the step is a whole number of them"};
}

// --virtual-stages needs pipeline stages and layers for every chunk: evenly divided under
// Megatron's schedules, at least one each under torch.distributed.pipelining.
Status CheckVirtualStages(const PlanKnobs& knobs, const ModelSpec& model) {
  const EngineSettings& engine = knobs.engine;
  if (engine.virtual_stages <= 1) return Status::Ok();
  const int64_t chunks = knobs.pp * engine.virtual_stages;
  const std::string flag = "--virtual-stages " + std::to_string(engine.virtual_stages);
  const std::string layers = std::to_string(model.num_hidden_layers);
  if (engine.framework().uneven_pipeline_chunks) {
    if (knobs.pp <= 1 || model.num_hidden_layers < chunks) {
      return Error{flag + " needs --pp > 1 and at least one layer per chunk (" + layers + " layers, " +
                   std::to_string(chunks) + " chunks)"};
    }
  } else if (knobs.pp <= 1 || model.num_hidden_layers % chunks != 0) {
    return Error{flag + " needs --pp > 1 and the layers (" + layers + ") divisible by pp x virtual stages"};
  }
  return Status::Ok();
}

// What the config asks of ZeRO that the engine's optimizer does not do: Megatron-Core's
// distributed optimizer is ZeRO-1's partitioning (no stage 2/3), FSDP2 shards parameters and
// gradients together (stage 2: no reshard after forward, 3: full shard; nothing is stage 1), and
// only DeepSpeed offloads optimizer states or parameters to the host.
Status CheckZeroAgainstEngine(const EngineSettings& engine, const ZeroSettings& zero) {
  const FrameworkProfile& fw = engine.framework();
  const std::string name(fw.name);
  if (zero.stage > fw.max_zero_stage) {
    return Error{"--engine " + name + " runs ZeRO stage " + std::to_string(fw.max_zero_stage) +
                 " at most (its distributed optimizer partitions the optimizer states); the config asks for stage " +
                 std::to_string(zero.stage) + ": use --engine fsdp2 or deepspeed to shard gradients and parameters"};
  }
  if (fw.gradients == GradientSync::kFsdp2 && zero.stage == 1) {
    return Error{"--engine fsdp2 has no ZeRO stage 1: FSDP2 shards parameters, gradients and optimizer states "
                 "together; use stage 2 (no reshard after forward) or 3 (full shard), or 0 (DDP)"};
  }
  // --fp8-param-gather changes an all-gather of parameters: Megatron's needs the distributed
  // optimizer or torch FSDP2 (core_v0.13.0 arguments.py validate_args), torchtitan's a sharded
  // data-parallel dimension (components/quantization/float8.py enables it only with FSDP).
  if (engine.fp8_param_gather && zero.stage == 0) {
    return Error{"--fp8-param-gather: ZeRO stage 0 gathers no parameters (" +
                 std::string(fw.gradients == GradientSync::kFsdp2 ? "FSDP2 shards at stage 2 or 3"
                                                                   : "Megatron's distributed optimizer is stage 1") +
                 ")"};
  }
  if (!fw.offload && (zero.offload_optimizer || zero.offload_param)) {
    return Error{"--engine " + name + ": the config offloads to the host (zero_optimization.offload_*), which "
                 "ds-plan models for DeepSpeed's ZeRO-Offload only"};
  }
  return Status::Ok();
}

// --ep and --cp against the model and the sequence: experts that divide over the EP ranks (a
// dense model has none), tp 1 with command-line EP (expert-tensor parallelism and the
// sequence-parallel dispatch under TP are not modelled yet), and a sequence that splits into the
// 2 x cp load-balanced chunks TransformerEngine and PyTorch's context_parallel both need.
Status CheckCommandLineSizes(const PlanKnobs& knobs, const ModelSpec& model, int64_t seq_len) {
  if (knobs.ep > 1) {
    if (!model.is_moe()) return Error{"--ep " + std::to_string(knobs.ep) + ": the model has no routed experts"};
    if (model.num_experts % knobs.ep != 0) {
      return Error{"--ep " + std::to_string(knobs.ep) + " does not divide the model's " +
                   std::to_string(model.num_experts) + " experts"};
    }
    const FrameworkProfile& fw = knobs.engine.framework();
    if (knobs.etp > std::max<int64_t>(knobs.megatron_tp, 1)) {
      return Error{"--etp " + std::to_string(knobs.etp) + " above --tp " + std::to_string(std::max<int64_t>(knobs.megatron_tp, 1)) +
                   ": experts split over more ranks than the attention is not modelled"};
    }
    if (knobs.megatron_tp > 1 && !fw.megatron_moe_options) {
      return Error{"--ep with --tp " + std::to_string(knobs.megatron_tp) + " under --engine " + std::string(fw.name) +
                   ": torchtitan's expert-tensor parallelism is not modelled; plan it with --tp 1"};
    }
  }
  // megatron/core/transformer/moe/moe_layer.py MoELayer.forward: "During training, performance may
  // degrade if MoE and tensor parallelism are enabled without also enabling sequence parallelism."
  if (model.is_moe() && knobs.engine.framework().megatron_moe_options && knobs.megatron_tp > 1 &&
      !knobs.engine.megatron_sp) {
    return Error{"a MoE model with --tp " + std::to_string(knobs.megatron_tp) +
                 " needs --megatron-sp: Megatron-Core's MoELayer raises a ValueError when MoE and tensor "
                 "parallelism train without sequence parallelism"};
  }
  if (knobs.etp > 0) {
    if (knobs.ep <= 1) return Error{"--etp is the experts' tensor-parallel size: it needs --ep"};
    if (model.num_experts > 0 && model.moe_intermediate_size % knobs.etp != 0) {
      return Error{"--etp " + std::to_string(knobs.etp) + " does not divide the experts' width (" +
                   std::to_string(model.moe_intermediate_size) + ")"};
    }
  }
  if (knobs.cp > 1 && seq_len % (2 * knobs.cp) != 0) {
    return Error{"--cp " + std::to_string(knobs.cp) + ": the sequence (" + std::to_string(seq_len) +
                 " tokens) must split into 2 x cp load-balanced chunks"};
  }
  return Status::Ok();
}

// TransformerEngine's all-to-all context parallelism moves whole heads (AttnFuncWithCPAndQKVOA2A
// asserts each TP rank's query and key-value heads divide by cp).
Status CheckAllToAllHeads(const PlanKnobs& knobs, const ModelSpec& model, int64_t mpu_tp) {
  if (knobs.engine.context_parallel() != ContextParallel::kAllToAll || knobs.cp <= 1) return Status::Ok();
  const int64_t tp = std::max<int64_t>(mpu_tp, 1);
  const int64_t kv = model.num_key_value_heads / tp, q = model.num_attention_heads / tp;
  if (kv % knobs.cp != 0 || q % knobs.cp != 0) {
    return Error{"--cp-comm-type a2a: each TP rank's " + std::to_string(kv) + " key-value and " + std::to_string(q) +
                 " query heads must divide by --cp " + std::to_string(knobs.cp)};
  }
  return Status::Ok();
}

// A figure that is not a finite number (inputs at the edge of double's range: a huge sequence or
// batch) must never reach a report or a renderer: the error names it.
Status EstimatesAreFinite(const MemoryReport& memory, const TimeReport& time) {
  const std::pair<const char*, double> figures[] = {
      {"peak memory", memory.peak_bytes},       {"host memory", memory.cpu_bytes},
      {"step time", time.step_seconds},         {"tokens per second", time.tokens_per_second},
      {"MFU", time.mfu},                        {"compute time", time.compute_seconds}};
  for (const auto& [name, value] : figures) {
    if (!std::isfinite(value)) {
      return Error{std::string("the estimated ") + name + " is not a finite number: the inputs (sequence "
                   "length, batch, model or cluster figures) are outside what the cost model handles"};
    }
  }
  return Status::Ok();
}

// The plan's sizes beyond the config: world, pipeline, the engine's tp, cp, ep and etp.
PlanInputs PlanInputsOf(const PlanKnobs& knobs, const ResolvedWorld& world, int64_t mpu_tp) {
  PlanInputs inputs;
  inputs.world_size = world.world_size;
  inputs.gpus_per_node = world.gpus_per_node;
  inputs.pp = knobs.pp;
  inputs.mpu_tp = mpu_tp;
  inputs.cp = knobs.cp > 1 ? knobs.cp : 0;
  inputs.ep = knobs.ep > 1 ? knobs.ep : 0;
  // Megatron-Core's --expert-tensor-parallel-size defaults to the tensor-parallel size
  // (core_v0.12.0 megatron/training/arguments.py validate_args).
  if (inputs.ep > 0 && knobs.engine.framework().megatron_moe_options) {
    inputs.etp = knobs.etp > 0 ? knobs.etp : std::max<int64_t>(mpu_tp, 1);
  }
  // Megatron lays ranks out tp-dp-pp (its mpu, DeepSpeed's PipelineModule topology alike).
  inputs.layout = knobs.engine.framework().rank_layout;
  return inputs;
}

}  // namespace

bool PlanKnobs::operator==(const PlanKnobs& o) const {
  return world_size == o.world_size && nodes == o.nodes && gpus_per_node == o.gpus_per_node && pp == o.pp &&
         seq_len == o.seq_len && recompute == o.recompute && convention == o.convention &&
         engine.engine == o.engine.engine && engine.megatron_sp == o.engine.megatron_sp &&
         engine.virtual_stages == o.engine.virtual_stages &&
         engine.pipeline_schedule_micro_batches == o.engine.pipeline_schedule_micro_batches &&
         engine.attention == o.engine.attention &&
         engine.deepspeed_version == o.engine.deepspeed_version && engine.fp8 == o.engine.fp8 &&
         engine.tp_comm_overlap == o.engine.tp_comm_overlap && engine.cp_comm == o.engine.cp_comm &&
         engine.fp8_param_gather == o.engine.fp8_param_gather && engine.fused_loss == o.engine.fused_loss &&
         engine.bf16_grad_buffer == o.engine.bf16_grad_buffer &&
         engine.bf16_optimizer_states == o.engine.bf16_optimizer_states && engine.bf16_params == o.engine.bf16_params &&
         engine.bf16_loss == o.engine.bf16_loss && engine.te_modules == o.engine.te_modules &&
         engine.automodel_experts == o.engine.automodel_experts &&
         engine.fake_balanced_gate == o.engine.fake_balanced_gate && engine.torch_compile == o.engine.torch_compile &&
         engine.eager_loss == o.engine.eager_loss &&
         engine.tiled_mlp == o.engine.tiled_mlp && engine.expandable_segments == o.engine.expandable_segments &&
         engine.moe_dispatcher == o.engine.moe_dispatcher && engine.moe_grouped_gemm == o.engine.moe_grouped_gemm &&
         megatron_tp == o.megatron_tp && cp == o.cp && ep == o.ep && etp == o.etp &&
         attn_implementation == o.attn_implementation;
}

std::optional<Recompute> ParseRecompute(std::string_view name) {
  if (name == "none") return Recompute::kNone;
  if (name == "selective") return Recompute::kSelective;
  if (name == "full") return Recompute::kFull;
  return std::nullopt;
}

Result<ResolvedWorld> ResolveWorld(const PlanKnobs& k, const Cluster& cluster) {
  ResolvedWorld r;
  r.gpus_per_node = k.gpus_per_node > 0 ? k.gpus_per_node : cluster.gpus_per_node;
  if (r.gpus_per_node <= 0) return Error{"the cluster names no GPUs per node: give --gpus-per-node"};
  if (k.pp < 1) return Error{"pp must be at least 1"};
  if (k.nodes > 0) {
    const int64_t from_nodes = k.nodes * r.gpus_per_node;
    if (k.world_size > 0 && k.world_size != from_nodes) {
      return Error{"--world-size " + std::to_string(k.world_size) + " contradicts --nodes " +
                   std::to_string(k.nodes) + " x --gpus-per-node " + std::to_string(r.gpus_per_node) + " = " +
                   std::to_string(from_nodes)};
    }
    if (from_nodes > (int64_t{1} << 20)) {
      return Error{"--nodes " + std::to_string(k.nodes) + " x --gpus-per-node " + std::to_string(r.gpus_per_node) +
                   " = " + std::to_string(from_nodes) + " ranks: at most 1048576 are supported"};
    }
    r.world_size = from_nodes;
    r.world_given = true;
  } else if (k.world_size > 0) {
    r.world_size = k.world_size;
    r.world_given = true;
  } else {
    r.world_size = r.gpus_per_node;
  }
  if (r.world_size % k.pp != 0) {
    return Error{"--pp " + std::to_string(k.pp) + " does not divide the world size " + std::to_string(r.world_size)};
  }
  return r;
}

namespace {

// Eager ZeRO-3 under DeepSpeed's hooks on a cluster that does not price their host time.
void AddZero3HostNote(Evaluation& e) {
  const SimInput& input = e.input;
  if (input.zero.stage == 3 && !input.zero.deepcompile &&
      input.engine.framework().gradients == GradientSync::kDeepSpeedZero &&
      e.cluster.host.zero3_fetch_seconds <= 0) {
    e.notes.push_back("the cluster gives no host.zero3_fetch_seconds: the host time of ZeRO-3's per-module hooks "
                      "is not priced apart. The H100 and HGX A100 presets' inter_node.max_rails, fitted on ZeRO-3 runs "
                      "whose data-parallel groups held every GPU of their nodes, carries it for such groups; inside "
                      "a node, or with fewer of the group's ranks on a node than max_rails, it is not priced and "
                      "with few tokens per GPU the step comes out too fast (docs/validation.md \"ZeRO-3's gathers "
                      "over the network\"; fit yours with calibrate)");
  }
}

// What the numbers assume that the config does not say, as notes.
void AddAssumptionNotes(Evaluation& e, const ModelSpec& model) {
  ConfigView view(e.config);
  if (!ds_semantics::Bf16Enabled(view) && !ds_semantics::Fp16Enabled(view) &&
      !ds_semantics::DictFlag(view, "/torch_autocast/enabled")) {
    e.notes.push_back("neither bf16 nor fp16 is enabled (fp32 training): the estimate assumes 16-bit mixed precision");
  }
  if (AutoSpFallsBack(e.plan.parallel)) {
    e.notes.push_back("AutoSP falls back at ZeRO stage " + std::to_string(e.plan.zero_stage) +
                       " (plain torch.compile): priced without sequence parallelism, every rank of a "
                       "sequence-parallel group running the whole sequence");
  }
  if (model.assumed_llama_like) {
    e.notes.push_back("model_type \"" + model.model_type + "\" is unknown: counted as a llama-like decoder");
  }

}

// The cost model's input: the plan, the batch, and the config's ZeRO, precision and checkpointing
// settings as the engine reads them.
void FillSimInput(Evaluation& e, const ModelSpec& model, const PlanKnobs& knobs, const Batch* batch,
                  int64_t seq_len) {
  const EngineSettings& engine = knobs.engine;
  ConfigView view(e.config);
  SimInput& input = e.input;
  input.plan = &e.plan;
  input.model = &model;
  input.cluster = &e.cluster;
  input.workload.seq_len = seq_len;
  input.workload.micro_batch = batch->micro;
  input.precision = ReadPrecisionSettings(e.config);
  input.workload.optimizer_state_bytes_per_param = ReadOptimizerStateBytes(e.config, input.precision);
  // NeMo's distributed_fused_adam with dtype bf16 (the master copy and the optimizer's states in
  // bf16, half their fp32 bytes: Adam 6 for 12), FSDP2's bf16 parameters (the shard is the master).
  if (engine.bf16_optimizer_states || engine.bf16_params) {
    input.workload.optimizer_state_bytes_per_param = EngineOptimizerStateBytes(engine, ReadOptimizerStateBytes(e.config));
  }
  input.workload.grad_accum = batch->accum;
  input.workload.recompute = knobs.recompute;
  input.workload.convention = knobs.convention;
  input.engine = engine;
  // --attention flash (the default) becomes the kernel this framework runs on this GPU with the
  // model's attention implementation.
  const std::string& attn_impl = knobs.attn_implementation.empty() ? model.attn_implementation : knobs.attn_implementation;
  input.engine.attention =
      ResolveAttentionKernel(engine.attention, engine.framework(), e.cluster.gpu.compute_capability, attn_impl);
  // torchtitan's TP plan runs the norms as SequenceParallel whenever TP is on.
  if (engine.framework().tp_always_sequence_parallel && e.plan.sizes.tp > 1) input.engine.megatron_sp = true;
  input.zero = ReadZeroSettings(e.config, engine.deepspeed_version);
  input.checkpointing = ReadCheckpointSettings(e.config, engine.deepspeed_version);
  // An fp32 gradient accumulation buffer: DeepSpeed's BF16Optimizer (bf16 with ZeRO 0/1 under a
  // pipeline or with Megatron-DeepSpeed), Megatron-LM's bf16 main_grad; data_types.grad_accum_dtype
  // fp32 asks for it explicitly.
  {
    const bool bf16 = ds_semantics::Bf16Enabled(view);
    const auto accum = view.String("/data_types/grad_accum_dtype");
    const bool fp32_accum = accum.present() && (accum.value == "fp32" || accum.value == "float32");
    if (EngineFp32Gradients(engine, bf16, input.zero.stage) || fp32_accum) {
      input.workload.gradient_bytes_per_element = 4;
    }
  }
}

// DeepSpeed creates the EP and EDP groups and then lets AutoEP look for the MoE blocks
// (runtime/engine.py, the AutoEP setup around AutoEP.ep_parser; 0.19.6). Where its presets match
// none (validate: ep-moe-not-detected) it only logs, and the experts stay ordinary parameters:
// partitioned by ZeRO over the data-parallel group, never dispatched. The plan is priced so; its
// unused EP groups cost nothing (PyTorch creates a group's communicator at its first collective).
Status PriceUndetectedAutoEp(Evaluation& e, const ModelSpec& model, const PlanInputs& inputs) {
  if (!e.plan.sizes.expert_parallel || inputs.ep > 0 || !model.is_moe()) return Status::Ok();
  const autoep::Detection found = autoep::Detect(model, autoep::ReadDetectionKeys(ConfigView(e.config)));
  if (found != autoep::Detection::kNotFound) return Status::Ok();
  ParallelSizes sizes = e.plan.sizes;
  sizes.expert_parallel = false;
  sizes.ep = 1;
  sizes.etp = 1;
  auto derived = Derive(sizes);
  if (!derived.ok()) return derived.error();
  auto groups = BuildGroupTables(sizes, inputs.layout, inputs.expert_layout);
  if (!groups.ok()) return groups.error();
  e.plan.sizes = sizes;
  e.plan.derived = *derived;
  e.plan.groups = std::move(groups).value();
  e.notes.push_back("AutoEP detects no MoE block in this " + model.model_type + " model (" +
                    autoep::PresetMiss(model) +
                    "): DeepSpeed trains it without expert parallelism, and it is priced so (the "
                    "experts partitioned by ZeRO over the data-parallel group, no dispatch) "
                    "[ep-moe-not-detected]");
  return Status::Ok();
}

// The config's warnings as notes: validate's own are counted (ds-plan validate shows them); the
// ones that need the cluster, which validate does not have (bf16 on a GPU without it), are shown whole.
void NoteWarnings(const FileReport& report, std::vector<std::string>* notes) {
  int plain = 0;
  for (const Diagnostic& d : report.diagnostics) {
    if (d.severity != Severity::kWarning) continue;
    if (d.rule_id == "precision-bf16-unsupported-gpu") {
      notes->push_back(d.message + " [" + d.rule_id + "]");
    } else {
      ++plain;
    }
  }
  if (plain > 0) {
    notes->push_back("the config has " + std::to_string(plain) + " warning" + (plain == 1 ? "" : "s") +
                     ": run ds-plan validate for details");
  }
}

}  // namespace

std::unique_ptr<Evaluation> Evaluate(const ModelSpec& model, const Cluster& given_cluster,
                                     const std::string& config_path, std::string text,
                                     const std::vector<Override>& overrides, const PlanKnobs& knobs) {
  auto e = std::make_unique<Evaluation>();
  auto stop = [&e](Evaluation::Outcome outcome, std::string message) {
    e->outcome = outcome;
    e->message = std::move(message);
    return std::move(e);
  };
  e->cluster = given_cluster;
  auto world = ResolveWorld(knobs, given_cluster);
  if (!world.ok()) return stop(Evaluation::Outcome::kBadKnobs, world.error().message);
  // The node size the command line gives describes the machines actually used: the cost model
  // reads it from the cluster, so both must agree on which groups cross a node boundary.
  e->cluster.gpus_per_node = static_cast<int>(world->gpus_per_node);
  e->gpus_per_node = world->gpus_per_node;
  e->world_size = world->world_size;
  if (!world->world_given) {
    e->notes.push_back("no --world-size or --nodes: simulating one node of " + std::to_string(e->world_size) +
                       " GPUs");
  }
  const int64_t seq_len = knobs.seq_len > 0 ? knobs.seq_len : std::min(kDefaultSeqLen, model.max_position_embeddings);
  if (Status engine = CheckEngine(knobs, given_cluster); !engine.ok()) {
    return stop(Evaluation::Outcome::kBadKnobs, engine.error().message);
  }
  const EngineSettings& engine = knobs.engine;
  const int64_t mpu_tp = engine.framework().megatron_tp() ? std::max<int64_t>(knobs.megatron_tp, 1) : 0;
  if (Status chunks = CheckVirtualStages(knobs, model); !chunks.ok()) {
    return stop(Evaluation::Outcome::kBadKnobs, chunks.error().message);
  }

  ValidateOptions options;
  options.world_size = e->world_size;
  options.gpus_per_node = world->gpus_per_node;
  options.pp = knobs.pp;
  options.mpu_tp = std::max<int64_t>(mpu_tp, 1);
  // FSDP2 shards parameters under a pipeline; DeepSpeed's PipelineEngine refuses ZeRO-2/3.
  options.pipeline_allows_sharded_zero = engine.framework().pipeline_max_zero_stage >= 2;
  options.context_parallel = std::max<int64_t>(knobs.cp, 1);
  if (Status heads = CheckAllToAllHeads(knobs, model, mpu_tp); !heads.ok()) {
    return stop(Evaluation::Outcome::kBadKnobs, heads.error().message);
  }
  if (Status sizes = CheckCommandLineSizes(knobs, model, seq_len); !sizes.ok()) {
    return stop(Evaluation::Outcome::kBadKnobs, sizes.error().message);
  }
  options.seq_len = seq_len;
  options.version = engine.deepspeed_version;
  options.model = &model;
  if (!knobs.attn_implementation.empty()) options.attn_implementation = knobs.attn_implementation;
  // DeepSpeed's engine checks the GPU's bf16 support (_do_sanity_check); FSDP2 and Megatron do not.
  const Engine e_kind = engine.framework().engine;
  if (e_kind == Engine::kDeepSpeed || e_kind == Engine::kMegatronDeepSpeed) {
    options.gpu_name = e->cluster.gpu.name;
    options.gpu_compute_capability = e->cluster.gpu.compute_capability;
  }
  // ValidateText keeps no document: parse the same text again and apply the overrides the same way.
  ParsedJson parsed = ParseDeepSpeedConfig(config_path, text);
  for (const auto& o : overrides) ApplyOverride(parsed.doc.root, o);
  // What DeepSpeed's pydantic sections make of the values (validate warns about each).
  e->config = PydanticLaxView(parsed.doc.root);
  e->report = ValidateText(config_path, std::move(text), options, overrides);
  const DiagnosticCounts counts = Count(e->report.diagnostics);
  if (counts.errors > 0) return stop(Evaluation::Outcome::kConfigErrors, "");
  NoteWarnings(e->report, &e->notes);

  const PlanInputs inputs = PlanInputsOf(knobs, *world, mpu_tp);
  auto plan = BuildPlan(e->config, inputs);
  if (!plan.ok()) return stop(Evaluation::Outcome::kNoPlan, plan.error().message);
  e->plan = std::move(plan).value();
  if (Status ep = PriceUndetectedAutoEp(*e, model, inputs); !ep.ok()) {
    return stop(Evaluation::Outcome::kNoPlan, ep.error().message);
  }
  if (inputs.cp > 0 || inputs.ep > 0) {
    // validate summarised the config's layout; --cp and --ep change it.
    LayoutSummary& l = e->report.layout;
    const ParallelSizes& s = e->plan.sizes;
    l.sp = s.sp;
    l.dp = e->plan.derived.dp;
    if (s.expert_parallel) {
      l.ep = s.ep;
      l.etp = s.etp;
      l.edp = e->plan.derived.edp;
    }
  }
  auto batch = FillBatch(e->config, e->world_size, knobs.pp, std::max<int64_t>(mpu_tp, 1), std::max<int64_t>(knobs.cp, 1));
  if (!batch.ok()) return stop(Evaluation::Outcome::kBadBatch, batch.error().message);
  if (Status b = CheckBatch(*batch, seq_len, engine); !b.ok()) return stop(Evaluation::Outcome::kBadBatch, b.error().message);
  e->micro_batch = batch->micro;
  e->grad_accum = batch->accum;

  AddAssumptionNotes(*e, model);
  if (engine.fp8 && !e->cluster.gpu.fp8_peak_given()) {
    e->notes.push_back("the cluster gives no gpu.peak_fp8_flops_per_second: FP8 GEMMs priced at twice the bf16 peak "
                       "(Hopper's and Blackwell's ratio)");
  }
  FillSimInput(*e, model, knobs, &*batch, seq_len);
  SimInput& input = e->input;
  AddZero3HostNote(*e);
  if (input.engine.flash_attention() && e->cluster.gpu.compute_capability <= 0) {
    e->notes.push_back("the cluster gives no gpu.compute_capability: fused attention is priced at one rate whatever its "
                       "head dim and sequence length (the measured table of docs/cost-model.md \"Attention by shape\" "
                       "applies to Hopper, 9.x)");
  }
  if (Status zero = CheckZeroAgainstEngine(input.engine, input.zero); !zero.ok()) {
    return stop(Evaluation::Outcome::kBadKnobs, zero.error().message);
  }
  e->memory = EstimateMemory(input);
  for (int stage = 0; knobs.pp > 1 && stage < knobs.pp; ++stage) {
    e->stage_peak_bytes.push_back(EstimateStageMemory(input, stage).peak_bytes);
  }
  e->time = EstimateStepTime(input);
  if (Status finite = EstimatesAreFinite(e->memory, e->time); !finite.ok()) {
    return stop(Evaluation::Outcome::kBadKnobs, finite.error().message);
  }
  e->outcome = Evaluation::Outcome::kNumbers;
  return e;
}

}  // namespace dsp::sim
