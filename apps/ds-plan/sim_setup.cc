// SPDX-License-Identifier: Apache-2.0
#include "apps/ds-plan/sim_setup.h"

#include <iostream>
#include <tuple>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/data_files.h"
#include "apps/ds-plan/terminal_color.h"
#include "apps/ds-plan/model_input.h"
#include "core/json/hjson_parser.h"
#include "core/report/validate_report.h"
#include "core/util/file_io.h"

namespace dsp::app {
namespace {

}  // namespace

void SimArgs::AddTo(CLI::App* app) {
  app->add_option("config", config, "DeepSpeed config file")->required();
  app->add_option("--model", model_path, kModelHelp)->required()->transform(PresetFile("models"));
  app->add_option("--cluster", cluster_path, kClusterHelp)->required()->transform(PresetFile("clusters"));
  AddPlanFlags(app);
}

void SimArgs::AddPlanFlags(CLI::App* app) {
  world.AddTo(app);
  app->add_option("--seq-len", seq_len,
                  "training sequence length (default 4096, or the model's max_position_embeddings if smaller)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 26));
  recompute_option = app->add_option("--recompute", recompute, "activation recomputation (default: the config's _ds_plan.recompute, else none)")
      ->check(CLI::IsMember({"none", "selective", "full"}));
  app->add_option("--convention", convention,
                  "model-state accounting: zero-paper (2+2+12 bytes per parameter) or deepspeed (its estimators)")
      ->check(CLI::IsMember({"zero-paper", "deepspeed"}));
  app->add_option("--set", sets,
                  "KEY=VALUE override (JSON pointer or dotted key; fills \"auto\" values); repeatable");
  engine_option = app->add_option("--engine", engine,
                  "training framework: deepspeed (AutoTP/Ulysses/AutoEP), megatron-deepspeed "
                  "(Megatron's model under DeepSpeed's engine), megatron-lm (Megatron-Core, as NeMo "
                  "runs it) or fsdp2 (PyTorch FSDP2 as torchtitan composes it)")
      ->check(CLI::IsMember({"deepspeed", "megatron-deepspeed", "megatron-lm", "fsdp2"}));
  tp_option = app->add_option("--tp", megatron_tp,
                  "tensor-parallel size of the megatron engines and fsdp2 (not in the DeepSpeed config; "
                  "DeepSpeed's AutoTP size is tensor_parallel.autotp_size)")
      ->check(CLI::Range(1, 1 << 20));
  megatron_sp_option = app->add_flag("--megatron-sp", megatron_sp,
                "Megatron sequence parallelism in the TP regions (megatron engines)");
  virtual_stages_option = app->add_option("--virtual-stages", virtual_stages,
                  "interleaved 1F1B model chunks per pipeline stage (megatron-lm)")
      ->check(CLI::Range(1, 1024));
  pp_schedule_micro_batches_option = app->add_option("--pp-schedule-micro-batches", pp_schedule_micro_batches,
                  "fsdp2 with --pp: micro-batches per call of the pipeline schedule, each call filling and draining "
                  "the pipeline (torchtitan and NeMo AutoModel call it once per local batch: local_batch_size / "
                  "pipeline_parallel_microbatch_size); default: the whole step in one call")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cp_option = app->add_option("--cp", cp,
                  "context-parallel size (megatron-lm: TransformerEngine's ring attention; fsdp2: PyTorch's "
                  "context_parallel); DeepSpeed's is Ulysses, sequence_parallel_size in the config")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  ep_option = app->add_option("--ep", ep,
                  "expert-parallel size (megatron-lm, fsdp2); DeepSpeed's is expert_parallel.autoep_size")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  etp_option = app->add_option("--etp", etp,
                  "megatron-lm: expert-tensor-parallel size, the experts' weights split over etp ranks "
                  "(default: --tp, as Megatron-Core's --expert-tensor-parallel-size)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  moe_token_dispatcher_option = app->add_option("--moe-token-dispatcher", moe_token_dispatcher,
                  "megatron-lm: alltoall (each routed row to its expert's rank, the default here and in NeMo's "
                  "MoE recipes) or allgather (every token gathered over the expert TPxEP group, Megatron-Core's "
                  "--moe-token-dispatcher-type default)")
      ->check(CLI::IsMember({"alltoall", "allgather"}));
  moe_grouped_gemm_option = app->add_flag("--moe-grouped-gemm", moe_grouped_gemm,
                "megatron-lm: a rank's local experts run as one grouped GEMM per projection (fsdp2's "
                "experts always do)");
  fp8_option = app->add_flag("--fp8", fp8,
                "FP8 linear layers: TransformerEngine under megatron-lm, torchao float8 under fsdp2 "
                "(MFU then against the cluster's FP8 peak)");
  fp8_param_gather_option = app->add_flag("--fp8-param-gather", fp8_param_gather,
                "with --fp8: linear weights all-gathered in FP8 (megatron-lm: TransformerEngine FP8 parameters, "
                "NeMo's fp8_params; fsdp2: torchao's enable_fsdp_float8_all_gather)");
  bf16_grad_buffer_option = app->add_flag("--bf16-grad-buffer", bf16_grad_buffer,
                "megatron-lm: gradients kept and reduced in bf16 (Megatron-Core's grad_reduce_in_fp32=False, NeMo's "
                "distributed_fused_adam grad_sync_dtype: bf16), not Megatron-LM's fp32 main_grad");
  bf16_optimizer_states_option = app->add_flag("--bf16-optimizer-states", bf16_optimizer_states,
                "master parameters and Adam moments in bf16, 6 bytes a parameter instead of 12: megatron-lm (NeMo's "
                "distributed_fused_adam dtype: bf16), fsdp2 with --bf16-params (torch.optim on bf16 parameters)");
  bf16_params_option = app->add_flag("--bf16-params", bf16_params,
                "fsdp2: the model's parameters are bf16 when fully_shard wraps it (NeMo AutoModel's MoE models): "
                "bf16 shards and gradients, no fp32 master");
  bf16_loss_option = app->add_flag("--bf16-loss", bf16_loss,
                "deepspeed, fsdp2: the cross-entropy runs on the 16-bit logits without an fp32 upcast (NeMo "
                "AutoModel's MaskedCrossEntropy fp32_upcast: false)");
  te_modules_option = app->add_flag("--te-modules", te_modules,
                "fsdp2: TransformerEngine's norm, linear and attention modules with fused MoE permutation and "
                "SwiGLU (NeMo AutoModel's BackendConfig te with DeepEP), not transformers' eager modules");
  automodel_experts_option = app->add_flag("--automodel-experts", automodel_experts,
                "fsdp2 with --ep: experts wrapped as NeMo AutoModel wraps them: outside FSDP where EP covers the "
                "data-parallel ranks, else sharded over them in the parameters' dtype (torchtitan: always, with "
                "the blocks' policy)");
  fake_balanced_gate_option = app->add_flag("--fake-balanced-gate", fake_balanced_gate,
                "fsdp2 with --ep: tokens routed by NeMo AutoModel's FakeBalancedGate (its benchmarks' "
                "fake_balanced_gate: k consecutive experts per token), not a learned router; decides the rows "
                "DeepEP sends (--te-modules)");
  torch_compile_option = app->add_flag("--torch-compile", torch_compile,
                "fsdp2: each decoder block compiled with torch.compile (torchtitan's compile.enable): Inductor fuses "
                "the norms, rotary embedding, MLP activation and torchao's FP8 casts; the loss is compiled too "
                "(compile.components' default [\"model\", \"loss\"])");
  eager_loss_option = app->add_flag("--eager-loss", eager_loss,
                "fsdp2 with --torch-compile: the loss is not compiled (compile.components without \"loss\"; "
                "torchtitan before April 2025 never compiled it): it upcasts the logits to fp32 and keeps that copy");
  app->add_option("--cp-comm-type", cp_comm_type,
                  "megatron-lm's context-parallel exchange: p2p (the KV ring, default), a2a (all-to-all of q, k, v "
                  "and the output, as Ulysses) or allgather (K and V gathered)")
      ->check(CLI::IsMember({"p2p", "a2a", "allgather"}));
  tp_comm_overlap_option = app->add_flag("--tp-comm-overlap", tp_comm_overlap,
                "the sequence-parallel all-gather and reduce-scatter overlap the GEMMs: megatron-lm's "
                "TransformerEngine userbuffers (needs --megatron-sp), fsdp2's async TP (torchtitan's "
                "enable_async_tensor_parallel; needs --torch-compile)");
  attention_option = app->add_option("--attention", attention,
                  "attention kernel: flash (the default: the one the engine runs on this GPU: cuDNN's under "
                  "megatron-lm, FlashAttention-2 for sdpa and flash_attention_2 on H100/H200), cudnn (cuDNN "
                  "or FlashAttention-3), flash2 (FlashAttention-2) or materialized (scores in HBM, as "
                  "before 2022)")
      ->check(CLI::IsMember({"flash", "cudnn", "flash2", "materialized"}));
  fused_loss_option = app->add_flag("--fused-loss", fused_loss,
                "lm_head and the loss run as one chunked op that never materializes the logits: "
                "Liger-Kernel's fused linear cross-entropy (the Trainer's use_liger_kernel, "
                "ArcticTraining's liger_kernel)");
  tiled_mlp_option = app->add_flag("--tiled-mlp", tiled_mlp,
                "DeepSpeed's TiledMLP (ALST's tiled_mlp_compute): each dense MLP runs in sequence shards, saves "
                "only its input and runs its forward again in backward");
  expandable_segments_option = app->add_flag("--expandable-segments", expandable_segments,
                "the run sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator grows "
                "segments instead of splitting blocks, so the cluster's fragmentation allowance is not added");
  app->add_option("--attn-impl", attn_impl,
                  "attention implementation transformers runs (sdpa, flash_attention_2, eager, ...; default: "
                  "the model config's _attn_implementation): the autosp pass needs sdpa");
  app->add_option("--deepspeed-version", deepspeed_version,
                  "DeepSpeed the run uses (X.Y, X.Y.Z or master; default 0.19.6, main at edaa7221): decides "
                  "how ZeRO-3 issues its collectives and the release's rules");
}

namespace {

bool GivenOnCommandLine(const CLI::Option* option) { return option != nullptr && option->count() > 0; }
// A plan snapshot records every flag as simulated (recompute, pp, the engine flags), so its replay
// gives them and the config's _ds_plan note does not override them.
bool GivenOrRecorded(const CLI::Option* option, const SimArgs& args) {
  return args.flags_are_explicit || GivenOnCommandLine(option);
}

}  // namespace

// tune writes what a plan needs beyond DeepSpeed's config under "_ds_plan" (a key DeepSpeed
// ignores): recompute, pipeline stages and Megatron's engine settings. Each flag the command line
// did not give takes the note's value, so an emitted plan simulates as tune ranked it.
Status ApplyPlanNote(const Json& config, SimArgs* args, std::vector<std::string>* notes) {
  if (!config.is_object() || !config.contains("_ds_plan")) return Status::Ok();
  const Json& note = config["_ds_plan"];
  if (!note.is_object()) return Error{"_ds_plan must be an object (ds-plan tune writes it)"};
  std::vector<std::string> used;
  auto integer = [&](const char* key, int64_t lo, int64_t hi) -> Result<std::optional<int64_t>> {
    if (!note.contains(key)) return std::optional<int64_t>();
    const Json& v = note[key];
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
      return Error{"_ds_plan." + std::string(key) + " must be an integer in [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "], got " + v.dump().substr(0, 40)};
    }
    return std::optional<int64_t>(v.get<int64_t>());
  };
  if (note.contains("recompute") && !GivenOrRecorded(args->recompute_option, *args)) {
    const Json& v = note["recompute"];
    if (!v.is_string() || (v != "none" && v != "selective" && v != "full")) {
      return Error{"_ds_plan.recompute must be \"none\", \"selective\" or \"full\", got " + v.dump().substr(0, 40)};
    }
    args->recompute = v.get<std::string>();
    used.push_back("recompute " + args->recompute);
  }
  auto pp = integer("pipeline_stages", 1, int64_t{1} << 16);
  if (!pp.ok()) return pp.error();
  if (*pp && !GivenOrRecorded(args->world.pp_option, *args)) {
    args->world.pp = **pp;
    used.push_back("pp " + std::to_string(**pp));
  }
  if (note.contains("engine") && !GivenOrRecorded(args->engine_option, *args)) {
    const Json& v = note["engine"];
    if (!v.is_string() || !sim::ParseEngineName(v.get<std::string>())) {
      return Error{"_ds_plan.engine must be deepspeed, megatron-deepspeed, megatron-lm or fsdp2, got " +
                   v.dump().substr(0, 40)};
    }
    args->engine = v.get<std::string>();
    used.push_back("engine " + args->engine);
  }
  auto tp = integer("tensor_model_parallel_size", 1, int64_t{1} << 20);
  if (!tp.ok()) return tp.error();
  if (*tp && !GivenOrRecorded(args->tp_option, *args)) {
    args->megatron_tp = **tp;
    used.push_back("tp " + std::to_string(**tp));
  }
  if (note.contains("sequence_parallel") && !GivenOrRecorded(args->megatron_sp_option, *args)) {
    if (!note["sequence_parallel"].is_boolean()) return Error{"_ds_plan.sequence_parallel must be true or false"};
    args->megatron_sp = note["sequence_parallel"].get<bool>();
    if (args->megatron_sp) used.push_back("megatron sp");
  }
  auto vs = integer("virtual_pipeline_stages", 1, 1024);
  if (!vs.ok()) return vs.error();
  if (*vs && !GivenOrRecorded(args->virtual_stages_option, *args)) {
    args->virtual_stages = static_cast<int>(**vs);
    used.push_back("virtual stages " + std::to_string(**vs));
  }
  auto calls = integer("pp_schedule_micro_batches", 1, int64_t{1} << 30);
  if (!calls.ok()) return calls.error();
  if (*calls && !GivenOrRecorded(args->pp_schedule_micro_batches_option, *args)) {
    args->pp_schedule_micro_batches = **calls;
    used.push_back("pipeline schedule calls of " + std::to_string(**calls) + " micro-batches");
  }
  auto cp = integer("context_parallel_size", 1, int64_t{1} << 20);
  if (!cp.ok()) return cp.error();
  if (*cp && !GivenOrRecorded(args->cp_option, *args)) {
    args->cp = **cp;
    used.push_back("cp " + std::to_string(**cp));
  }
  auto ep = integer("expert_parallel_size", 1, int64_t{1} << 20);
  if (!ep.ok()) return ep.error();
  if (*ep && !GivenOrRecorded(args->ep_option, *args)) {
    args->ep = **ep;
    used.push_back("ep " + std::to_string(**ep));
  }
  auto etp = integer("expert_tensor_parallel_size", 1, int64_t{1} << 20);
  if (!etp.ok()) return etp.error();
  if (*etp && !GivenOrRecorded(args->etp_option, *args)) {
    args->etp = **etp;
    used.push_back("etp " + std::to_string(**etp));
  }
  if (note.contains("moe_token_dispatcher_type") && !GivenOrRecorded(args->moe_token_dispatcher_option, *args)) {
    const Json& v = note["moe_token_dispatcher_type"];
    if (!v.is_string() || (v != "alltoall" && v != "allgather")) {
      return Error{"_ds_plan.moe_token_dispatcher_type must be \"alltoall\" or \"allgather\", got " +
                   v.dump().substr(0, 40)};
    }
    args->moe_token_dispatcher = v.get<std::string>();
    used.push_back("moe token dispatcher " + args->moe_token_dispatcher);
  }
  if (note.contains("attention") && !GivenOrRecorded(args->attention_option, *args)) {
    const Json& v = note["attention"];
    if (!v.is_string() || !sim::ParseAttentionKernel(v.get<std::string>())) {
      return Error{"_ds_plan.attention must be \"flash\", \"cudnn\", \"flash2\" or \"materialized\", got " +
                   v.dump().substr(0, 40)};
    }
    args->attention = v.get<std::string>();
    used.push_back("attention " + args->attention);
  }
  // Boolean keys: the flag's value when the command line did not give it.
  for (auto [key, field, option, label] :
       {std::tuple{"tp_comm_overlap", &args->tp_comm_overlap, args->tp_comm_overlap_option, "tp comm overlap"},
        std::tuple{"fp8", &args->fp8, args->fp8_option, "fp8"},
        std::tuple{"fp8_param_gather", &args->fp8_param_gather, args->fp8_param_gather_option, "fp8 param gather"},
        std::tuple{"bf16_grad_buffer", &args->bf16_grad_buffer, args->bf16_grad_buffer_option, "bf16 grad buffer"},
        std::tuple{"bf16_optimizer_states", &args->bf16_optimizer_states, args->bf16_optimizer_states_option,
                   "bf16 optimizer states"},
        std::tuple{"bf16_params", &args->bf16_params, args->bf16_params_option, "bf16 parameters"},
        std::tuple{"bf16_loss", &args->bf16_loss, args->bf16_loss_option, "bf16 loss"},
        std::tuple{"te_modules", &args->te_modules, args->te_modules_option, "TransformerEngine modules"},
        std::tuple{"automodel_experts", &args->automodel_experts, args->automodel_experts_option,
                   "AutoModel's expert wrapping"},
        std::tuple{"fake_balanced_gate", &args->fake_balanced_gate, args->fake_balanced_gate_option,
                   "fake balanced gate"},
        std::tuple{"torch_compile", &args->torch_compile, args->torch_compile_option, "torch.compile"},
        std::tuple{"eager_loss", &args->eager_loss, args->eager_loss_option, "eager loss"},
        std::tuple{"moe_grouped_gemm", &args->moe_grouped_gemm, args->moe_grouped_gemm_option, "moe grouped gemm"},
        std::tuple{"fused_loss", &args->fused_loss, args->fused_loss_option, "fused loss"},
        std::tuple{"tiled_mlp", &args->tiled_mlp, args->tiled_mlp_option, "tiled MLP"},
        std::tuple{"expandable_segments", &args->expandable_segments, args->expandable_segments_option,
                   "expandable segments"}}) {
    if (!note.contains(key) || GivenOrRecorded(option, *args)) continue;
    if (!note[key].is_boolean()) return Error{"_ds_plan." + std::string(key) + " must be true or false"};
    *field = note[key].get<bool>();
    if (*field) used.push_back(label);
  }
  if (!used.empty()) {
    std::string list;
    for (const std::string& u : used) list += (list.empty() ? "" : ", ") + u;
    notes->push_back("from the config's _ds_plan (flags given on the command line win): " + list);
  }
  return Status::Ok();
}

std::optional<NotedLayout> ReadNotedLayout(const std::string& path, const Json& root, const WorldOptions& world,
                                           std::vector<std::string>* notes) {
  if (!root.is_object() || !root.contains("_ds_plan")) return std::nullopt;
  SimArgs planned;
  planned.world = world;  // --pp given on the command line wins
  std::vector<std::string> used;
  if (Status note = ApplyPlanNote(root, &planned, &used); !note.ok()) {
    notes->push_back(path + ": " + note.error().message + ": its _ds_plan is not used");
    return std::nullopt;
  }
  for (const std::string& u : used) notes->push_back(path + ": " + u);
  NotedLayout out;
  out.pp = planned.world.pp;
  out.framework = &sim::FrameworkOf(sim::ParseEngineName(planned.engine).value_or(sim::Engine::kDeepSpeed));
  if (out.framework->megatron_tp() && planned.megatron_tp > 0) out.mpu_tp = planned.megatron_tp;
  if (out.framework->context_parallel != sim::ContextParallel::kNone && planned.cp > 1) out.cp = planned.cp;
  if (out.framework->expert_parallel_flag && planned.ep > 1) {
    out.ep = planned.ep;
    // Megatron-Core's --expert-tensor-parallel-size defaults to the tensor-parallel size.
    if (out.framework->megatron_moe_options) out.etp = planned.etp > 0 ? planned.etp : std::max<int64_t>(out.mpu_tp, 1);
  }
  return out;
}

void PrintWarnings(const FileReport& report) {
  FileReport warnings = report;
  std::erase_if(warnings.diagnostics, [](const Diagnostic& d) { return d.severity != Severity::kWarning; });
  if (warnings.diagnostics.empty()) return;
  std::cerr << RenderText({warnings}, StyleFor(stderr));
}

void PrintPassNotes(const std::string& config, const std::vector<std::string>& notes,
                    const std::vector<std::string>& remarks) {
  for (const std::string& note : notes) std::cerr << config << ": warning: " << note << "\n";
  for (const std::string& remark : remarks) std::cerr << config << ": note: " << remark << "\n";
}

void SetLayoutFlags(const sim::PlanKnobs& k, SimArgs* a) {
  a->engine = std::string(sim::EngineName(k.engine.engine));
  a->megatron_tp = k.megatron_tp;
  a->megatron_sp = k.engine.megatron_sp;
  a->virtual_stages = k.engine.virtual_stages;
  a->pp_schedule_micro_batches = k.engine.pipeline_schedule_micro_batches;
  a->cp = k.cp;
  a->ep = k.ep;
  a->etp = k.etp;
  a->fp8 = k.engine.fp8;
  a->tp_comm_overlap = k.engine.tp_comm_overlap;
  a->moe_token_dispatcher = k.engine.moe_dispatcher == sim::MoeDispatcher::kAllGather ? "allgather" : "alltoall";
  a->moe_grouped_gemm = k.engine.moe_grouped_gemm;
  a->fp8_param_gather = k.engine.fp8_param_gather;
  a->cp_comm_type = k.engine.cp_comm == sim::ContextParallel::kRingP2p      ? "p2p"
                    : k.engine.cp_comm == sim::ContextParallel::kAllToAll   ? "a2a"
                    : k.engine.cp_comm == sim::ContextParallel::kAllGatherKv ? "allgather"
                                                                             : "";
}

Result<sim::PlanKnobs> KnobsOf(const SimArgs& args) {
  sim::PlanKnobs k;
  k.world_size = args.world.world_size;
  k.nodes = args.world.nodes;
  k.gpus_per_node = args.world.gpus_per_node;
  k.pp = args.world.pp;
  k.seq_len = args.seq_len;
  k.recompute = sim::ParseRecompute(args.recompute).value_or(sim::Recompute::kNone);
  k.convention = args.convention == "deepspeed" ? sim::MemoryConvention::kDeepSpeedEstimator
                                                : sim::MemoryConvention::kZeroPaper;
  k.engine.engine = sim::ParseEngineName(args.engine).value_or(sim::Engine::kDeepSpeed);
  k.engine.megatron_sp = args.megatron_sp;
  k.engine.virtual_stages = args.virtual_stages;
  k.engine.pipeline_schedule_micro_batches = args.pp_schedule_micro_batches;
  k.engine.attention = sim::ParseAttentionKernel(args.attention).value_or(sim::AttentionKernel::kFramework);
  k.engine.fused_loss = args.fused_loss;
  k.engine.tiled_mlp = args.tiled_mlp;
  k.engine.expandable_segments = args.expandable_segments;
  if (!args.deepspeed_version.empty()) {
    auto v = ParseKnownDeepSpeedVersion(args.deepspeed_version);
    if (!v.ok()) return v.error();
    k.engine.deepspeed_version = *v;
  }
  k.megatron_tp = args.megatron_tp;
  k.cp = args.cp;
  k.ep = args.ep;
  k.engine.fp8 = args.fp8;
  k.engine.tp_comm_overlap = args.tp_comm_overlap;
  k.etp = args.etp;
  k.engine.moe_dispatcher =
      args.moe_token_dispatcher == "allgather" ? sim::MoeDispatcher::kAllGather : sim::MoeDispatcher::kAllToAll;
  k.engine.moe_grouped_gemm = args.moe_grouped_gemm;
  k.engine.fp8_param_gather = args.fp8_param_gather;
  k.engine.bf16_grad_buffer = args.bf16_grad_buffer;
  k.engine.bf16_optimizer_states = args.bf16_optimizer_states;
  k.engine.bf16_params = args.bf16_params;
  k.engine.bf16_loss = args.bf16_loss;
  k.engine.te_modules = args.te_modules;
  k.engine.automodel_experts = args.automodel_experts;
  k.engine.fake_balanced_gate = args.fake_balanced_gate;
  k.engine.torch_compile = args.torch_compile;
  k.engine.eager_loss = args.eager_loss;
  if (args.cp_comm_type == "p2p") k.engine.cp_comm = sim::ContextParallel::kRingP2p;
  if (args.cp_comm_type == "a2a") k.engine.cp_comm = sim::ContextParallel::kAllToAll;
  if (args.cp_comm_type == "allgather") k.engine.cp_comm = sim::ContextParallel::kAllGatherKv;
  k.attn_implementation = args.attn_impl;
  return k;
}

std::unique_ptr<SimSetup> PrepareSimulation(const SimArgs& given_args, int* exit_code) {
  auto fail = [exit_code](int code) {
    *exit_code = code;
    return nullptr;
  };
  auto s = std::make_unique<SimSetup>();
  // Read once: the config may be a pipe (/dev/stdin).
  auto text = ReadFile(given_args.config);
  if (!text.ok()) return fail(UsageError(text.error().message));
  s->effective = given_args;
  {
    const Json note = ParseDeepSpeedConfig(given_args.config, text.value()).doc.root;
    Status merged = ApplyPlanNote(note, &s->effective, &s->notes);
    if (!merged.ok()) return fail(UsageError(given_args.config + ": " + merged.error().message));
  }
  const SimArgs& args = s->effective;
  auto cluster = LoadCluster(args.cluster_path);
  if (!cluster.ok()) return fail(UsageError("--cluster: " + cluster.error().message));
  auto model = LoadModel(args.model_path);
  if (!model.ok()) return fail(UsageError("--model: " + model.error().message));
  s->model = std::move(model).value();
  auto knobs = KnobsOf(args);
  if (!knobs.ok()) return fail(UsageError(knobs.error().message));
  std::vector<Override> overrides;
  for (const auto& set : args.sets) {
    auto o = ParseOverride(set);
    if (!o.ok()) return fail(UsageError(o.error().message));
    overrides.push_back(std::move(o).value());
  }
  s->eval = sim::Evaluate(s->model, *cluster, args.config, std::move(text).value(), overrides, *knobs);
  const sim::Evaluation& e = *s->eval;
  switch (e.outcome) {
    case sim::Evaluation::Outcome::kNumbers:
      break;
    case sim::Evaluation::Outcome::kConfigErrors:
      // Same rendering as validate; stderr, so stdout only ever carries the command's report.
      std::cerr << RenderText({e.report}, StyleFor(stderr));
      return fail(kExitFindings);
    case sim::Evaluation::Outcome::kNoPlan:
      std::cerr << args.config << ": error: " << e.message << "\n";
      return fail(kExitFindings);
    case sim::Evaluation::Outcome::kBadBatch:
      return fail(UsageError(args.config + ": " + e.message));
    case sim::Evaluation::Outcome::kBadKnobs:
      return fail(UsageError(e.message));
  }
  s->notes.insert(s->notes.end(), e.notes.begin(), e.notes.end());
  *exit_code = kExitOk;
  return s;
}

}  // namespace dsp::app
