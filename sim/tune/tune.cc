// SPDX-License-Identifier: Apache-2.0
#include "sim/tune/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "core/plan/plan.h"
#include "core/rules/autoep_detection.h"
#include "core/validate/validator.h"
#include "sim/graph/builder.h"
#include "sim/comm/group_links.h"
#include "sim/cost/param_sharding.h"
#include "sim/passes/from_config.h"
#include "sim/schedule/program.h"
#include "sim/schedule/simulator.h"
#include "sim/cost/sim_input.h"
#include "sim/frameworks/attention_kernel.h"

namespace dsp::sim {
namespace {

std::vector<int64_t> PowersOfTwoUpTo(int64_t limit) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= limit; v *= 2) out.push_back(v);
  return out;
}

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// One point of the layout space: everything that changes the group tables or the validate
// verdict's inputs.
struct Layout {
  int64_t tp = 1, sp = 1, ep = 1, pp = 1;
  int64_t etp = 1;  // megatron-lm's expert-tensor-parallel size
};

// The DeepSpeed config of one candidate. The batch triple uses DeepSpeed's world-size semantics
// (the full world under AutoTP, world / sp with sequence_parallel_size, the mpu's or pipeline's
// data-parallel size), so validate accepts it. Settings outside the DeepSpeed config (pipeline
// stages, Megatron's tensor parallelism, recompute) go under "_ds_plan", a comment to DeepSpeed.
// What a candidate's DeepSpeed config says beyond the layout and the ZeRO stage.
struct ConfigChoice {
  int zero = 0;
  Offload offload = Offload::kNone;
  bool torch_autocast = false;
  bool cpu_checkpointing = false;
};

// The training-script and precision options of `o` that apply to `engine` on a plan with `ep`
// expert-parallel ranks, decided once: CandidateInput prices them, MakeConfig records them.
EngineSettings ApplicableOptions(const TuneOptions& o, Engine engine, int64_t ep) {
  EngineSettings e;
  e.engine = engine;
  const FrameworkProfile& fw = e.framework();
  // Liger and TiledMLP patch transformers' modules: the Megatron engines run their own.
  const bool hf = fw.trains_transformers_modules, fsdp2 = fw.gradients == GradientSync::kFsdp2;
  e.fused_loss = o.fused_loss && hf;
  e.tiled_mlp = o.tiled_mlp && hf && !fw.op_level_sac;
  e.expandable_segments = o.expandable_segments;
  e.bf16_params = o.bf16_params && fsdp2;
  e.bf16_grad_buffer = o.bf16_grad_buffer && fw.megatron_precision_options;
  e.bf16_optimizer_states = o.bf16_optimizer_states && (fw.megatron_precision_options || e.bf16_params);
  e.bf16_loss = o.bf16_loss && hf && !e.fused_loss;
  e.te_modules = o.te_modules && fsdp2;
  // Only where experts are expert-parallel (simulate refuses the flag without --ep).
  e.automodel_experts = o.automodel_experts && fsdp2 && ep > 1;
  e.fake_balanced_gate = o.fake_balanced_gate && fsdp2 && ep > 1;
  e.torch_compile = o.torch_compile && fsdp2;
  e.eager_loss = o.eager_loss && e.torch_compile;
  return e;
}

