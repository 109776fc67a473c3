#include "apps/ds-plan/sim_setup.h"

#include <algorithm>
#include <iostream>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/model_input.h"
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

}  // namespace

void SimArgs::AddTo(CLI::App* app) {
  app->add_option("config", config, "DeepSpeed config file")->required();
  app->add_option("--model", model_path, "Hugging Face config.json of the model")->required();
  app->add_option("--cluster", cluster_path, "cluster description (samples/clusters/*.json)")->required();
  world.AddTo(app);
  app->add_option("--seq-len", seq_len,
                  "training sequence length (default 4096, or the model's max_position_embeddings if smaller)")
      ->check(CLI::PositiveNumber);
  app->add_option("--recompute", recompute, "activation recomputation")
      ->check(CLI::IsMember({"none", "selective", "full"}));
  app->add_option("--convention", convention,
                  "model-state accounting: zero-paper (2+2+12 bytes per parameter) or deepspeed (its estimators)")
      ->check(CLI::IsMember({"zero-paper", "deepspeed"}));
  app->add_option("--set", sets,
                  "KEY=VALUE override (JSON pointer or dotted key; fills \"auto\" values); repeatable");
}

std::unique_ptr<SimSetup> PrepareSimulation(const SimArgs& args, int* exit_code) {
  auto fail = [exit_code](int code) {
    *exit_code = code;
    return nullptr;
  };
  auto s = std::make_unique<SimSetup>();
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

  std::vector<Override> overrides;
  for (const auto& set : args.sets) {
    auto o = ParseOverride(set);
    if (!o.ok()) return fail(UsageError(o.error().message));
    overrides.push_back(std::move(o).value());
  }
  auto text = ReadFile(args.config);
  if (!text.ok()) return fail(UsageError(text.error().message));

  ValidateOptions options;
  options.world_size = s->world_size;
  options.gpus_per_node = world->gpus_per_node;
  options.pp = world->pp;
  options.seq_len = seq_len;
  options.model = &s->model;
  s->report = ValidateText(args.config, text.value(), options, overrides);
  DiagnosticCounts counts = Count(s->report.diagnostics);
  if (counts.errors > 0) {
    // Same rendering as validate; stderr, so stdout only ever carries the command's report.
    std::cerr << RenderText({s->report});
    return fail(kExitFindings);
  }
  if (counts.warnings > 0) {
    s->notes.push_back("the config has " + std::to_string(counts.warnings) + " warning" +
                       (counts.warnings == 1 ? "" : "s") + ": run ds-plan validate for details");
  }

  // ValidateText keeps no document; parse again and apply --set the same way.
  ParsedJson parsed = ParseJsonLenient(args.config, std::move(text).value());
  for (const auto& o : overrides) parsed.doc.root[Json::json_pointer(o.pointer)] = o.value;
  s->config = std::move(parsed.doc.root);

  PlanInputs inputs;
  inputs.world_size = s->world_size;
  inputs.gpus_per_node = world->gpus_per_node;
  inputs.pp = world->pp;
  auto plan = BuildPlan(s->config, inputs);
  if (!plan.ok()) {
    std::cerr << args.config << ": error: " << plan.error().message << "\n";
    return fail(kExitFindings);
  }
  s->plan = std::move(plan).value();
  auto batch = FillBatch(s->config, s->world_size, world->pp);
  if (!batch.ok()) return fail(UsageError(args.config + ": " + batch.error().message));
  s->micro_batch = batch->micro;
  s->grad_accum = batch->accum;

  ConfigView view(s->config);
  if (!ds_semantics::Bf16Enabled(view) && !ds_semantics::Fp16Enabled(view)) {
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
  input.workload.optimizer_state_bytes_per_param = sim::ReadOptimizerStateBytes(s->config);
  input.workload.grad_accum = batch->accum;
  input.workload.recompute = args.recompute == "full"        ? sim::Recompute::kFull
                             : args.recompute == "selective" ? sim::Recompute::kSelective
                                                             : sim::Recompute::kNone;
  input.workload.convention = args.convention == "deepspeed" ? sim::MemoryConvention::kDeepSpeedEstimator
                                                             : sim::MemoryConvention::kZeroPaper;
  input.zero = sim::ReadZeroSettings(s->config);
  *exit_code = kExitOk;
  return s;
}

}  // namespace dsp::app
