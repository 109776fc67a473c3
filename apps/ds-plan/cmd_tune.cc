// SPDX-License-Identifier: Apache-2.0
// ds-plan tune: search every valid plan for a model on a cluster and rank the ones that fit.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/ds-plan/data_files.h"
#include "apps/ds-plan/command.h"
#include "apps/ds-plan/model_input.h"
#include "apps/ds-plan/world_options.h"
#include "sim/report/error_band.h"
#include "core/util/file_io.h"
#include "sim/tune/tune.h"

namespace dsp::app {
namespace {

struct TuneArgs {
  std::string model_path;
  std::string cluster_path;
  WorldOptions world;
  int64_t seq_len = 4096;
  int64_t global_batch = 0;
  int top = 10;
  std::string emit_config;
  bool force = false;
  std::string convention = "zero-paper";
  std::string format = "text";
  std::string engine = "deepspeed";
  std::vector<std::string> engines;  // --engines: rank plans of several frameworks side by side
  std::string attention = "flash";
  bool no_pipeline = false;
  bool fused_loss = false, tiled_mlp = false, expandable_segments = false;
  bool bf16_grad_buffer = false, bf16_optimizer_states = false, bf16_params = false, bf16_loss = false;
  bool te_modules = false, automodel_experts = false, fake_balanced_gate = false, torch_compile = false;
  bool eager_loss = false;
  std::string deepspeed_version;
};

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.insert(0, width - s.size(), ' ');
  return s;
}

// The engines of the shown plans, in the order they first appear.
std::vector<sim::Engine> EnginesShown(const sim::TuneResult& r) {
  std::vector<sim::Engine> engines;
  for (const auto& p : r.plans) {
    if (std::find(engines.begin(), engines.end(), p.engine) == engines.end()) engines.push_back(p.engine);
  }
  return engines;
}

std::string Text(const sim::TuneResult& r, bool engine_column, const sim::GpuSpec& gpu) {
  // The search time goes to a terminal only (see RunTune), so the report itself is deterministic.
  std::string out = "evaluated " + std::to_string(r.evaluated) + " plans (" + std::to_string(r.fitting) +
                    " fit in memory; the validate rules checked the " + std::to_string(r.validated) +
                    " that could rank: " + std::to_string(r.valid) + " valid); global batch " +
                    std::to_string(r.global_batch) + " sequences\n";
  if (r.plans.empty()) return out + "no valid plan fits in GPU memory\n";
  // "step s" is the closed form; "sched s" the event simulation the best plans are re-ranked by
  // ("-" where the schedule does not cover the plan); tokens/s and MFU follow the ranked time.
  // "prec" is bf16 mixed precision or torch_autocast; "full+cpu" is full recompute with the
  // checkpointed layer inputs in host memory (activation_checkpointing.cpu_checkpointing).
  // With --engines a first column names the framework; "sp" is Ulysses under deepspeed and
  // context parallelism (--cp) under megatron-lm and fsdp2; "fp8" in prec is --fp8.
  out += std::string(engine_column ? "engine              " : "") +
         "rank   tp     pp  sp    ep    dp  zero  offload           prec      recompute  micro   gas   peak GB   step s  sched s   tokens/s    MFU\n";
  int rank = 1;
  for (const auto& p : r.plans) {
    std::string offload(sim::OffloadName(p.offload));
    std::string recompute(sim::RecomputeName(p.recompute));
    if (p.cpu_checkpointing) recompute += "+cpu";
    const std::string precision = p.torch_autocast ? "autocast" : p.fp8 ? "fp8" : "bf16";
    if (engine_column) {
      const std::string name(sim::EngineName(p.engine));
      out += name + std::string(name.size() < 20 ? 20 - name.size() : 1, ' ');
    }
    // Megatron's SP and virtual stages ride on the tp and pp columns: "8s" = tp 8 with sequence
    // parallelism, "12v3" = 12 stages of 3 interleaved chunks.
    // "4o": sequence parallelism with --tp-comm-overlap.
    std::string tp = std::to_string(p.tp) + (p.tp_comm_overlap ? "o" : p.megatron_sp ? "s" : "");
    std::string pp = std::to_string(p.pp) + (p.virtual_stages > 1 ? "v" + std::to_string(p.virtual_stages) : "");
    // "8t4": ep 8 with the experts split over 4 tensor-parallel ranks (megatron-lm --etp).
    std::string ep = std::to_string(p.ep) + (p.etp > 1 ? "t" + std::to_string(p.etp) : "");
    const std::string shown_rank = p.below_ranking ? "-" : std::to_string(rank);
    ++rank;
    out += Pad(shown_rank, 4) + Pad(tp, 5) + Pad(pp, 7) + Pad(std::to_string(p.sp), 4) +
           Pad(ep, 6) + Pad(std::to_string(p.dp), 6) + Pad(std::to_string(p.zero_stage), 6) +
           "  " + offload + std::string(18 - offload.size(), ' ') + precision +
           std::string(10 - precision.size(), ' ') + recompute +
           std::string(11 - recompute.size(), ' ') + Pad(std::to_string(p.micro_batch), 5) +
           Pad(std::to_string(p.grad_accum), 6) + Pad(Fixed(p.peak_bytes / 1e9, 1), 10) +
           Pad(Fixed(p.step_seconds, 3), 9) +
           Pad(p.schedule_seconds > 0 ? Fixed(p.schedule_seconds, 3) : std::string("-"), 9) +
           Pad(Fixed(p.tokens_per_second, 0), 11) +
           Pad(Fixed(100 * p.mfu, 1) + "%", 7) + "\n";
  }
  // How far to trust the ranked numbers: the validation band of each engine on this GPU.
  for (sim::Engine engine : EnginesShown(r)) {
    const sim::Accuracy a = sim::AccuracyFor(engine, gpu);
    out += "accuracy (" + a.engine + "): step " + sim::BandText(a, false) + "; peak " + sim::BandText(a, true) + "\n";
  }
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  return out;
}

Json ToJson(const sim::TuneResult& r, const sim::GpuSpec& gpu) {
  Json plans = Json::array();
  for (const auto& p : r.plans) {
    plans.push_back({{"engine", sim::EngineName(p.engine)},
                     {"below_ranking", p.below_ranking},
                     {"layout", {{"tp", p.tp}, {"pp", p.pp}, {"sp", p.sp}, {"ep", p.ep}, {"etp", p.etp}, {"dp", p.dp}, {"edp", p.edp}}},
                     {"virtual_stages", p.virtual_stages},
                     {"megatron_sp", p.megatron_sp},
                     {"tp_comm_overlap", p.tp_comm_overlap},
                     {"zero_stage", p.zero_stage},
                     {"offload", sim::OffloadName(p.offload)},
                     {"recompute", sim::RecomputeName(p.recompute)},
                     {"precision", p.torch_autocast ? "torch_autocast" : p.fp8 ? "fp8" : "bf16"},
                     {"cpu_checkpointing", p.cpu_checkpointing},
                     {"micro_batch", p.micro_batch},
                     {"grad_accum", p.grad_accum},
                     {"peak_bytes", p.peak_bytes},
                     {"hbm_bytes", p.hbm_bytes},
                     {"step_seconds", p.step_seconds},
                     {"schedule_seconds", p.schedule_seconds > 0 ? Json(p.schedule_seconds) : Json()},
                     {"tokens_per_second", p.tokens_per_second},
                     {"mfu", p.mfu}});
  }
  Json accuracy = Json::array();
  for (sim::Engine engine : EnginesShown(r)) accuracy.push_back(sim::AccuracyToJson(sim::AccuracyFor(engine, gpu)));
  return {{"schema_version", 6}, {"evaluated", r.evaluated}, {"valid", r.valid}, {"validated", r.validated}, {"fitting", r.fitting},
          {"global_batch", r.global_batch}, {"seconds", r.seconds}, {"plans", plans},
          {"notes", r.notes}, {"rescheduled", r.rescheduled}, {"accuracy", accuracy}};
}

// One search per engine, each in its own space with its own validity rules; the plans of all of
// them ranked together by the same measure.
Result<sim::TuneResult> TuneEngines(const ModelSpec& model, const sim::Cluster& cluster, sim::TuneOptions options,
                                    const std::vector<sim::Engine>& engines,
                                    const std::function<void(int64_t, int64_t)>& progress) {
  sim::TuneResult all;
  for (sim::Engine engine : engines) {
    options.engine = engine;
    auto one = sim::Tune(model, cluster, options, progress);
    if (!one.ok()) return one.error();
    if (engines.size() == 1) return one;
    all.evaluated += one->evaluated;
    all.fitting += one->fitting;
    all.validated += one->validated;
    all.valid += one->valid;
    all.autocast_twins += one->autocast_twins;
    all.rescheduled += one->rescheduled;
    all.global_batch = one->global_batch;
    all.seconds += one->seconds;
    for (sim::TunedPlan& p : one->plans) all.plans.push_back(std::move(p));
  }
  std::stable_sort(all.plans.begin(), all.plans.end(), sim::RankedBefore);
  // The best --top overall, and every engine's best plan even when it ranks lower: the question
  // is which framework, so each one answers with its best.
  std::vector<sim::TunedPlan> shown;
  std::vector<sim::Engine> answered;
  for (sim::TunedPlan& p : all.plans) {
    const bool first_of_engine = std::find(answered.begin(), answered.end(), p.engine) == answered.end();
    if (first_of_engine) answered.push_back(p.engine);
    if (shown.size() < static_cast<size_t>(options.top)) {
      shown.push_back(std::move(p));
    } else if (first_of_engine) {
      // Each search kept its own best --top only, so where this plan ranks overall is unknown.
      p.below_ranking = true;
      shown.push_back(std::move(p));
    }
  }
  all.plans = std::move(shown);
  // The notes are about the merged ranking's best plan.
  sim::AddRankingNotes(cluster, options, all);
  return all;
}

int RunTune(const TuneArgs& args) {
  auto world = args.world.Resolve();
  if (!world.ok()) return UsageError(world.error().message);
  if (!world->world_size) return UsageError("tune needs --world-size N, or --nodes N --gpus-per-node G");
  if (!args.emit_config.empty()) {
    Status out = CheckOutputPath("--emit-config", args.emit_config, args.force);
    if (!out.ok()) return UsageError(out.error().message);
  }
  auto model = LoadModel(args.model_path);
  if (!model.ok()) return UsageError("--model: " + model.error().message);
  auto cluster = LoadCluster(args.cluster_path);
  if (!cluster.ok()) return UsageError("--cluster: " + cluster.error().message);

  sim::TuneOptions options;
  options.world_size = *world->world_size;
  if (world->gpus_per_node) options.gpus_per_node = *world->gpus_per_node;
  options.seq_len = args.seq_len;
  options.global_batch = args.global_batch;
  options.top = args.top;
  options.engine = sim::ParseEngineName(args.engine).value_or(sim::Engine::kDeepSpeed);
  options.attention = sim::ParseAttentionKernel(args.attention).value_or(sim::AttentionKernel::kFramework);
  options.fused_loss = args.fused_loss;
  options.tiled_mlp = args.tiled_mlp;
  options.expandable_segments = args.expandable_segments;
  options.bf16_grad_buffer = args.bf16_grad_buffer;
  options.bf16_optimizer_states = args.bf16_optimizer_states;
  options.bf16_params = args.bf16_params;
  options.bf16_loss = args.bf16_loss;
  options.te_modules = args.te_modules;
  options.automodel_experts = args.automodel_experts;
  options.fake_balanced_gate = args.fake_balanced_gate;
  options.torch_compile = args.torch_compile;
  options.eager_loss = args.eager_loss;
  options.search_pipeline = !args.no_pipeline;
  if (!args.deepspeed_version.empty()) {
    auto v = ParseKnownDeepSpeedVersion(args.deepspeed_version);
    if (!v.ok()) return UsageError(v.error().message);
    options.deepspeed_version = *v;
  }
  options.convention = args.convention == "deepspeed" ? sim::MemoryConvention::kDeepSpeedEstimator
                                                      : sim::MemoryConvention::kZeroPaper;
  bool bar = isatty(STDERR_FILENO) != 0;
  auto progress = [bar](int64_t done, int64_t total) {
    if (!bar || total == 0) return;
    int width = 30;
    int filled = static_cast<int>(width * done / total);
    std::cerr << "\r[" << std::string(filled, '#') << std::string(width - filled, ' ') << "] " << done << "/"
              << total << " layouts" << (done == total ? "\n" : "") << std::flush;
  };
  std::vector<sim::Engine> engines;
  for (const std::string& name : args.engines) engines.push_back(*sim::ParseEngineName(name));
  if (engines.empty()) engines.push_back(options.engine);
  auto any_engine = [&engines](auto pred) { return std::any_of(engines.begin(), engines.end(), pred); };
  auto megatron = [](sim::Engine e) { return sim::FrameworkOf(e).megatron_precision_options; };
  auto fsdp2 = [](sim::Engine e) { return sim::FrameworkOf(e).gradients == sim::GradientSync::kFsdp2; };
  if (args.bf16_grad_buffer && !any_engine(megatron)) {
    return UsageError("--bf16-grad-buffer is the Megatron engine's: tune it with --engine megatron-lm");
  }
  if (args.bf16_params && !any_engine(fsdp2)) {
    return UsageError("--bf16-params is FSDP2's parameter dtype: tune it with --engine fsdp2");
  }
  if ((args.te_modules || args.automodel_experts || args.fake_balanced_gate) && !any_engine(fsdp2)) {
    return UsageError(std::string(args.te_modules          ? "--te-modules"
                                  : args.automodel_experts ? "--automodel-experts"
                                                           : "--fake-balanced-gate") +
                      " is NeMo AutoModel's on FSDP2: tune it with --engine fsdp2");
  }
  if (args.torch_compile && !any_engine(fsdp2)) {
    return UsageError("--torch-compile is torchtitan's compile.enable on FSDP2: tune it with --engine fsdp2");
  }
  if (args.eager_loss && !args.torch_compile) {
    return UsageError("--eager-loss says torch.compile leaves the loss out: give it with --torch-compile");
  }
  if (args.bf16_optimizer_states && !any_engine(megatron) && !(args.bf16_params && any_engine(fsdp2))) {
    return UsageError("--bf16-optimizer-states is the Megatron engine's, or fsdp2's with --bf16-params: tune it "
                      "with --engine megatron-lm or fsdp2");
  }
  if (args.bf16_loss && args.fused_loss) {
    return UsageError("--bf16-loss and --fused-loss: Liger's fused loss never upcasts");
  }
  if (args.bf16_loss && !any_engine([](sim::Engine e) { return sim::FrameworkOf(e).trains_transformers_modules; })) {
    return UsageError("--bf16-loss changes a PyTorch cross-entropy: tune it with --engine deepspeed or fsdp2");
  }
  auto result = TuneEngines(*model, *cluster, options, engines, progress);
  if (!result.ok()) return UsageError(result.error().message);
  if (bar) {
    std::cerr << "searched " << result->evaluated << " plans in " << Fixed(result->seconds, 3) << " s ("
              << Fixed(result->evaluated / std::max(result->seconds, 1e-9), 0) << " plans/s)\n";
  }
  // With --emit-config - the config has standard output to itself; the ranking moves to stderr.
  const bool config_to_stdout = args.emit_config == "-";
  std::ostream& report = config_to_stdout ? std::cerr : std::cout;
  if (args.format == "json") {
    report << ToJson(*result, cluster->gpu).dump(2) << "\n";
  } else {
    report << Text(*result, args.engines.size() > 1, cluster->gpu);
  }
  if (!args.emit_config.empty()) {
    if (result->plans.empty()) return UsageError("no plan fits, so there is no config to emit");
    Status s = WriteOutput("--emit-config", args.emit_config, result->plans.front().config.dump(2) + "\n", args.force);
    if (!s.ok()) return UsageError(s.error().message);
    if (args.format != "json" && !config_to_stdout) std::cout << "wrote the best plan to " << args.emit_config << "\n";
  }
  return kExitOk;
}

}  // namespace