Json MakeConfig(const ModelSpec& model, const TuneOptions& o, int64_t world, const Layout& l,
                const ConfigChoice& choice, int64_t micro, int64_t gas, Recompute recompute,
                int virtual_stages, bool megatron_sp, bool fp8, bool tp_comm_overlap) {
  const int zero = choice.zero;
  const Offload offload = choice.offload;
  const FrameworkProfile& fw = FrameworkOf(o.engine);
  const bool megatron = fw.megatron_tp();  // tp is the mpu's (or torchtitan's), not AutoTP's
  const bool context_parallel = l.sp > 1 && fw.context_parallel != ContextParallel::kNone;
  Json c = Json::object();
  int64_t ws = world;
  if (l.sp > 1) ws = world / l.sp;
  if (l.pp > 1 || megatron) ws = world / (l.pp * (megatron ? l.tp : 1) * (context_parallel ? l.sp : 1));
  c["train_batch_size"] = micro * gas * ws;
  c["train_micro_batch_size_per_gpu"] = micro;
  c["gradient_accumulation_steps"] = gas;
  c["gradient_clipping"] = 1.0;
  if (choice.torch_autocast) {
    // runtime/torch_autocast.py: parameters stay fp32, Linear layers compute in bf16. No bf16
    // section: releases before PR #7700 reject the two together.
    c["torch_autocast"] = {{"enabled", true}, {"dtype", "bfloat16"}};
  } else {
    c["bf16"] = {{"enabled", true}};
  }
  c["optimizer"] = {{"type", "AdamW"}, {"params", {{"lr", 3e-4}, {"weight_decay", 0.1}}}};
  Json z = {{"stage", zero}};
  if (zero > 0) z["overlap_comm"] = true;
  if (offload != Offload::kNone) z["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  if (offload == Offload::kOptimizerAndParams) z["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  c["zero_optimization"] = z;
  if (choice.cpu_checkpointing) c["activation_checkpointing"] = {{"cpu_checkpointing", true}};
  if (l.tp > 1 && !megatron) c["tensor_parallel"] = {{"autotp_size", l.tp}};
  if (l.sp > 1 && !context_parallel) c["sequence_parallel_size"] = l.sp;
  if (model.is_moe() && l.ep >= 1 && fw.autoep) {
    Json e = {{"enabled", true}, {"autoep_size", l.ep}};
    for (const char* preset : {"mixtral", "qwen3_moe"}) {
      if (model.model_type == preset) e["preset_model"] = preset;
    }
    c["expert_parallel"] = e;
  }
  Json note = {{"recompute", RecomputeName(recompute)}};
  if (l.pp > 1) note["pipeline_stages"] = l.pp;
  if (megatron) {
    note["engine"] = EngineName(o.engine);
    note["tensor_model_parallel_size"] = l.tp;
    if (megatron_sp) note["sequence_parallel"] = true;
    if (virtual_stages > 1) note["virtual_pipeline_stages"] = virtual_stages;
    if (context_parallel) note["context_parallel_size"] = l.sp;
    if (l.ep > 1 && fw.expert_parallel_flag) note["expert_parallel_size"] = l.ep;
    // Always written: without it Megatron (and simulate) would take etp = tp.
    if (l.ep > 1 && fw.megatron_moe_options) note["expert_tensor_parallel_size"] = l.etp;
    // Tune prices Megatron's MoE layers with grouped experts (CandidateInput).
    if (model.is_moe() && fw.megatron_moe_options) note["moe_grouped_gemm"] = true;
    if (fp8) note["fp8"] = true;
    if (tp_comm_overlap) note["tp_comm_overlap"] = true;
  }
  // What the training script changes, as CandidateInput prices it, so the file simulates as ranked.
  if (o.attention != AttentionKernel::kFramework) note["attention"] = std::string(AttentionKernelName(o.attention));
  const EngineSettings a = ApplicableOptions(o, o.engine, l.ep);
  for (auto [key, on] : {std::pair{"fused_loss", a.fused_loss}, std::pair{"tiled_mlp", a.tiled_mlp},
                         std::pair{"expandable_segments", a.expandable_segments},
                         std::pair{"bf16_grad_buffer", a.bf16_grad_buffer},
                         std::pair{"bf16_optimizer_states", a.bf16_optimizer_states},
                         std::pair{"bf16_params", a.bf16_params}, std::pair{"te_modules", a.te_modules},
                         std::pair{"automodel_experts", a.automodel_experts}, std::pair{"bf16_loss", a.bf16_loss},
                         std::pair{"fake_balanced_gate", a.fake_balanced_gate},
                         std::pair{"torch_compile", a.torch_compile}, std::pair{"eager_loss", a.eager_loss}}) {
    if (on) note[key] = true;
  }
  c["_ds_plan"] = note;
  return c;
}

bool Better(const TunedPlan& a, const TunedPlan& b) {
  if (a.tokens_per_second != b.tokens_per_second) return a.tokens_per_second > b.tokens_per_second;
  if (a.rank_seconds() != b.rank_seconds()) return a.rank_seconds() < b.rank_seconds();
  // Deterministic tie-break: less memory, then the simpler layout.
  if (a.peak_bytes != b.peak_bytes) return a.peak_bytes < b.peak_bytes;
  return std::tie(a.engine, a.tp, a.pp, a.sp, a.ep, a.etp, a.zero_stage, a.micro_batch, a.virtual_stages,
                  a.torch_autocast, a.cpu_checkpointing, a.fp8, a.tp_comm_overlap) <
         std::tie(b.engine, b.tp, b.pp, b.sp, b.ep, b.etp, b.zero_stage, b.micro_batch, b.virtual_stages,
                  b.torch_autocast, b.cpu_checkpointing, b.fp8, b.tp_comm_overlap);
}

std::string Percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
  return buf;
}

