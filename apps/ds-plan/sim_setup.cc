// SPDX-License-Identifier: Apache-2.0
#include "apps/ds-plan/sim_setup.h"

#include <cmath>

#include <algorithm>
#include <iostream>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/terminal_color.h"
#include "apps/ds-plan/model_input.h"
#include "core/json/hjson_parser.h"
#include "core/config/batch_triple.h"
#include "core/config/config_view.h"
#include "core/report/validate_report.h"
#include "core/rules/ds_semantics.h"
#include "core/util/file_io.h"

namespace dsp::app {
namespace {

constexpr int64_t kDefaultSeqLen = 4096;

struct Batch {
  int64_t micro = 0;
  int64_t accum = 0;
};

// DeepSpeed's batch fill-in (runtime/config.py _set_batch_related_parameters) with the
// world size DeepSpeedConfig divides by: the full world with AutoTP, world / sequence_parallel_size
// when that key is set, the pipeline data-parallel size with pp. Validation already checked the
// triple, so only "auto" values (deferred to the Hugging Face Trainer) can be missing here.
Result<Batch> FillBatch(const Json& config, int64_t world, int64_t pp, int64_t mpu_tp) {
  ConfigView v(config);
  auto b = v.Int("/train_batch_size"), m = v.Int("/train_micro_batch_size_per_gpu"),
       g = v.Int("/gradient_accumulation_steps");
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
  auto ws = BatchWorldSize(v, world, pp, mpu_tp);
  if (!ws) return Error{"no world size for the batch triple"};
  const BatchTriple t = FillBatchTriple(b.opt(), m.opt(), g.opt(), ws->ws);
  Batch out{static_cast<int64_t>(t.micro), static_cast<int64_t>(t.gas)};
  if (out.micro <= 0 || out.accum <= 0) return Error{"the batch triple does not resolve to positive sizes"};
  return out;
}

}  // namespace

void SimArgs::AddTo(CLI::App* app) {
  app->add_option("config", config, "DeepSpeed config file")->required();
  app->add_option("--model", model_path, "Hugging Face config.json of the model")->required();
  app->add_option("--cluster", cluster_path, "cluster description (samples/clusters/*.json)")->required();
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
                  "(Megatron's model under DeepSpeed's engine) or megatron-lm")
      ->check(CLI::IsMember({"deepspeed", "megatron-deepspeed", "megatron-lm"}));
  tp_option = app->add_option("--tp", megatron_tp,
                  "Megatron's tensor-model-parallel size (megatron engines; not in the DeepSpeed config)")
      ->check(CLI::Range(1, 1 << 20));
  megatron_sp_option = app->add_flag("--megatron-sp", megatron_sp,
                "Megatron sequence parallelism in the TP regions (megatron engines)");
  virtual_stages_option = app->add_option("--virtual-stages", virtual_stages,
                  "interleaved 1F1B model chunks per pipeline stage (megatron-lm)")
      ->check(CLI::Range(1, 1024));
  app->add_option("--attention", attention,
                  "attention kernel: flash (FlashAttention/SDPA, the default) or materialized "
                  "(scores in HBM, as before 2022)")
      ->check(CLI::IsMember({"flash", "materialized"}));
  app->add_option("--deepspeed-version", deepspeed_version,
                  "DeepSpeed release the run uses (X.Y or X.Y.Z; default the newest): decides how "
                  "ZeRO-3 issues its collectives and the release's rules");
}

