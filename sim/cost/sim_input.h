// SPDX-License-Identifier: Apache-2.0
// Everything the cost model reads: the plan (layout and exact group tables), the model, the
// cluster, the workload and the ZeRO settings of the config. Simulation code never reads JSON.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/config/deepspeed_version.h"
#include "core/model/model_spec.h"
#include "core/plan/plan.h"
#include "sim/cost/cluster.h"
#include "sim/cost/workload.h"
#include "sim/frameworks/attention_kernel.h"
#include "sim/frameworks/framework.h"

namespace dsp::sim {

struct ZeroSettings {
  int stage = 0;
  bool offload_optimizer = false;      // offload_optimizer.device is cpu or nvme
  bool offload_param = false;          // offload_param.device is cpu or nvme (stage 3 only)
  double offload_ratio = 1.0;          // offload_optimizer.ratio (stage 3 partial offload)
  bool overlap_comm = false;           // resolved default: true at stage 3
  double reduce_bucket_size = 5e8;     // elements
  double allgather_bucket_size = 5e8;  // elements
  double prefetch_bucket_size = 5e7;   // elements (stage 3)
  double max_live_parameters = 1e9;    // elements (stage 3)
  double param_persistence_threshold = 1e5;  // elements (stage 3)
  double max_reuse_distance = 1e9;           // elements (stage 3)
  // Stage 3 reduces gradient buckets with reduce-scatter; before DeepSpeed 0.4.3
  // contiguous_gradients defaulted to false there, and without it the bucket is all-reduced.
  bool stage3_reduce_scatter = true;