// What every evaluation of one candidate config shares: plan, model, cluster, ZeRO settings and
// the engine and workload options tune was given. Every candidate trains in bf16 (MakeConfig).
SimInput CandidateInput(const Plan& plan, const ModelSpec& model, const Cluster& cluster,
                        const TuneOptions& o, const Json& config, int zero) {
  SimInput in;
  in.plan = &plan;
  in.model = &model;
  in.cluster = &cluster;
  in.zero = ReadZeroSettings(config, o.deepspeed_version);
  in.checkpointing = ReadCheckpointSettings(config, o.deepspeed_version);
  in.precision = ReadPrecisionSettings(config);
  in.workload.optimizer_state_bytes_per_param = ReadOptimizerStateBytes(config, in.precision);
  in.engine.engine = o.engine;
  in.engine.attention = ResolveAttentionKernel(o.attention, in.engine.framework(), cluster.gpu.compute_capability,
                                               model.attn_implementation);
  in.engine.deepspeed_version = o.deepspeed_version;
  const EngineSettings a = ApplicableOptions(o, o.engine, plan.sizes.ep);
  in.engine.fused_loss = a.fused_loss;
  in.engine.tiled_mlp = a.tiled_mlp;
  in.engine.expandable_segments = a.expandable_segments;
  // Megatron's MoE layers as its recipes run them: grouped expert GEMMs, the all-to-all dispatcher.
  in.engine.moe_grouped_gemm = in.engine.framework().megatron_moe_options && model.is_moe();
  in.workload.seq_len = o.seq_len;
  in.workload.convention = o.convention;
  in.engine.bf16_params = a.bf16_params;
  in.engine.bf16_grad_buffer = a.bf16_grad_buffer;
  in.engine.bf16_optimizer_states = a.bf16_optimizer_states;
  in.engine.bf16_loss = a.bf16_loss;
  in.engine.te_modules = a.te_modules;
  in.engine.automodel_experts = a.automodel_experts;
  in.engine.fake_balanced_gate = a.fake_balanced_gate;
  in.engine.torch_compile = a.torch_compile;
  in.engine.eager_loss = a.eager_loss;
  if (in.engine.bf16_optimizer_states || in.engine.bf16_params) {
    in.workload.optimizer_state_bytes_per_param = EngineOptimizerStateBytes(in.engine, ReadOptimizerStateBytes(config));
  }
  if (!in.precision.torch_autocast && EngineFp32Gradients(in.engine, true, zero)) {
    in.workload.gradient_bytes_per_element = 4;
  }
  return in;
}

}  // namespace

// The event simulation of one plan's step, or 0 where the schedule does not cover it (pipeline
// stages, Megatron engines) or a step fails to build (a pass refuses the plan).
double ScheduleStepSeconds(const ModelSpec& model, const Cluster& cluster, const TuneOptions& o,
                           int64_t world, int64_t gpn, const TunedPlan& p, int64_t max_micro_steps) {
  if (max_micro_steps > 0 && p.grad_accum > max_micro_steps) {
    // Without pipeline stages every micro-step between the first and the boundary one does the
    // same work, so the step is linear in the micro-steps: simulate two counts and extrapolate
    // instead of building a program of thousands of micro-steps (4,096 took a minute and a GB).
    const int64_t hi = max_micro_steps, lo = std::max<int64_t>(hi / 2, 3);
    TunedPlan a = p, b = p;
    a.grad_accum = hi;
    b.grad_accum = lo;
    const double t_hi = ScheduleStepSeconds(model, cluster, o, world, gpn, a, 0);
    const double t_lo = ScheduleStepSeconds(model, cluster, o, world, gpn, b, 0);
    if (t_hi <= 0 || t_lo <= 0) return 0;
    const double per_micro_step = (t_hi - t_lo) / static_cast<double>(hi - lo);
    return t_hi + per_micro_step * static_cast<double>(p.grad_accum - hi);
  }
  if (p.pp > 1 || !FrameworkOf(o.engine).event_schedule) return 0;
  PlanInputs pin;
  pin.world_size = world;
  pin.gpus_per_node = gpn;
  auto plan = BuildPlan(p.config, pin);
  if (!plan.ok()) return 0;
  auto graph = graph::BuildModelGraph(model);
  if (!graph.ok()) return 0;
  auto pipeline = passes::PipelineForConfig({.model = &model, .config = &p.config, .plan = &*plan});
  if (!pipeline.ok() || !pipeline->Run(*graph).ok()) return 0;
  SimInput in = CandidateInput(*plan, model, cluster, o, p.config, p.zero_stage);
  in.workload.micro_batch = p.micro_batch;
  in.workload.grad_accum = p.grad_accum;
  in.workload.recompute = p.recompute;
  auto program = schedule::BuildProgram(*graph, in);
  if (!program.ok()) return 0;
  auto sched = schedule::Simulate(*program, in);
  return sched.ok() ? sched->step_seconds : 0;
}