namespace {

// The engine flags, checked against each other and the world.
Result<sim::EngineSettings> ReadEngine(const SimArgs& args) {
  sim::EngineSettings e;
  e.engine = sim::ParseEngineName(args.engine).value_or(sim::Engine::kDeepSpeed);
  if (!e.megatron()) {
    if (args.megatron_tp > 0) {
      return Error{"--tp is Megatron's tensor-parallel size: use it with --engine megatron-lm or "
                   "megatron-deepspeed (DeepSpeed's AutoTP size is tensor_parallel.autotp_size)"};
    }
    if (args.megatron_sp) return Error{"--megatron-sp needs --engine megatron-lm or megatron-deepspeed"};
  }
  if (args.virtual_stages > 1 && e.engine != sim::Engine::kMegatronLm) {
    return Error{"--virtual-stages needs --engine megatron-lm (DeepSpeed's PipelineEngine has no "
                 "interleaved schedule)"};
  }
  if (args.megatron_sp && args.megatron_tp <= 1) {
    return Error{"--megatron-sp needs --tp of 2 or more"};
  }
  e.megatron_sp = args.megatron_sp;
  e.virtual_stages = args.virtual_stages;
  e.flash_attention = args.attention != "materialized";
  if (!args.deepspeed_version.empty()) {
    auto v = ParseKnownDeepSpeedVersion(args.deepspeed_version);
    if (!v.ok()) return v.error();
    e.deepspeed_version = *v;
  }
  return e;
}

bool GivenOnCommandLine(const CLI::Option* option) { return option != nullptr && option->count() > 0; }
// --recompute and --pp: a plan snapshot records them as simulated, so its replay gives them.
bool GivenOrRecorded(const CLI::Option* option, const SimArgs& args) {
  return args.flags_are_explicit || GivenOnCommandLine(option);
}

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
  if (note.contains("engine") && !GivenOnCommandLine(args->engine_option)) {
    const Json& v = note["engine"];
    if (!v.is_string() || !sim::ParseEngineName(v.get<std::string>())) {
      return Error{"_ds_plan.engine must be deepspeed, megatron-deepspeed or megatron-lm, got " + v.dump().substr(0, 40)};
    }
    args->engine = v.get<std::string>();
    used.push_back("engine " + args->engine);
  }
  auto tp = integer("tensor_model_parallel_size", 1, int64_t{1} << 20);
  if (!tp.ok()) return tp.error();
  if (*tp && !GivenOnCommandLine(args->tp_option)) {
    args->megatron_tp = **tp;
    used.push_back("tp " + std::to_string(**tp));
  }
  if (note.contains("sequence_parallel") && !GivenOnCommandLine(args->megatron_sp_option)) {
    if (!note["sequence_parallel"].is_boolean()) return Error{"_ds_plan.sequence_parallel must be true or false"};
    args->megatron_sp = note["sequence_parallel"].get<bool>();
    if (args->megatron_sp) used.push_back("megatron sp");
  }
  auto vs = integer("virtual_pipeline_stages", 1, 1024);
  if (!vs.ok()) return vs.error();
  if (*vs && !GivenOnCommandLine(args->virtual_stages_option)) {
    args->virtual_stages = static_cast<int>(**vs);
    used.push_back("virtual stages " + std::to_string(**vs));
  }
  if (!used.empty()) {
    std::string list;
    for (const std::string& u : used) list += (list.empty() ? "" : ", ") + u;
    notes->push_back("from the config's _ds_plan (flags given on the command line win): " + list);
  }
  return Status::Ok();
}

}  // namespace

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
  s->cluster = std::move(cluster).value();
  auto model = LoadModel(args.model_path);
  if (!model.ok()) return fail(UsageError("--model: " + model.error().message));
  s->model = std::move(model).value();

  // The cluster supplies the node size unless the command line does.
  WorldOptions world_opts = args.world;
  if (world_opts.gpus_per_node == 0) world_opts.gpus_per_node = s->cluster.gpus_per_node;
  auto world = world_opts.Resolve();
  if (!world.ok()) return fail(UsageError(world.error().message));
  // --gpus-per-node describes the machines actually used: the cost model reads the node size from
  // the cluster, so both must agree on which groups cross a node boundary.
  s->cluster.gpus_per_node = static_cast<int>(*world->gpus_per_node);
  s->gpus_per_node = *world->gpus_per_node;
  s->world_size = world->world_size.value_or(*world->gpus_per_node);
  if (!world->world_size) {
    s->notes.push_back("no --world-size or --nodes: simulating one node of " + std::to_string(s->world_size) +
                       " GPUs");
  }
  const int64_t seq_len =
      args.seq_len > 0 ? args.seq_len : std::min(kDefaultSeqLen, s->model.max_position_embeddings);
  auto engine = ReadEngine(args);
  if (!engine.ok()) return fail(UsageError(engine.error().message));
  const int64_t mpu_tp = engine->megatron() ? std::max<int64_t>(args.megatron_tp, 1) : 0;
  if (engine->virtual_stages > 1 &&
      (world->pp <= 1 || s->model.num_hidden_layers % (world->pp * engine->virtual_stages) != 0)) {
    return fail(UsageError("--virtual-stages " + std::to_string(engine->virtual_stages) +
                           " needs --pp > 1 and the layers (" +
                           std::to_string(s->model.num_hidden_layers) +
                           ") divisible by pp x virtual stages"));
  }

  std::vector<Override> overrides;
  for (const auto& set : args.sets) {
    auto o = ParseOverride(set);
    if (!o.ok()) return fail(UsageError(o.error().message));
    overrides.push_back(std::move(o).value());
  }

  ValidateOptions options;
  options.world_size = s->world_size;
  options.gpus_per_node = world->gpus_per_node;
  options.pp = world->pp;
  options.mpu_tp = std::max<int64_t>(mpu_tp, 1);
  options.seq_len = seq_len;
  options.version = engine->deepspeed_version;
  options.model = &s->model;
  s->report = ValidateText(args.config, text.value(), options, overrides);
  DiagnosticCounts counts = Count(s->report.diagnostics);
  if (counts.errors > 0) {
    // Same rendering as validate; stderr, so stdout only ever carries the command's report.
    std::cerr << RenderText({s->report}, StyleFor(stderr));
    return fail(kExitFindings);
  }
  if (counts.warnings > 0) {
    s->notes.push_back("the config has " + std::to_string(counts.warnings) + " warning" +
                       (counts.warnings == 1 ? "" : "s") + ": run ds-plan validate for details");
  }

  // ValidateText keeps no document; parse again and apply --set the same way.
  ParsedJson parsed = ParseDeepSpeedConfig(args.config, std::move(text).value());
  for (const auto& o : overrides) ApplyOverride(parsed.doc.root, o);
  s->config = std::move(parsed.doc.root);

  PlanInputs inputs;
  inputs.world_size = s->world_size;
  inputs.gpus_per_node = world->gpus_per_node;
  inputs.pp = world->pp;
  inputs.mpu_tp = mpu_tp;
  // Megatron lays ranks out tp-dp-pp (its mpu, DeepSpeed's PipelineModule topology alike).
  if (engine->megatron()) inputs.layout = RankLayout::kMegatron;
  auto plan = BuildPlan(s->config, inputs);
  if (!plan.ok()) {
    std::cerr << args.config << ": error: " << plan.error().message << "\n";
    return fail(kExitFindings);
  }
  s->plan = std::move(plan).value();
  auto batch = FillBatch(s->config, s->world_size, world->pp, std::max<int64_t>(mpu_tp, 1));
  if (!batch.ok()) return fail(UsageError(args.config + ": " + batch.error().message));
  // int64 token counts and double FLOPs stay exact far beyond any real run; past 2^40 tokens per
  // micro-batch they would not.
  if (batch->micro > (int64_t{1} << 30) || batch->accum > (int64_t{1} << 30) ||
      batch->micro > (int64_t{1} << 40) / std::max<int64_t>(seq_len, 1)) {
    return fail(UsageError(args.config + ": micro-batch " + std::to_string(batch->micro) + " x sequence length " +
                           std::to_string(seq_len) + " (accumulation " + std::to_string(batch->accum) +
                           ") is beyond what the cost model handles (2^40 tokens per micro-batch, 2^30 "
                           "micro-batches)"));
  }
  s->micro_batch = batch->micro;
  s->grad_accum = batch->accum;

  ConfigView view(s->config);
  if (!ds_semantics::Bf16Enabled(view) && !ds_semantics::Fp16Enabled(view) &&
      !ds_semantics::DictFlag(view, "/torch_autocast/enabled")) {
    s->notes.push_back("neither bf16 nor fp16 is enabled (fp32 training): the estimate assumes 16-bit mixed precision");
  }
  if (s->model.assumed_llama_like) {
    s->notes.push_back("model_type \"" + s->model.model_type + "\" is unknown: counted as a llama-like decoder");
  }

  sim::SimInput& input = s->input;
  input.plan = &s->plan;
  input.model = &s->model;
  input.cluster = &s->cluster;
  input.workload.seq_len = seq_len;
  input.workload.micro_batch = batch->micro;
  input.precision = sim::ReadPrecisionSettings(s->config);
  input.workload.optimizer_state_bytes_per_param = sim::ReadOptimizerStateBytes(s->config, input.precision);
  input.workload.grad_accum = batch->accum;
  input.workload.recompute = args.recompute == "full"        ? sim::Recompute::kFull
                             : args.recompute == "selective" ? sim::Recompute::kSelective
                                                             : sim::Recompute::kNone;
  input.workload.convention = args.convention == "deepspeed" ? sim::MemoryConvention::kDeepSpeedEstimator
                                                             : sim::MemoryConvention::kZeroPaper;
  input.engine = *engine;
  input.zero = sim::ReadZeroSettings(s->config, engine->deepspeed_version);
  input.checkpointing = sim::ReadCheckpointSettings(s->config, engine->deepspeed_version);
  // An fp32 gradient accumulation buffer: DeepSpeed's BF16Optimizer (bf16 with ZeRO 0/1 under a
  // pipeline or with Megatron-DeepSpeed), Megatron-LM's bf16 main_grad; data_types.grad_accum_dtype
  // fp32 asks for it explicitly.
  {
    const bool bf16 = ds_semantics::Bf16Enabled(view);
    const auto accum = view.String("/data_types/grad_accum_dtype");
    const bool fp32_accum = accum.present() && (accum.value == "fp32" || accum.value == "float32");
    if (sim::Fp32GradientBuffer(engine->engine, bf16, input.zero.stage) || fp32_accum) {
      input.workload.gradient_bytes_per_element = 4;
    }
  }
  *exit_code = kExitOk;
  return s;
}

Status EstimatesAreFinite(const sim::MemoryReport& memory, const sim::TimeReport& time) {
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

}  // namespace dsp::app