Command AddTuneCommand(CLI::App& root) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* app = root.add_subcommand("tune", "search every valid plan for a model on a cluster and rank them");
  app->add_option("--model", args->model_path, kModelHelp)->required()->transform(PresetFile("models"));
  app->add_option("--cluster", args->cluster_path, kClusterHelp)->required()->transform(PresetFile("clusters"));
  args->world.AddTo(app, /*with_pp=*/false);  // tune searches the stages itself
  app->add_option("--seq-len", args->seq_len, "training sequence length")->check(CLI::Range(int64_t{1}, int64_t{1} << 26));
  app->add_option("--global-batch", args->global_batch, "sequences per optimizer step (default: 4M tokens)")
      ->check(CLI::PositiveNumber);
  app->add_option("--top", args->top, "how many plans to print")->check(CLI::Range(1, 1000));
  app->add_option("--emit-config", args->emit_config, "write the best plan as a DeepSpeed config (- for standard output)");
  app->add_flag("--force", args->force, "let --emit-config replace an existing file");
  app->add_option("--convention", args->convention, "memory accounting")->check(CLI::IsMember({"zero-paper", "deepspeed"}));
  app->add_option("--format", args->format, "output format")->check(CLI::IsMember({"text", "json"}));
  app->add_option("--engine", args->engine,
                  "training framework to plan for: deepspeed, megatron-deepspeed, megatron-lm or fsdp2 "
                  "(the last three search Megatron's tp, sequence parallelism and virtual stages; megatron-lm "
                  "and fsdp2 context and expert parallelism and FP8)")
      ->check(CLI::IsMember({"deepspeed", "megatron-deepspeed", "megatron-lm", "fsdp2"}));
  app->add_option("--engines", args->engines,
                  "several frameworks, comma-separated (deepspeed,fsdp2,megatron-lm): each searches its own "
                  "space under its own rules and the plans are ranked side by side (the best --top, and each "
                  "framework's best)")
      ->delimiter(',')
      ->check(CLI::IsMember({"deepspeed", "megatron-deepspeed", "megatron-lm", "fsdp2"}))
      ->excludes("--engine");
  app->add_option("--attention", args->attention,
                  "attention kernel: flash (default: the one each engine runs on this GPU), cudnn, flash2 or "
                  "materialized")
      ->check(CLI::IsMember({"flash", "cudnn", "flash2", "materialized"}));
  app->add_flag("--no-pipeline", args->no_pipeline, "search pp = 1 only");
  app->add_flag("--fused-loss", args->fused_loss,
                "the script runs Liger-Kernel's fused linear cross-entropy (as simulate --fused-loss; deepspeed "
                "and fsdp2 plans)");
  app->add_flag("--tiled-mlp", args->tiled_mlp, "the script runs DeepSpeed's TiledMLP (as simulate --tiled-mlp)");
  app->add_flag("--expandable-segments", args->expandable_segments,
                "the run sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (as simulate)");
  app->add_flag("--bf16-grad-buffer", args->bf16_grad_buffer,
                "megatron-lm plans: bf16 gradient buffer and reductions (as simulate --bf16-grad-buffer)");
  app->add_flag("--bf16-optimizer-states", args->bf16_optimizer_states,
                "megatron-lm plans (fsdp2 with --bf16-params): master parameters and optimizer states in bf16 "
                "(as simulate)");
  app->add_flag("--bf16-params", args->bf16_params, "fsdp2 plans: the model's parameters are bf16 (as simulate)");
  app->add_flag("--te-modules", args->te_modules, "fsdp2 plans: TransformerEngine's modules (as simulate)");
  app->add_flag("--automodel-experts", args->automodel_experts,
                "fsdp2 plans: experts wrapped as NeMo AutoModel wraps them (as simulate)");
  app->add_flag("--fake-balanced-gate", args->fake_balanced_gate,
                "fsdp2 expert-parallel plans: tokens routed by NeMo AutoModel's FakeBalancedGate (as simulate)");
  app->add_flag("--torch-compile", args->torch_compile,
                "fsdp2 plans: each decoder block and the loss compiled (as simulate)");
  app->add_flag("--eager-loss", args->eager_loss, "with --torch-compile: the loss is not compiled (as simulate)");
  app->add_flag("--bf16-loss", args->bf16_loss,
                "deepspeed and fsdp2 plans: the cross-entropy runs on 16-bit logits (as simulate)");
  app->add_option("--deepspeed-version", args->deepspeed_version,
                  "DeepSpeed to plan for (X.Y, X.Y.Z or master; default 0.19.6, main at edaa7221)");
  return Command{app, [args] { return RunTune(*args); }};
}

}  // namespace dsp::app