std::string_view OffloadName(Offload o) {
  switch (o) {
    case Offload::kNone: return "none";
    case Offload::kOptimizer: return "optimizer";
    case Offload::kOptimizerAndParams: return "optimizer+params";
  }
  return "none";
}

bool RankedBefore(const TunedPlan& a, const TunedPlan& b) { return Better(a, b); }

double PublishedMfuCeiling(const std::string& gpu_name, std::string* source) {
  struct Ceiling {
    const char* gpu;
    double mfu;
    const char* source;
  };
  static constexpr Ceiling kCeilings[] = {
      {"A100", 0.563,
       "Korthikanti et al. 2022 Table 5: 1T parameters on 512 A100, selective recompute and "
       "sequence parallelism"},
      {"H100", 0.494, "the Megatron-LM README's H100 table: 16B parameters on 192 H100"},
      {"H200", 0.494, "the Megatron-LM README's H100 table (same compute as H200): 16B on 192 H100"},
  };
  for (const Ceiling& c : kCeilings) {
    if (gpu_name.find(c.gpu) != std::string::npos) {
      if (source != nullptr) *source = c.source;
      return c.mfu;
    }
  }
  return 0;
}

namespace {

// Layout candidates: tensor parallelism inside a node (AutoTP, or Megatron's), pipeline stages
// that split the layers evenly, Ulysses SP and AutoEP where the framework has them.
std::vector<Layout> LayoutCandidates(const ModelSpec& model, const TuneOptions& options, int64_t world,
                                     int64_t gpn) {
  const FrameworkProfile& fw = FrameworkOf(options.engine);
  std::vector<Layout> layouts;
  std::vector<int64_t> pps = {1};
  if (options.search_pipeline) {
    pps.clear();
    for (int64_t pp : Divisors(model.num_hidden_layers)) {
      if (world % pp == 0) pps.push_back(pp);
    }
  }
  for (int64_t tp : PowersOfTwoUpTo(std::min(gpn, world))) {
    for (int64_t pp : pps) {
      if (world % (tp * pp) != 0) continue;
      for (int64_t sp : PowersOfTwoUpTo(world / (tp * pp))) {
        if (sp > 1) {
          // Ulysses alone under DeepSpeed; the others' context parallelism composes with TP and
          // PP and splits each sequence into 2 x cp load-balanced chunks.
          const bool context_parallel = fw.context_parallel != ContextParallel::kNone &&
                                        sp <= options.max_context_parallel && options.seq_len % (2 * sp) == 0;
          if (!context_parallel && (tp > 1 || pp > 1 || !fw.ulysses)) continue;
        }
        std::vector<int64_t> eps = {1};
        // AutoEP as the emitted config sets it (no preset_model, no patterns): only where its
        // presets find the model's MoE blocks once each (core/rules/autoep_detection.h).
        if (model.is_moe() && fw.autoep && pp == 1 &&
            autoep::Detect(model, {}) == autoep::Detection::kFound) {
          eps = Divisors(model.num_experts);
        }
        // Megatron-Core's and torchtitan's expert parallelism folds over the stage's ranks.
        if (model.is_moe() && fw.expert_parallel_flag) eps = Divisors(model.num_experts);
        for (int64_t ep : eps) {
          if (world % (tp * sp * pp) != 0 || world % ep != 0) continue;
          if (fw.expert_parallel_flag && (world / pp) % ep != 0) continue;
          if (ep > 1 && tp > 1 && fw.expert_parallel_flag) {
            // Megatron-Core: experts over etp = tp (its default) or whole (etp 1, MoE parallel
            // folding); torchtitan's expert-tensor parallelism is not modelled.
            if (!fw.megatron_moe_options) continue;
            for (int64_t etp : {int64_t{1}, tp}) {
              if ((world / pp) % (ep * etp) == 0 && model.moe_intermediate_size % etp == 0) {
                layouts.push_back({tp, sp, ep, pp, etp});
              }
            }
            continue;
          }
          layouts.push_back({tp, sp, ep, pp});
        }
      }
    }
  }
  return layouts;
}

// The (ZeRO stage, offload, precision, cpu_checkpointing) configs of one layout the framework can
// run: its optimizer's ZeRO stages (DeepSpeed's PipelineEngine takes ZeRO 0-1 only; Megatron-LM's
// distributed optimizer is ZeRO-1's partitioning), offload and torch_autocast where it has them.
std::vector<ConfigChoice> ConfigChoices(const TuneOptions& options, const Layout& l) {
  const FrameworkProfile& fw = FrameworkOf(options.engine);
  const int max_zero = l.pp > 1 ? std::min(fw.max_zero_stage, fw.pipeline_max_zero_stage) : fw.max_zero_stage;
  std::vector<ConfigChoice> choices;
  for (int zero = 0; zero <= max_zero; ++zero) {
    // FSDP2 shards at stage 2 or 3 (stage 0 is replicate()); it has no ZeRO-1.
    if (fw.gradients == GradientSync::kFsdp2 && zero == 1) continue;
    for (Offload offload : {Offload::kNone, Offload::kOptimizer, Offload::kOptimizerAndParams}) {
      if (offload != Offload::kNone && (zero == 0 || !fw.offload)) continue;
      if (offload == Offload::kOptimizerAndParams && zero != 3) continue;
      for (bool autocast : {false, true}) {
        // At ZeRO-0 autocast's 4 + 4 + 8 bytes equal mixed precision's 2 + 2 + 12 and its plans
        // would only repeat bf16's.
        if (autocast && (!options.search_autocast || !fw.torch_autocast || zero == 0)) continue;
        for (bool cpu_ckpt : {false, true}) {
          if (cpu_ckpt && (!options.search_cpu_checkpointing || !fw.deepspeed_checkpointing)) continue;
          choices.push_back({zero, offload, autocast, cpu_ckpt});
        }
      }
    }
  }
  return choices;
}

// What a config's plans vary beyond the config: recompute, micro-batch, interleaving, Megatron SP.
struct Variant {
  Recompute recompute;
  int64_t micro;
  int virtual_stages;
  bool megatron_sp;
  bool fp8;
  bool tp_comm_overlap;
};

// FP8 variants where the engine has FP8 linears and the cluster's GPU an FP8 peak.
bool SearchesFp8(const TuneOptions& options, const Cluster& cluster) {
  return FrameworkOf(options.engine).fp8 != Fp8Linear::kNone && cluster.gpu.Fp8PeakFlops() > 0;
}

std::vector<Variant> Variants(const ModelSpec& model, const TuneOptions& options, const Layout& l,
                              const ConfigChoice& choice, int64_t per_rank, bool fp8) {
  const FrameworkProfile& fw = FrameworkOf(options.engine);
  std::vector<int> vs = {1};
  if (fw.interleaved_pipeline && l.pp > 1 && model.num_hidden_layers % l.pp == 0) {
    for (int64_t v : Divisors(model.num_hidden_layers / l.pp)) {
      if (v > 1 && v <= options.max_virtual_stages) vs.push_back(static_cast<int>(v));
    }
  }
  std::vector<Variant> variants;
  for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    // Host-resident checkpoints exist only with full recompute (checkpointing.py saves the layer
    // inputs of deepspeed.checkpointing.checkpoint).
    if (choice.cpu_checkpointing && recompute != Recompute::kFull) continue;
    for (int64_t micro = 1; micro <= std::min(per_rank, options.max_micro_batch); micro *= 2) {
      if (per_rank % micro != 0) continue;
      for (int v : vs) {
        // Megatron's interleaved schedule needs the micro-batches to fill every stage.
        if (v > 1 && (per_rank / micro) % l.pp != 0) continue;
        for (bool msp : {false, true}) {
          if (msp && (!fw.megatron_tp() || l.tp == 1)) continue;
          // torchtitan's TP plan always runs the norms sequence-parallel.
          if (!msp && fw.tp_always_sequence_parallel && l.tp > 1) continue;
          // Megatron-Core's MoELayer refuses MoE with TP but without sequence parallelism.
          if (!msp && fw.megatron_moe_options && model.is_moe() && l.tp > 1) continue;
          for (bool f8 : {false, true}) {
            if (f8 && !fp8) continue;
            const bool can_overlap = TpCommOverlapBlocker(fw, l.tp, msp, options.torch_compile, options.te_modules) ==
                                     TpOverlapBlocker::kNone;
            for (bool overlap : {false, true}) {
              if (overlap && !can_overlap) continue;
              variants.push_back({recompute, micro, v, msp, f8, overlap});
            }
          }
        }
      }
    }
  }
  return variants;
}