  // ZeRO++ (Wang et al. 2023), stage 3 only (engine.py _configure_zero_optimizer hands them to
  // DeepSpeedZeroOptimizer_Stage3 alone).
  // qwZ: every parameter all-gather (forward and backward) moves int8 values and one fp32 scale
  // per group of at most 8000 (partition_parameters.py _all_gather_coalesced, CUDAQuantizer).
  bool quantized_weights = false;
  // qgZ: gradients reduced by an int4 all-to-all inside each node, then one across nodes
  // (comm/coalesced_collectives.py all_to_all_quant_reduce); on one node stage3.py keeps the
  // reduce-scatter.
  bool quantized_gradients = false;
  // hpZ: a secondary copy of the 16-bit partition over blocks of this many consecutive ranks
  // (groups.py _create_zero_param_parallel_group); every gather after the step's first forward
  // reads it, inside the block (partition_parameters.py _partition_param_sec).
  int64_t hpz_partition_size = 1;
  // MiCS (runtime/zero/mics.py): model states sharded over blocks of this many consecutive ranks
  // and replicated across blocks; gradients reduce-scattered in the block every micro-step and
  // all-reduced across blocks at the accumulation boundary. <= 0: off.
  int64_t mics_shard_size = -1;
  // Elements the stage-3 optimizer steps at once: without offload it flattens that many
  // gradients and casts them to fp32 first (stage3.py _prepare_fp32_grad_for_sub_group).
  double sub_group_size = 1e9;
  // Stage 1/2 with offload_optimizer: parameters dealt round-robin over the partitions, so every
  // rank copies gradients to the host throughout backward (stage_1_and_2.py _round_robin_reorder).
  bool round_robin_gradients = false;
  // offload_optimizer.pin_memory / offload_param.pin_memory: pinned host buffers. Defaults true
  // from 0.19.5 (PR #8207), false before. A copy to pageable host memory returns only when it is
  // done (CUDA Runtime API, "API synchronization behavior"): it blocks the step.
  bool optimizer_pin_memory = true;
  bool param_pin_memory = true;
  // DeepCompile runs ZeRO (compile.deepcompile at stage 1-3 with neither the autosp nor the autotp
  // pass listed: engine.py get_deepspeed_compile_backend picks get_deepcompile_backend; stage 0
  // falls back to plain torch.compile). Its ZeRO-1/2 reduce every gradient with an all-reduce
  // (csrc/compile/z1.cpp, z2.cpp: ncclAllReduce, then each rank copies its slice), ZeRO-1 at the
  // accumulation boundary and ZeRO-2 every micro-step, inside the backward graph (reduce_grad
  // after each gradient). Its ZeRO-3 starts with every parameter non-persistent (init_z3.py:
  // p.ds_persist = False) and, after WARMUP steps, selective_gather makes parameters persistent
  // again within the profiled memory headroom and prefetch moves gathers earlier: both follow a
  // run-time profile, so ZeRO-3's gathers are priced as eager ZeRO-3's (docs/cost-model.md).
  bool deepcompile = false;
  // compile.offload_opt_states under DeepCompile's ZeRO-3 (deepspeed/compile/config.py
  // CompileConfig.offload_opt_states, passes/offload_adam_states.py): the fp32 master parameters and
  // Adam moments go to pinned host memory for forward and backward and come back for the
  // optimizer step, so the forward/backward peak holds none of them (memory_model.cc) and each
  // step copies them out and back (offload_time.cc).
  bool deepcompile_offload_opt_states = false;
  // DeepCompile's ZeRO-3 under an offload schedule (compile.offload_parameters,
  // offload_opt_states or offload_activation): init_z3.py runs those passes in place of prefetch
  // and selective_gather, so each all-gather stays where zero3_compile put it, just before its
  // parameter's first reader, and csrc/compile/z3.cpp allgatherParam makes the gather stream wait
  // for the compute stream before launching it: the gathers do not overlap compute
  // (comm_plan.cc Zero3SynchronousFetch).
  bool deepcompile_gathers_in_place = false;
};

// Reads zero_optimization with DeepSpeed's defaults (and its aliases, e.g. stage3_prefetch_bucket_size).
ZeroSettings ReadZeroSettings(const Json& config);
// The same, with the stage-3 defaults of an older DeepSpeed release.
ZeroSettings ReadZeroSettings(const Json& config, const DeepSpeedVersion& version);

// Workload::optimizer_state_bytes_per_param for the config's optimizer section (12, Adam, when the
// optimizer is absent or unknown: DeepSpeed's client optimizers are almost always Adam variants).
double ReadOptimizerStateBytes(const Json& config);
struct PrecisionSettings;
// The same with bf16 master weights (2 bytes instead of 4) and bf16 moments (half) applied.
double ReadOptimizerStateBytes(const Json& config, const PrecisionSettings& precision);

// Which training framework runs the plan. They share DeepSpeed's ZeRO but differ in how the
// model is split and scheduled (docs/cost-model.md "Engines").
struct EngineSettings {
  Engine engine = Engine::kDeepSpeed;
  bool megatron_sp = false;     // --megatron-sp: sequence parallelism in Megatron's TP regions
  int virtual_stages = 1;       // --virtual-stages: interleaved 1F1B chunks per stage (megatron-lm)
  // --pp-schedule-micro-batches (fsdp2 with --pp): micro-batches one call of the pipeline schedule
  // runs; 0 = every micro-batch of the step in one call, as Megatron-LM's forward_backward_func and
  // DeepSpeed's PipelineEngine.train_batch run them. torchtitan (train.py: one pp_schedule.step per
  // local batch of the gradient-accumulation loop) and NeMo AutoModel (recipes/llm/benchmark.py
  // and train_ft.py: one per local_batch_size batch) call it local_batch_size /
  // pipeline_parallel_microbatch_size micro-batches at a time, and each call fills and drains the
  // pipeline: the step pays grad_accum / N bubbles (step_time.cc PipelineBubble).
  int64_t pipeline_schedule_micro_batches = 0;
  int64_t pipeline_schedule_calls(int64_t grad_accum) const {
    return pipeline_schedule_micro_batches > 0 ? std::max<int64_t>(grad_accum / pipeline_schedule_micro_batches, 1)
                                               : 1;
  }
  // --attention: the kernel (sim/frameworks/attention_kernel.h); kFramework until Evaluate resolves
  // it, and priced as kCudnn where nothing did (unit tests that build a SimInput by hand).
  AttentionKernel attention = AttentionKernel::kFramework;
  // FlashAttention-style (fused, no scores in HBM) or materialized (pre-2022 runs).
  bool flash_attention() const { return attention != AttentionKernel::kMaterialized; }
  // --fused-loss: lm_head and the cross-entropy run as one chunked op that never materializes the
  // logits (Liger-Kernel's LigerFusedLinearCrossEntropy, as the Trainer's use_liger_kernel and
  // ArcticTraining's liger_kernel apply it): sim/cost/activation_memory.cc OutputLayerActivationBytes.
  bool fused_loss = false;
  // --tiled-mlp: DeepSpeed's TiledMLP (deepspeed/runtime/sequence_parallel/ulysses_sp.py, ALST's
  // tiled_mlp_compute) runs each dense MLP in sequence shards of about hidden_size tokens under
  // no_grad, saves only its input, and runs the forward again shard by shard in backward.
  bool tiled_mlp = false;
  // --expandable-segments: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True maps memory into
  // segments that grow instead of carving cached blocks ("CUDA semantics", PyTorch docs): no
  // fragmentation allowance on top of the peak (memory_model.cc CheckFit).
  bool expandable_segments = false;
  bool fp8 = false;             // --fp8: the framework's FP8 linear layers (FrameworkProfile::fp8)
  bool tp_comm_overlap = false; // --tp-comm-overlap: TP all-gather / reduce-scatter behind the GEMMs
  // --cp-comm-type (megatron-lm): how context parallelism exchanges keys and values; kNone = the
  // framework's default (FrameworkProfile::context_parallel).
  ContextParallel cp_comm = ContextParallel::kNone;
  // --fp8-param-gather: linear weights all-gathered in FP8 (Megatron-Core's --fp8-param-gather,
  // TransformerEngine FP8 parameters; torchao's enable_fsdp_float8_all_gather under fsdp2).
  bool fp8_param_gather = false;
  // --bf16-grad-buffer (megatron-lm): gradients accumulate and reduce in bf16, not in Megatron-LM's
  // fp32 main_grad (arguments.py forces accumulate_allreduce_grads_in_fp32 under --bf16):
  // Megatron-Core's DistributedDataParallelConfig grad_reduce_in_fp32=False, NeMo's
  // distributed_fused_adam with grad_sync_dtype bf16 (its contiguous_grad_buffer is bf16).
  bool bf16_grad_buffer = false;
  // --bf16-optimizer-states (megatron-lm): the master parameters and both Adam moments in bf16, 6
  // bytes a parameter over the data-parallel group instead of 12: NeMo's distributed_fused_adam
  // with dtype: bf16 (Apex DistributedFusedAdam's optimizer-state dtype).
  bool bf16_optimizer_states = false;
  // --bf16-params (fsdp2): the model's parameters are bf16 when fully_shard wraps it, so the
  // sharded parameter the optimizer steps is bf16 (no fp32 master) and so is its gradient (FSDP2
  // casts the fp32 reduce-scatter output to the parameter's dtype); with bf16_optimizer_states
  // the moments are bf16 too (torch.optim.Adam allocates them like the parameter). NeMo
  // AutoModel's MoE models cast themselves to bf16 (initialize_weights(dtype=torch.bfloat16)).
  bool bf16_params = false;
  // --bf16-loss: the cross-entropy runs on the 16-bit logits, without the fp32 upcast of
  // transformers' ForCausalLMLoss and torchtitan's cross_entropy_loss (NeMo AutoModel's
  // MaskedCrossEntropy(fp32_upcast=False)).
  bool bf16_loss = false;
  // --te-modules (fsdp2): the decoder is built of TransformerEngine's modules (RMSNorm, Linear,
  // DotProductAttention) with Megatron's fused MoE permutation and SwiGLU, as NeMo AutoModel builds
  // its models with BackendConfig rms_norm/linear/attn: te and DeepEP experts; its rotary
  // embedding and the script's loss stay eager PyTorch.
  bool te_modules = false;
  // --automodel-experts (fsdp2): the routed experts are wrapped as NeMo AutoModel wraps them
  // (moe/parallelizer.py apply_fsdp): outside FSDP where expert parallelism covers the
  // data-parallel ranks, else sharded over them without a mixed-precision policy
  // (memory_model.cc Fsdp2GatheredBytes).
  bool automodel_experts = false;
  // --fake-balanced-gate (fsdp2 with --ep): NeMo AutoModel's FakeBalancedGate (moe/layers.py,
  // BackendConfig fake_balanced_gate, which its benchmark configs set): token t goes to the k
  // consecutive experts (t k + j) mod E instead of the router's choice. Loads every expert alike,
  // as ds-plan assumes anyway, but puts a token's experts on one or two ranks of one node, which
  // DeepEP's dispatch (--te-modules) sends once each (sim/comm/deepep_dispatch.h).
  bool fake_balanced_gate = false;
  // --torch-compile (fsdp2): torchtitan's compile.enable, torch.compile applied to each decoder
  // block (models/llama3/infra/parallelize.py apply_compile): Inductor fuses the blocks'
  // memory-bound chains and torchao's FP8 casts (sim/cost/flops.cc). What is saved for backward is
  // left as eager (not modelled apart).
  bool torch_compile = false;
  // --eager-loss (fsdp2 with --torch-compile): the loss is not compiled. torchtitan compiles it
  // with the model since April 2025 (components/loss.py build_cross_entropy_loss, today
  // compile.components ["model", "loss"]); its December 2024 train.py left
  // `torch.compile(loss_fn)` commented out. A compiled cross-entropy reads the 16-bit logits in
  // one fused reduction and writes a 16-bit gradient: no fp32 copy of the logits is made or saved
  // (activation_memory.cc OutputLayerActivationBytes, flops.cc EagerBytes).
  bool eager_loss = false;
  bool compiled_loss() const { return torch_compile && !eager_loss; }
  // NeMo AutoModel's training loop, which these flags describe (they are its modules, dtypes and
  // expert wrapping), rather than torchtitan's: its loss keeps the model output through backward
  // (recipes/llm/train_ft.py _forward_backward_step: `out = model(**batch)` lives until the step
  // returns) and takes no DTensor loss_parallel.
  bool automodel_loop() const { return bf16_params || te_modules || automodel_experts || bf16_loss; }
  // MoE under megatron-lm: --moe-token-dispatcher (all-to-all over EP, or all-gather of the
  // tokens over the expert TPxEP group) and --moe-grouped-gemm (one GEMM per projection over a
  // rank's local experts instead of a loop over them).
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  bool moe_grouped_gemm = false;
  ContextParallel context_parallel() const {
    return cp_comm != ContextParallel::kNone ? cp_comm : framework().context_parallel;
  }
  // Decides how ZeRO-3 issues its collectives (per-parameter synchronous list all-gathers before
  // 0.5.5/0.6.0, coalesced on a side stream after) and stage-3 gradient defaults.
  DeepSpeedVersion deepspeed_version = DeepSpeedVersion::Newest();
  // The model is transformers' eager PyTorch modules, as DeepSpeed trains a Hugging Face model;
  // false for Megatron's fused modules (the megatron engines, and the 2021-22 DeepSpeed runs of
  // Megatron's GPT-2 in samples/runs). Decides the memory-bound traffic and saved activations of
  // norms, rotary, the MLP activation and the loss (sim/cost/flops.cc, sim/cost/activation_memory.cc).
  bool transformers_modules = true;
  // The framework's profile (sim/frameworks): what it shards, reduces, overlaps and schedules.
  const FrameworkProfile& framework() const { return FrameworkOf(engine); }
  bool hf_eager() const { return framework().trains_transformers_modules && transformers_modules; }
};

// Workload::optimizer_state_bytes_per_param under the engine's precision flags, from the config's
// (`config_bytes`: fp32 master, 4, plus the optimizer's fp32 states): the master in bf16 under
// --bf16-params (the sharded bf16 parameter itself) or --bf16-optimizer-states, the states halved
// under --bf16-optimizer-states.
double EngineOptimizerStateBytes(const EngineSettings& engine, double config_bytes);
// Whether the engine's gradients are fp32 (Workload::gradient_bytes_per_element 4): the
// framework's fp32 buffer (Fp32GradientBuffer) unless --bf16-grad-buffer or --bf16-params.
bool EngineFp32Gradients(const EngineSettings& engine, bool bf16, int zero_stage);

// DeepSpeed's activation checkpointing (deepspeed/runtime/activation_checkpointing/
// checkpointing.py) as it changes a fully recomputed run; read only when layers are checkpointed
// (Recompute::kFull).
struct CheckpointSettings {
  bool partition_activations = false;  // each layer input split over the TP group, all-gathered
                                       // before its recomputation
  bool cpu_checkpointing = false;      // layer inputs in pinned host memory, all but the last
                                       // layer's (PR #8282 keeps the last on the GPU)
  bool async_copy = false;             // the copy runs on a side stream behind compute (0.19.6 and
                                       // later, PR #8282, without partition_activations); blocking
                                       // before
  // contiguous_memory_optimization (needs partition_activations): the partitioned inputs are
  // copied into buffers of number_checkpoints layers allocated at the first checkpoint of a
  // forward (on the host, unpinned, with cpu_checkpointing); more checkpoints than that before a
  // backward index past the buffer list (checkpointing.py partition_activations).
  bool contiguous_memory = false;
  int64_t number_checkpoints = 0;  // 0: not given
  // Layer inputs kept on the device: PR #8282's offload engine keeps the newest one
  // (keep_last_count=1); the older copy_to_device / partition paths move every one.
  bool keep_last_on_device() const { return async_copy; }
};
CheckpointSettings ReadCheckpointSettings(const Json& config, const DeepSpeedVersion& version);

// Precision settings that change model-state bytes and communication volumes.
struct PrecisionSettings {
  // torch_autocast.enabled (runtime/torch_autocast.py, PR #6993): parameters and gradients stay
  // fp32 (no 16-bit copies, no separate fp32 master), optimizer states as usual; the
  // lower_precision_safe_modules (Linear by default: every matmul weight) compute in the autocast
  // dtype and their gradients are reduced, their ZeRO-3 parameters gathered, in it.
  bool torch_autocast = false;
  // communication_data_type: the gradients' all-reduce / reduce-scatter dtype bytes; 0 = the
  // gradients' own.
  double communication_bytes = 0;
  // seq_parallel_communication_data_type (default "fp32"): with sequence_parallel_size > 1 the
  // engine makes it the gradients' communication dtype (engine.py, communication_data_type).
  double seq_parallel_communication_bytes = 4;
  // torch_autocast.lower_precision_safe_modules: whether it names torch.nn.Linear (the default
  // list does). Only the listed modules' parameters carry the autocast comm_dtype
  // (torch_autocast.py init_autocast_params); the rest reduce and gather in fp32. Compute dtype
  // is torch.autocast's op policy either way.
  bool autocast_linear_low_precision = true;
  double autocast_bytes = 2;  // torch_autocast.dtype: 2 (bf16/fp16), 4 for fp32
  // bf16.bf16_master_weights_and_grads (ZeRO 1-3, PR #7700): the optimizer's master weights and
  // gradient partition in bf16; bf16_optimizer_states: the moments too.
  bool low_precision_master = false;
  bool bf16_optimizer_states = false;
};
PrecisionSettings ReadPrecisionSettings(const Json& config);

class GroupLinkCache;

// How the vocabulary layers split over TP (VocabSplitOf, sim/cost/param_sharding.h).
enum class VocabSplit {
  kNone,           // embedding and lm_head whole (DeepSpeed's AutoTP with a preset or layer_specs)
  kVocabParallel,  // Megatron's VocabParallelEmbedding and parallel lm_head (the megatron engines)
  // AutoTP from transformers' tp_plan: lm_head is "colwise_gather_output" (a column LinearLayer
  // whose logits are all-gathered over TP, PR #8146); the embedding stays whole.
  kLmHeadColumns,
};

struct SimInput {
  const Plan* plan = nullptr;
  const ModelSpec* model = nullptr;
  const Cluster* cluster = nullptr;
  Workload workload;
  ZeroSettings zero;
  EngineSettings engine;
  CheckpointSettings checkpointing;
  PrecisionSettings precision;
  // Optional: link answers shared across evaluations of the same plan and cluster (tune).
  GroupLinkCache* link_cache = nullptr;
  // Optional: CountParameters(*model), computed once by a caller that evaluates many plans of one
  // model (tune); ModelParamCounts uses it.
  const ParamCounts* param_counts = nullptr;
  // Optional: VocabSplitOf's answer for this plan, model and engine, computed once by tune.
  std::optional<VocabSplit> vocab_split;
};

// The model's parameter counts: SimInput::param_counts when set, else counted now.
ParamCounts ModelParamCounts(const SimInput& input);

// Whether the AutoSP compile pass falls back: compile.deepcompile with "autosp" in compile.passes
// at ZeRO stage 2 or 3 (engine.py get_autosp_backend, 0.19.6: "Currently AutoSP does not compose
// with ZeRO stage 2 and 3. Falling back to the torch compiler." and no sequence parallelism). The
// sequence-parallel groups still exist; every rank of one runs the whole sequence.
bool AutoSpFallsBack(const ParallelConfig& pc);
// The ways each sequence is split inside a layer: the sequence-parallel size, or 1 when AutoSP
// falls back.
int64_t SequenceShards(const SimInput& input);


}  // namespace dsp::sim
