// ds-plan run CONFIG: executes the plan under torchrun with LibTorch (Gloo on CPU, NCCL on GPU) and
// checks loss, gradient and weight parity against the unsharded model. Each worker process runs
// this command; rank 0 prints the report. The LibTorch code lives in exec/ (exec/run.h is
// torch-free), so this file compiles in the time of any other subcommand.
//
// Exit codes: 0 parity within tolerance, 1 parity failure or a config DeepSpeed would reject,
// 2 usage, a build without LibTorch, or a run that could not complete (a dead or missing rank).
#include <iostream>
#include <memory>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/model_input.h"
#include "core/config/config_view.h"
#include "core/report/validate_report.h"
#include "core/util/file_io.h"
#include "core/validate/validator.h"
#include "exec/launch/env.h"
#include "exec/run.h"

namespace dsp::app {
namespace {

struct RunArgs {
  std::string config;
  std::string model_path;
  int steps = 3;
  std::string backend = "gloo";
  uint64_t seed = 1;
  std::string format = "text";
  double timeout = 60;
  std::string inject = "none";
  std::string report_path;
  bool tiny = true;
};

constexpr const char* kEnableTorch =
    "ds-plan run needs LibTorch, and this ds-plan was built without it.\n"
    "To enable it on Debian 12: apt-get install libtorch-dev libgloo-dev python3-torch\n"
    "(or run scripts/setup.sh, which installs them), then re-run scripts/setup.sh or\n"
    "cmake --preset release && cmake --build --preset release so CMake finds LibTorch.\n";

int RunRun(const RunArgs& args) {
  if (!exec::HaveTorch()) {
    std::cerr << "ds-plan: error: " << kEnableTorch;
    return kExitUsage;
  }
  auto env = exec::ReadLaunchEnv();
  if (!env.ok()) return UsageError("run: " + env.error().message);
  const bool reporter = env->rank == 0;

  auto text = ReadFile(args.config);
  if (!text.ok()) return UsageError(text.error().message);
  std::string model_text;
  ModelSpec model;
  std::string model_label;
  if (!args.model_path.empty()) {
    auto m = LoadModel(args.model_path);
    if (!m.ok()) return UsageError("--model: " + m.error().message);
    model = *m;
    model_text = ReadFile(args.model_path).value();
    model_label = args.model_path;
  }

  ValidateOptions vopt;
  vopt.world_size = env->world_size;
  if (!args.model_path.empty()) vopt.model = &model;
  FileReport validated = ValidateText(args.config, text.value(), vopt);
  if (!validated.valid()) {
    if (reporter) {
      std::cerr << RenderText({validated});
      std::cerr << args.config << ": error: DeepSpeed would reject this config for WORLD_SIZE="
                << env->world_size << ", so there is nothing to run\n";
    }
    return kExitFindings;
  }
  ParsedJson parsed = ParseJsonLenient(args.config, text.value());
  PlanInputs inputs;
  inputs.world_size = env->world_size;
  auto plan = BuildPlan(parsed.doc.root, inputs);
  if (!plan.ok()) {
    if (reporter) std::cerr << args.config << ": error: " << plan.error().message << "\n";
    return kExitFindings;
  }
  if (args.model_path.empty()) {
    model = exec::DefaultTinyModel(plan->sizes.expert_parallel);
    model_label = std::string("built-in tiny ") + model.model_type;
  }
  auto micro = ConfigView(parsed.doc.root).Int("/train_micro_batch_size_per_gpu");
  auto tiny = exec::MakeTinyConfig(model, plan->sizes, micro.present() ? micro.value : 1);
  if (!tiny.ok()) return UsageError("run: " + tiny.error().message);

  exec::RunOptions o;
  o.plan = std::move(plan).value();
  o.tiny = *tiny;
  o.model_label = model_label;
  o.steps = args.steps;
  o.backend = args.backend == "nccl" ? exec::Backend::kNccl : exec::Backend::kGloo;
  o.seed = args.seed;
  o.timeout_seconds = args.timeout;
  o.fault = args.inject == "no-copy-allreduce" ? exec::Fault::kNoCopyAllreduce : exec::Fault::kNone;
  o.fingerprint.config_text = text.value();
  o.fingerprint.model_text = model_text;
  o.fingerprint.world_size = env->world_size;
  o.fingerprint.flags = {"steps=" + std::to_string(args.steps), "backend=" + args.backend,
                         "seed=" + std::to_string(args.seed), "inject=" + args.inject};

#ifdef DSP_HAVE_TORCH
  auto report = exec::RunPlan(o);
  if (!report.ok()) {
    std::cerr << "ds-plan run: error: " << report.error().message << "\n";
    return kExitUsage;
  }
  if (reporter) {
    std::string out = args.format == "json" ? exec::RenderRunJson(*report) : exec::RenderRunText(*report);
    if (!args.report_path.empty()) {
      if (auto s = WriteFileAtomic(args.report_path, exec::RenderRunJson(*report)); !s.ok()) {
        return UsageError(s.error().message);
      }
    }
    std::cout << out;
    std::cout.flush();
    if (args.format == "text") {
      std::fprintf(stderr, "ds-plan run: %.2f s on rank 0 (setup %.2f s, %d steps %.2f s)\n", report->seconds_total,
                   report->seconds_setup, args.steps, report->seconds_steps);
    }
  }
  return report->ok ? kExitOk : kExitFindings;
#else
  std::cerr << "ds-plan: error: " << kEnableTorch;
  return kExitUsage;
#endif
}

}  // namespace

Command AddRunCommand(CLI::App& root) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* app = root.add_subcommand(
      "run", "execute the plan under torchrun (LibTorch, Gloo/NCCL) and check parity with the unsharded model");
  app->footer(
      "Start one process per rank with torchrun, e.g.\n"
      "  scripts/torchrun --nproc_per_node 4 --no_python ds-plan run CONFIG\n"
      "(scripts/torchrun is torchrun with the Debian torch 1.13 / Python 3.11 fix).");
  app->add_option("config", args->config, "DeepSpeed config file")->required();
  app->add_option("--model", args->model_path,
                  "Hugging Face config.json the tiny model is derived from (default: a built-in llama, "
                  "or qwen3_moe when expert_parallel is enabled)");
  app->add_option("--steps", args->steps, "SGD steps")->check(CLI::Range(1, 1000));
  app->add_option("--backend", args->backend, "communication backend")->check(CLI::IsMember({"gloo", "nccl"}));
  app->add_option("--seed", args->seed, "seed of the weights and the synthetic data");
  app->add_option("--format", args->format, "report format on rank 0")->check(CLI::IsMember({"text", "json"}));
  app->add_option("--timeout", args->timeout, "seconds to wait for a peer before naming it and giving up")
      ->check(CLI::Range(1.0, 3600.0));
  app->add_option("--inject", args->inject, "break one contract on purpose; the parity check must then fail")
      ->check(CLI::IsMember({"none", "no-copy-allreduce"}));
  app->add_option("--report", args->report_path, "also write the JSON report to this file (rank 0)");
  // --tiny is the only model scale today; accepted so command lines can say so explicitly.
  app->add_flag("--tiny", args->tiny, "run the tiny scaled-down model (the default and only scale)");
  return Command{app, [args] { return RunRun(*args); }};
}

}  // namespace dsp::app