// One search: the best `keep` plans so far, and the threshold a config must beat.
class TuneSearch {
 public:
  TuneSearch(const ModelSpec& model, const Cluster& machines, const TuneOptions& options, int64_t world,
             int64_t gpn, TuneResult& result)
      : model_(model), machines_(machines), options_(options), world_(world), gpn_(gpn), result_(result),
        keep_(static_cast<size_t>(std::max({options.top, options.rerank, 1}))),
        counts_(CountParameters(model)) {}

  void SearchLayout(const Layout& l);
  std::vector<TunedPlan> TakeBest();

 private:
  // The fitting, finite-time plans of one config, memory first: only the variants that fit are
  // timed.
  std::vector<TunedPlan> EvaluateConfig(const Plan& plan, const Layout& l, const ConfigChoice& choice,
                                        const Json& config, int64_t per_rank, GroupLinkCache& links);
  // Drops the torch_autocast plans that rank below the same plan in bf16; false when none is left.
  bool DropAutocastTwins(const ConfigChoice& choice, std::vector<TunedPlan>& candidates);
  void Keep(std::vector<TunedPlan>& candidates);
  bool CouldEnterBest(const std::vector<TunedPlan>& candidates) const {
    return floor_ == nullptr || std::any_of(candidates.begin(), candidates.end(),
                                            [&](const TunedPlan& c) { return Better(c, *floor_); });
  }

