// ds-plan simulate CONFIG --model M --cluster C: memory per rank and step time of one training
// step, before any GPU is booked. The config is validated first (a config DeepSpeed would reject
// has no step time), then the plan, workload and ZeRO settings feed sim::EstimateMemory and
// sim::EstimateStepTime. Not fitting in HBM is an answer (exit 0), not a failure.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>

#include "apps/ds-plan/command.h"
#include "core/config/batch_triple.h"
#include "apps/ds-plan/model_input.h"
#include "apps/ds-plan/world_options.h"
#include "core/config/config_view.h"
#include "core/report/validate_report.h"
#include "core/rules/ds_semantics.h"
#include "core/util/file_io.h"
#include "core/validate/validator.h"
#include "sim/cluster.h"
#include "sim/memory_model.h"
#include "sim/simulate_report.h"
#include "sim/step_time.h"

namespace dsp::app {
namespace {

constexpr int64_t kDefaultSeqLen = 4096;

struct SimulateArgs {
  std::string config;
  std::string model_path;
  std::string cluster_path;
  WorldOptions world;
  int64_t seq_len = 0;  // 0 = default
  std::string recompute = "none";
  std::string convention = "zero-paper";
  std::vector<std::string> sets;
  std::string format = "text";
};

struct Batch {
  int64_t micro = 0;
  int64_t accum = 0;
};

// DeepSpeed's batch fill-in (_set_batch_related_parameters, deepspeed-config.md §1.1) with the
// world size DeepSpeedConfig divides by: the full world with AutoTP, world / sequence_parallel_size
// when that key is set, the pipeline data-parallel size with pp. Validation already checked the
// triple, so only "auto" values (deferred to the Hugging Face Trainer) can be missing here.
Result<Batch> FillBatch(const Json& config, int64_t world, int64_t pp) {
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
  auto ws = BatchWorldSize(v, world, pp);
  if (!ws) return Error{"no world size for the batch triple"};
  const BatchTriple t = FillBatchTriple(b.opt(), m.opt(), g.opt(), ws->ws);
  Batch out{static_cast<int64_t>(t.micro), static_cast<int64_t>(t.gas)};
  if (out.micro <= 0 || out.accum <= 0) return Error{"the batch triple does not resolve to positive sizes"};
  return out;
}

int RunSimulate(const SimulateArgs& args) {
  auto cluster = LoadCluster(args.cluster_path);
  if (!cluster.ok()) return UsageError("--cluster: " + cluster.error().message);
  auto model = LoadModel(args.model_path);
  if (!model.ok()) return UsageError("--model: " + model.error().message);

  // The cluster supplies the node size unless the command line does.
  WorldOptions world_opts = args.world;
  if (world_opts.gpus_per_node == 0) world_opts.gpus_per_node = cluster->gpus_per_node;
  auto world = world_opts.Resolve();
  if (!world.ok()) return UsageError(world.error().message);
  // --gpus-per-node describes the machines actually used: the cost model reads the node size from
  // the cluster, so both must agree on which groups cross a node boundary.
  cluster->gpus_per_node = static_cast<int>(*world->gpus_per_node);
  std::vector<std::string> notes;
  int64_t world_size = world->world_size.value_or(*world->gpus_per_node);
  if (!world->world_size) notes.push_back("no --world-size or --nodes: simulating one node of " +
                                          std::to_string(world_size) + " GPUs");

  int64_t seq_len = args.seq_len > 0 ? args.seq_len : std::min(kDefaultSeqLen, model->max_position_embeddings);

  std::vector<Override> overrides;
  for (const auto& s : args.sets) {
    auto o = ParseOverride(s);
    if (!o.ok()) return UsageError(o.error().message);
    overrides.push_back(std::move(o).value());
  }
  auto text = ReadFile(args.config);
  if (!text.ok()) return UsageError(text.error().message);

  ValidateOptions options;
  options.world_size = world_size;
  options.gpus_per_node = world->gpus_per_node;
  options.pp = world->pp;
  options.seq_len = seq_len;
  options.model = &*model;
  FileReport report = ValidateText(args.config, text.value(), options, overrides);
  DiagnosticCounts counts = Count(report.diagnostics);
  if (counts.errors > 0) {
    // Same rendering as validate; stderr, so stdout only ever carries a simulate report.
    std::cerr << RenderText({report});
    return kExitFindings;
  }
  if (counts.warnings > 0) {
    notes.push_back("the config has " + std::to_string(counts.warnings) + " warning" +
                    (counts.warnings == 1 ? "" : "s") + ": run ds-plan validate for details");
  }

  // ValidateText keeps no document; parse again and apply --set the same way.
  ParsedJson parsed = ParseJsonLenient(args.config, std::move(text).value());
  for (const auto& o : overrides) parsed.doc.root[Json::json_pointer(o.pointer)] = o.value;
  const Json& config = parsed.doc.root;

  PlanInputs inputs;
  inputs.world_size = world_size;
  inputs.gpus_per_node = world->gpus_per_node;
  inputs.pp = world->pp;
  auto plan = BuildPlan(config, inputs);
  if (!plan.ok()) {
    std::cerr << args.config << ": error: " << plan.error().message << "\n";
    return kExitFindings;
  }
  auto batch = FillBatch(config, world_size, world->pp);
  if (!batch.ok()) return UsageError(args.config + ": " + batch.error().message);

  ConfigView view(config);
  if (!ds_semantics::Bf16Enabled(view) && !ds_semantics::Fp16Enabled(view)) {
    notes.push_back("neither bf16 nor fp16 is enabled (fp32 training): the estimate assumes 16-bit mixed precision");
  }

  sim::SimInput input;
  input.plan = &*plan;
  input.model = &*model;
  input.cluster = &*cluster;
  input.workload.seq_len = seq_len;
  input.workload.micro_batch = batch->micro;
  input.workload.optimizer_state_bytes_per_param = sim::ReadOptimizerStateBytes(config);
  input.workload.grad_accum = batch->accum;
  input.workload.recompute = args.recompute == "full"        ? sim::Recompute::kFull
                             : args.recompute == "selective" ? sim::Recompute::kSelective
                                                             : sim::Recompute::kNone;
  input.workload.convention = args.convention == "deepspeed" ? sim::MemoryConvention::kDeepSpeedEstimator
                                                             : sim::MemoryConvention::kZeroPaper;
  input.zero = sim::ReadZeroSettings(config);

  sim::SimulateResult result;
  result.config_path = args.config;
  result.model_path = args.model_path;
  result.model_type = model->model_type;
  result.cluster = &*cluster;
  result.world_size = world_size;
  result.gpus_per_node = *world->gpus_per_node;
  result.layout = report.layout;
  result.workload = input.workload;
  result.zero = input.zero;
  result.samples_per_step = batch->micro * batch->accum * plan->derived.dp;
  result.params = CountParameters(*model);
  result.memory = sim::EstimateMemory(input);
  result.time = sim::EstimateStepTime(input);
  if (model->assumed_llama_like) {
    notes.push_back("model_type \"" + model->model_type + "\" is unknown: counted as a llama-like decoder");
  }
  result.notes = std::move(notes);

  if (args.format == "json") {
    std::cout << sim::SimulateToJson(result).dump(2) << "\n";
  } else {
    std::cout << sim::RenderSimulateText(result);
  }
  return kExitOk;
}

}  // namespace

Command AddSimulateCommand(CLI::App& root) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* app = root.add_subcommand("simulate", "estimate memory per rank and step time of a config on a cluster");
  app->add_option("config", args->config, "DeepSpeed config file")->required();
  app->add_option("--model", args->model_path, "Hugging Face config.json of the model")->required();
  app->add_option("--cluster", args->cluster_path, "cluster description (samples/clusters/*.json)")->required();
  args->world.AddTo(app);
  app->add_option("--seq-len", args->seq_len,
                  "training sequence length (default 4096, or the model's max_position_embeddings if smaller)")
      ->check(CLI::PositiveNumber);
  app->add_option("--recompute", args->recompute, "activation recomputation")
      ->check(CLI::IsMember({"none", "selective", "full"}));
  app->add_option("--convention", args->convention,
                  "model-state accounting: zero-paper (2+2+12 bytes per parameter) or deepspeed (its estimators)")
      ->check(CLI::IsMember({"zero-paper", "deepspeed"}));
  app->add_option("--set", args->sets,
                  "KEY=VALUE override (JSON pointer or dotted key; fills \"auto\" values); repeatable");
  app->add_option("--format", args->format, "output format")->check(CLI::IsMember({"text", "json"}));
  return Command{app, [args] { return RunSimulate(*args); }};
}

}  // namespace dsp::app