  const ModelSpec& model_;
  const Cluster& machines_;
  const TuneOptions& options_;
  const int64_t world_, gpn_;
  TuneResult& result_;
  const size_t keep_;
  const ParamCounts counts_;  // one model: counted once for every plan
  std::vector<TunedPlan> kept_;
  // The keep-th best valid plan so far, once there are that many: what a config must beat.
  TunedPlan floor_plan_;
  const TunedPlan* floor_ = nullptr;
  // This layout's valid bf16 plans per (ZeRO stage, offload, cpu_checkpointing): the twins the
  // autocast plans are compared with.
  std::map<std::tuple<int, int, bool>, std::vector<TunedPlan>> bf16_plans_;
};

void TuneSearch::SearchLayout(const Layout& l) {
  const FrameworkProfile& fw = FrameworkOf(options_.engine);
  ValidateOptions vopt;
  vopt.world_size = world_;
  vopt.gpus_per_node = gpn_;
  vopt.model = &model_;
  vopt.seq_len = options_.seq_len;
  vopt.pp = l.pp;
  vopt.mpu_tp = fw.megatron_tp() ? l.tp : 1;
  vopt.version = options_.deepspeed_version;
  vopt.pipeline_allows_sharded_zero = fw.pipeline_max_zero_stage >= 2;
  const bool context_parallel = l.sp > 1 && fw.context_parallel != ContextParallel::kNone;
  vopt.context_parallel = context_parallel ? l.sp : 1;
  PlanInputs pin;
  pin.world_size = world_;
  pin.gpus_per_node = gpn_;
  pin.pp = l.pp;
  pin.layout = fw.rank_layout;
  if (fw.megatron_tp()) pin.mpu_tp = l.tp;
  if (context_parallel) pin.cp = l.sp;
  if (l.ep > 1 && fw.expert_parallel_flag) pin.ep = l.ep;
  if (l.ep > 1 && fw.megatron_moe_options) pin.etp = l.etp;
  Json layout_config = MakeConfig(model_, options_, world_, l, {}, 1, 1, Recompute::kNone, 1, false, false, false);
  auto plan = BuildPlan(layout_config, pin);
  if (!plan.ok()) return;
  const int64_t dp = plan->derived.dp;
  if (result_.global_batch % dp != 0) return;
  const int64_t per_rank = result_.global_batch / dp;
  GroupLinkCache links;  // one plan, one cluster: shared by all its evaluations
  bf16_plans_.clear();
  for (const ConfigChoice& choice : ConfigChoices(options_, l)) {
    // The validate rules decide; batch values are representative (micro 1) and re-derived below.
    Json config = MakeConfig(model_, options_, world_, l, choice, 1, per_rank, Recompute::kNone, 1, false, false, false);
    std::vector<TunedPlan> candidates = EvaluateConfig(*plan, l, choice, config, per_rank, links);
    if (candidates.empty() || !DropAutocastTwins(choice, candidates)) continue;
    // The validate rules (about 100 us a config) run only for a config with a plan that would
    // enter the best `keep` found so far: the others could never be printed or re-ranked,
    // whatever their verdict.
    if (!CouldEnterBest(candidates)) continue;
    result_.validated += static_cast<int64_t>(candidates.size());
    if (!ConfigPassesValidation(config, vopt)) continue;
    result_.valid += static_cast<int64_t>(candidates.size());
    if (!choice.torch_autocast) {
      bf16_plans_[std::make_tuple(choice.zero, static_cast<int>(choice.offload), choice.cpu_checkpointing)] =
          candidates;
    }
    Keep(candidates);
  }
}

std::vector<TunedPlan> TuneSearch::EvaluateConfig(const Plan& plan, const Layout& l, const ConfigChoice& choice,
                                                  const Json& config, int64_t per_rank, GroupLinkCache& links) {
  const std::vector<Variant> variants = Variants(model_, options_, l, choice, per_rank, SearchesFp8(options_, machines_));
  result_.evaluated += static_cast<int64_t>(variants.size());
  SimInput input = CandidateInput(plan, model_, machines_, options_, config, choice.zero);
  input.link_cache = &links;
  input.param_counts = &counts_;
  input.vocab_split = VocabSplitOf(input);  // plan, model and engine: fixed for its variants
  auto apply = [&](const Variant& v) {
    input.workload.micro_batch = v.micro;
    input.workload.grad_accum = per_rank / v.micro;
    input.workload.recompute = v.recompute;
    input.engine.virtual_stages = v.virtual_stages;
    input.engine.megatron_sp = v.megatron_sp;
    input.engine.fp8 = v.fp8;
    input.engine.tp_comm_overlap = v.tp_comm_overlap;
  };
  std::vector<std::pair<const Variant*, MemoryReport>> fitting;
  for (const Variant& v : variants) {
    apply(v);
    MemoryReport mem = EstimateMemory(input);
    if (mem.fits) fitting.emplace_back(&v, std::move(mem));
  }
  result_.fitting += static_cast<int64_t>(fitting.size());
  std::vector<TunedPlan> candidates;
  candidates.reserve(fitting.size());
  for (const auto& [variant, mem] : fitting) {
    const Variant& v = *variant;
    apply(v);
    TimeReport time = EstimateStepTime(input);
    // Never rank a figure that is not a number (inputs at the edge of double's range).
    if (!std::isfinite(time.step_seconds) || !std::isfinite(time.tokens_per_second)) continue;
    TunedPlan p;
    p.engine = options_.engine;
    p.fp8 = v.fp8;
    p.tp_comm_overlap = v.tp_comm_overlap;
    p.tp = l.tp;
    p.sp = l.sp;
    p.ep = l.ep;
    p.etp = l.etp;
    p.pp = l.pp;
    p.dp = plan.derived.dp;
    p.edp = plan.derived.edp;
    p.virtual_stages = v.virtual_stages;
    p.megatron_sp = v.megatron_sp;
    p.zero_stage = choice.zero;
    p.offload = choice.offload;
    p.torch_autocast = choice.torch_autocast;
    p.cpu_checkpointing = choice.cpu_checkpointing;
    p.recompute = v.recompute;
    p.micro_batch = v.micro;
    p.grad_accum = per_rank / v.micro;
    p.peak_bytes = mem.peak_bytes;
    p.hbm_bytes = mem.hbm_bytes;
    p.step_seconds = time.step_seconds;
    p.tokens_per_second = time.tokens_per_second;
    p.mfu = time.mfu;
    candidates.push_back(std::move(p));
  }
  return candidates;
}

bool TuneSearch::DropAutocastTwins(const ConfigChoice& choice, std::vector<TunedPlan>& candidates) {
  // torch_autocast changes numerics, not the layout: an autocast plan that ranks below the same
  // plan in bf16 is left out (a note counts them). It can rank first: under Ulysses SP mixed
  // precision reduces gradients in fp32 (seq_parallel_communication_data_type) where autocast
  // reduces the Linear weights' in bf16 (stage3.py buckets by comm_dtype).
  if (!choice.torch_autocast) return true;
  auto twins = bf16_plans_.find(std::make_tuple(choice.zero, static_cast<int>(choice.offload), choice.cpu_checkpointing));
  if (twins == bf16_plans_.end()) return true;
  const size_t before = candidates.size();
  std::erase_if(candidates, [&](const TunedPlan& c) {
    return std::any_of(twins->second.begin(), twins->second.end(), [&](const TunedPlan& t) {
      return t.recompute == c.recompute && t.micro_batch == c.micro_batch && t.virtual_stages == c.virtual_stages &&
             t.megatron_sp == c.megatron_sp && t.fp8 == c.fp8 && t.tp_comm_overlap == c.tp_comm_overlap &&
             Better(t, c);
    });
  });
  result_.autocast_twins += static_cast<int64_t>(before - candidates.size());
  return !candidates.empty();
}

void TuneSearch::Keep(std::vector<TunedPlan>& candidates) {
  for (TunedPlan& p : candidates) kept_.push_back(std::move(p));
  // Keep the candidate list small: only the best `top` can be printed, and the best `rerank` by
  // the closed form are re-ranked by the schedule, whatever `top` is.
  if (kept_.size() >= keep_) {
    std::sort(kept_.begin(), kept_.end(), Better);
    kept_.resize(keep_);
    floor_plan_ = kept_.back();
    floor_ = &floor_plan_;
  }
}

std::vector<TunedPlan> TuneSearch::TakeBest() {
  std::sort(kept_.begin(), kept_.end(), Better);
  if (kept_.size() > keep_) kept_.resize(keep_);
  for (auto& p : kept_) {
    p.config = MakeConfig(model_, options_, world_, {p.tp, p.sp, p.ep, p.pp, p.etp},
                          {p.zero_stage, p.offload, p.torch_autocast, p.cpu_checkpointing}, p.micro_batch,
                          p.grad_accum, p.recompute, p.virtual_stages, p.megatron_sp, p.fp8, p.tp_comm_overlap);
  }
  return std::move(kept_);
}

// Re-rank the best by the event simulation: the plan printed first is the schedule's winner among
// those it covers.
void RerankBySchedule(const ModelSpec& model, const Cluster& machines, const TuneOptions& options, int64_t world,
                      int64_t gpn, std::vector<TunedPlan>& kept, TuneResult& result) {
  for (size_t i = 0; i < kept.size() && i < static_cast<size_t>(std::max(options.rerank, 0)); ++i) {
    TunedPlan& p = kept[i];
    p.schedule_seconds = ScheduleStepSeconds(model, machines, options, world, gpn, p, kScheduledMicroSteps);
    if (p.schedule_seconds > 0) {
      p.tokens_per_second *= p.step_seconds / p.schedule_seconds;
      p.mfu *= p.step_seconds / p.schedule_seconds;
      ++result.rescheduled;
    }
  }
  std::sort(kept.begin(), kept.end(), Better);
  if (kept.size() > static_cast<size_t>(std::max(options.top, 0))) kept.resize(static_cast<size_t>(options.top));
}

}  // namespace

void AddRankingNotes(const Cluster& cluster, const TuneOptions& options, TuneResult& result) {
  const int64_t twins = result.autocast_twins;
  if (twins > 0) {
    result.notes.push_back(std::to_string(twins) + " torch_autocast plan" + (twins == 1 ? "" : "s") +
                           " left out: each ranks below the same plan in bf16 mixed precision (its fp32 "
                           "parameters and gradients need as much memory or more)");
  }
  if (result.plans.empty()) return;
  std::string source;
  const double ceiling = PublishedMfuCeiling(cluster.gpu.name, &source);
  if (ceiling > 0 && result.plans.front().mfu > ceiling) {
    result.notes.push_back("the best plan's MFU " + Percent(result.plans.front().mfu) +
                           " is above the best published run on " + cluster.gpu.name + " (" + Percent(ceiling) +
                           ", " + source + "): it rests on the cluster's efficiency.matmul " +
                           Percent(cluster.efficiency.matmul) +
                           (options.flash_attention() ? ", fused (Flash) attention" : "") +
                           " and no straggler or data-loader time; calibrate the cluster on your own runs "
                           "(ds-plan calibrate) before trusting it");
  }
}

Result<TuneResult> Tune(const ModelSpec& model, const Cluster& cluster, const TuneOptions& options,
                        const std::function<void(int64_t, int64_t)>& progress) {
  auto start = std::chrono::steady_clock::now();
  const int64_t world = options.world_size;
  if (world <= 0) return Error{"tune needs --world-size (or --nodes and --gpus-per-node)"};
  const int64_t gpn = options.gpus_per_node > 0 ? options.gpus_per_node : cluster.gpus_per_node;
  // The cost model reads the node size from the cluster: keep it in step with --gpus-per-node.
  Cluster machines = cluster;
  machines.gpus_per_node = static_cast<int>(gpn);
  if (options.seq_len <= 0) return Error{"--seq-len must be positive"};
  TuneResult result;
  result.global_batch =
      options.global_batch > 0 ? options.global_batch : std::max<int64_t>(1, (int64_t{4} << 20) / options.seq_len);
  const std::vector<Layout> layouts = LayoutCandidates(model, options, world, gpn);
  TuneSearch search(model, machines, options, world, gpn, result);
  int64_t done = 0;
  for (const Layout& l : layouts) {
    if (progress) progress(done, static_cast<int64_t>(layouts.size()));
    ++done;
    search.SearchLayout(l);
  }
  if (progress) progress(done, static_cast<int64_t>(layouts.size()));
  std::vector<TunedPlan> kept = search.TakeBest();
  RerankBySchedule(model, machines, options, world, gpn, kept, result);
  result.plans = std::move(kept);
  AddRankingNotes(cluster, options, result);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace dsp::sim
