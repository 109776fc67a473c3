// SPDX-License-Identifier: Apache-2.0
// ds-plan run CONFIG: executes the plan under torchrun with LibTorch (Gloo on CPU, NCCL on GPU) and
// checks loss, gradient and weight parity against the unsharded model. Each worker process runs
// this command; rank 0 prints the report. The LibTorch code lives in exec/ (exec/run.h is
// torch-free), so this file compiles in the time of any other subcommand.
//
// Two builds of this file: in ds-plan, RunRun re-executes the process as ds-plan-exec (next to the
// ds-plan binary, same arguments), the only executable that links LibTorch; ds-plan-exec compiles
// it with DSP_RUN_IN_PROCESS and runs the plan. Loading libtorch takes ~0.45 s and 290 shared
// libraries, which validate, groups and the rest must not pay at every start.
//
// Exit codes: 0 parity within tolerance, 1 parity failure or a config DeepSpeed would reject,
// 2 usage, a build without LibTorch, or a run that could not complete (a dead or missing rank).
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <vector>

#include "apps/ds-plan/command.h"
#include "core/schema/schema_check.h"
#include "apps/ds-plan/terminal_color.h"
#include "apps/ds-plan/model_input.h"
#include "core/json/hjson_parser.h"
#include "core/config/config_view.h"
#include "core/rules/ds_semantics.h"
#include "core/report/validate_report.h"
#include "core/util/file_io.h"
#include "core/validate/validator.h"
#include "sim/cost/cluster.h"
#include "exec/launch/env.h"
#include "exec/run.h"

namespace dsp::app {
namespace {

struct RunArgs {
  std::string config;
  std::string model_path;
  // --model given again: companion models trained in the same process (RunOptions::companions).
  std::vector<std::string> companion_paths;
  int steps = 3;
  int64_t pp = 1;  // --pp: pipeline stages, as in simulate
  std::string backend = "gloo";
  uint64_t seed = 1;
  std::string format = "text";
  double timeout = 60;
  std::string inject = "none";
  std::string dtype = "fp32";
  std::string recompute = "none";
  std::string save_dir, load_dir;
  std::string report_path;
  bool force = false;
  bool bench = false;
  std::string cluster_base;  // --cluster: the figures --cluster-out keeps
  std::string cluster_out;
};

constexpr const char* kEnableTorch =
    "ds-plan run needs LibTorch, and this ds-plan was built without it.\n"
    "To enable it on Debian 12: apt-get install libtorch-dev libgloo-dev python3-torch\n"
    "(or run scripts/setup.sh, which installs them), then re-run scripts/setup.sh or\n"
    "cmake --preset release && cmake --build --preset release so CMake finds LibTorch.\n";

#ifndef DSP_RUN_IN_PROCESS
// Replaces this process with ds-plan-exec, passing our own command line on (from /proc, so the
// arguments arrive exactly as torchrun gave them). Returns only on failure.
int ExecHelper() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  fs::path helper = self.parent_path() / "ds-plan-exec";
  if (ec || !fs::exists(helper)) {
    return UsageError("ds-plan-exec (the LibTorch half of ds-plan run) is missing next to " + self.string() +
                      ": build it with cmake --build --preset release");
  }
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> words;
  for (size_t start = 0; start < all.size();) {
    size_t end = all.find('\0', start);
    if (end == std::string::npos) end = all.size();
    words.push_back(all.substr(start, end - start));
    start = end + 1;
  }
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  execv(helper.c_str(), argv.data());
  return UsageError("cannot start " + helper.string() + ": " + std::strerror(errno));
}
#endif

#ifdef DSP_RUN_IN_PROCESS
int RunInProcess(const RunArgs& args);
#endif

int RunRun(const RunArgs& args) {
  if (!exec::HaveTorch()) {
    std::cerr << "ds-plan: error: " << kEnableTorch;
    return kExitUsage;
  }
#ifndef DSP_RUN_IN_PROCESS
  return ExecHelper();
#else
  return RunInProcess(args);
#endif
}

#ifdef DSP_RUN_IN_PROCESS
// The --cluster BASE file with its intra-node link replaced by what --bench measured: busbw of the
// largest all-reduce on the largest group, latency of the smallest. The result must still parse
// as a cluster (sim::ParseCluster), so simulate can use it.
Result<Json> MeasuredCluster(Json base, const exec::RunReport& r) {
  const exec::BenchResult* big = nullptr;
  const exec::BenchResult* small = nullptr;
  for (const auto& b : r.bench) {
    if (b.collective != "all_reduce") continue;
    if (big == nullptr || b.group.size() > big->group.size() ||
        (b.group.size() == big->group.size() && b.bytes > big->bytes)) {
      big = &b;
    }
  }
  if (big == nullptr) return Error{"no all_reduce was measured (every group of the plan has one rank)"};
  for (const auto& b : r.bench) {
    if (b.collective == "all_reduce" && b.group_kind == big->group_kind && (small == nullptr || b.bytes < small->bytes)) {
      small = &b;
    }
  }
  const std::string how = "measured by ds-plan run --bench (" + r.backend + ", " + std::to_string(r.world_size) +
                          " ranks): all_reduce on the " + big->group_kind + " group of " +
                          std::to_string(big->group.size()) + " ranks, nccl-tests bus bandwidth";
  base["name"] = base.value("name", std::string("cluster")) + " (intra-node link measured by ds-plan run --bench)";
  base["intra_node"]["busbw_bytes_per_second"] = big->busbw_bytes_per_second;
  base["intra_node"]["_busbw_bytes_per_second_source"] = how + ", " + std::to_string(big->bytes) + " bytes";
  base["intra_node"]["latency_seconds"] = small->seconds;
  base["intra_node"]["_latency_seconds_source"] = how + ", time of " + std::to_string(small->bytes) + " bytes";
  if (auto c = sim::ParseCluster(base); !c.ok()) return c.error();
  return base;
}

int RunInProcess(const RunArgs& args) {
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
  vopt.pp = args.pp;
  if (!args.model_path.empty()) vopt.model = &model;
  FileReport validated = ValidateText(args.config, text.value(), vopt);
  if (!validated.valid()) {
    // Every rank says why it stops: torchrun ends the other workers as soon as one exits non-zero,
    // which could otherwise swallow the reporter's message. The reporter adds the diagnostics.
    if (reporter) std::cerr << RenderText({validated}, StyleFor(stderr));
    std::cerr << args.config << ": error: DeepSpeed would reject this config for WORLD_SIZE="
              << env->world_size << ", so there is nothing to run\n";
    return kExitFindings;
  }
  ParsedJson parsed = ParseDeepSpeedConfig(args.config, text.value());
  // Run what DeepSpeed would: its pydantic sections coerce "stage": "3" to 3 (validate warns).
  parsed.doc.root = PydanticLaxView(parsed.doc.root);
  PlanInputs inputs;
  inputs.world_size = env->world_size;
  inputs.pp = args.pp;
  auto plan = BuildPlan(parsed.doc.root, inputs);
  if (!plan.ok()) {
    if (reporter) std::cerr << args.config << ": error: " << plan.error().message << "\n";
    return kExitFindings;
  }
  if (args.model_path.empty()) {
    model = exec::DefaultTinyModel(plan->sizes.expert_parallel);
    model_label = std::string("built-in tiny ") + model.model_type;
  }
  auto micro = ConfigView(parsed.doc.root).IntNullUnset("/train_micro_batch_size_per_gpu");
  // A checkpoint keeps its decoder's layer count (one per stage of the run that saved it, at least
  // 2); an unreadable manifest is left for --load's own error.
  int64_t saved_layers = 0;
  if (!args.load_dir.empty()) {
    if (auto m = ReadFile(args.load_dir + "/manifest.json"); m.ok()) {
      const Json manifest = Json::parse(m.value(), nullptr, false);
      if (manifest.is_object() && manifest.contains("identity") && manifest["identity"].is_object() &&
          manifest["identity"].contains("layers") && manifest["identity"]["layers"].is_number_integer()) {
        saved_layers = manifest["identity"]["layers"].get<int64_t>();
        // run saves max(2, pp) layers; a count beyond any world would only allocate until it fails.
        if (saved_layers < 1 || saved_layers > 4096) {
          return UsageError("--load " + args.load_dir + ": manifest.json identity.layers is " +
                            std::to_string(saved_layers) + ", not a layer count ds-plan run saves (1 to 4096)");
        }
      }
    }
  }
  auto tiny = exec::MakeTinyConfig(model, plan->sizes, micro.present() ? micro.value : 1, saved_layers);
  if (!tiny.ok()) return UsageError("run: " + tiny.error().message);
  // Companions: each validated against the config like the first model, each its own tiny decoder.
  std::vector<exec::CompanionModel> companions;
  for (const std::string& path : args.companion_paths) {
    auto m = LoadModel(path);
    if (!m.ok()) return UsageError("--model " + path + ": " + m.error().message);
    ValidateOptions copt = vopt;
    copt.model = &*m;
    FileReport checked = ValidateText(args.config, text.value(), copt);
    if (!checked.valid()) {
      if (reporter) std::cerr << RenderText({checked}, StyleFor(stderr));
      std::cerr << args.config << ": error: DeepSpeed would reject this config for the model " << path << "\n";
      return kExitFindings;
    }
    auto t = exec::MakeTinyConfig(*m, plan->sizes, micro.present() ? micro.value : 1);
    if (!t.ok()) return UsageError("run: --model " + path + ": " + t.error().message);
    companions.push_back({*t, path});
    model_text += "\n--model\n" + ReadFile(path).value();
  }
  if (!companions.empty() && (!args.save_dir.empty() || !args.load_dir.empty())) {
    return UsageError("--save and --load checkpoint one model: give --model once");
  }

  // Every rank checks the outputs before any work (only rank 0 writes them), so a refusal ends
  // the whole job at once instead of leaving the other ranks waiting for rank 0.
  if (!args.report_path.empty() && args.report_path == args.cluster_out) {
    return UsageError("--report and --cluster-out name the same file (" + args.report_path + ")");
  }
  for (const auto& [flag, path] : {std::pair<std::string, std::string>{"--report", args.report_path},
                                   {"--cluster-out", args.cluster_out}}) {
    if (path.empty()) continue;
    if (Status out = CheckOutputPath(flag, path, args.force); !out.ok()) return UsageError(out.error().message);
  }
  const bool report_to_stdout = args.report_path == "-" || args.cluster_out == "-";

  exec::RunOptions o;
  o.plan = std::move(plan).value();
  o.tiny = *tiny;
  o.model_label = model_label;
  o.steps = args.steps;
  o.backend = args.backend == "nccl" ? exec::Backend::kNccl : exec::Backend::kGloo;
  o.seed = args.seed;
  o.timeout_seconds = args.timeout;
  exec::ParseFault(args.inject, &o.fault);  // CLI11 already restricted --inject to the known names
  exec::ParseDtype(args.dtype, &o.dtype);   // and --dtype
  o.tolerances = exec::DefaultTolerances(o.dtype);
  o.recompute = args.recompute == "full";
  o.companions = companions;
  o.grad_accum = ConfigView(parsed.doc.root).IntNullUnset("/gradient_accumulation_steps").or_default(1);
  o.save_dir = args.save_dir;
  o.load_dir = args.load_dir;
  if (!o.save_dir.empty() && o.save_dir == o.load_dir) {
    return UsageError("--save and --load name the same directory (" + o.save_dir + "): save the resumed run elsewhere");
  }
  if (!o.save_dir.empty() && std::filesystem::exists(std::filesystem::path(o.save_dir) / "manifest.json") && !args.force) {
    return UsageError("--save " + o.save_dir + " already holds a checkpoint (manifest.json); pass --force to replace it");
  }
  // A directory of other files: the checkpoint's names (mp_rank_00_model_states.bin, ...) would
  // replace any file of the same name among them.
  std::error_code listed;
  if (!o.save_dir.empty() && !args.force && std::filesystem::is_directory(o.save_dir, listed) &&
      !std::filesystem::is_empty(o.save_dir, listed)) {
    return UsageError("--save " + o.save_dir + " holds files but no checkpoint; its files of the same names would be "
                      "replaced: save into a new or empty directory, or pass --force");
  }
  o.cpu_checkpointing = o.recompute && ds_semantics::DictFlag(ConfigView(parsed.doc.root),
                                                              "/activation_checkpointing/cpu_checkpointing");
  o.fingerprint.config_text = text.value();
  o.fingerprint.model_text = model_text;
  o.fingerprint.world_size = env->world_size;
  o.fingerprint.flags = {"steps=" + std::to_string(args.steps), "backend=" + args.backend,
                         "seed=" + std::to_string(args.seed), "inject=" + args.inject,
                         std::string("bench=") + (args.bench ? "1" : "0"), "dtype=" + args.dtype,
                         "recompute=" + args.recompute, "save=" + args.save_dir, "load=" + args.load_dir,
                         "pp=" + std::to_string(args.pp)};
  o.bench = args.bench;
  Json base_cluster;
  if (!args.cluster_out.empty()) {
    if (!args.bench) return UsageError("--cluster-out needs --bench");
    if (args.cluster_base.empty()) {
      return UsageError("--cluster-out needs --cluster BASE: the GPU, memory and efficiency figures come from it");
    }
    if (auto c = LoadCluster(args.cluster_base); !c.ok()) return UsageError("--cluster: " + c.error().message);
    base_cluster = Json::parse(ReadFile(args.cluster_base).value(), nullptr, false);
  }

  // Each step's line as it completes (stderr, text format): a long run shows it is moving.
  if (args.format == "text" && !args.bench) {
    o.step_sink = [](const exec::StepParity& s, int steps, double seconds) {
      std::fprintf(stderr, "ds-plan run: step %d/%d  loss %.6f  reference %.6f  %s  (%.2f s)\n", s.step, steps, s.loss,
                   s.ref_loss, s.ok ? "parity ok" : "PARITY FAILED", seconds);
      std::fflush(stderr);
    };
  }
  // Rank 0 prints from inside RunPlan, before any rank may exit (see RunOptions::report_sink).
  int output_status = kExitOk;
  o.report_sink = [&](const exec::RunReport& r) {
    auto write = [&](const std::string& flag, const std::string& path, const std::string& text) {
      if (path.empty() || output_status != kExitOk) return;
      if (auto s = WriteOutput(flag, path, text, args.force); !s.ok()) output_status = UsageError(s.error().message);
    };
    // A file written to standard output has it to itself; the report then goes to stderr.
    std::ostream& shown = report_to_stdout ? std::cerr : std::cout;
    if (args.bench) {
      write("--report", args.report_path, exec::RenderBenchJson(r));
      if (!args.cluster_out.empty()) {
        auto cluster = MeasuredCluster(base_cluster, r);
        if (!cluster.ok()) {
          output_status = UsageError("--cluster-out: " + cluster.error().message);
        } else {
          write("--cluster-out", args.cluster_out, cluster->dump(2) + "\n");
        }
      }
      shown << (args.format == "json" ? exec::RenderBenchJson(r) : exec::RenderBenchText(r));
    } else {
      write("--report", args.report_path, exec::RenderRunJson(r));
      shown << (args.format == "json" ? exec::RenderRunJson(r) : exec::RenderRunText(r));
      if (args.format == "text") {
        std::fprintf(stderr, "ds-plan run: %.2f s on rank 0 (setup %.2f s, %d steps %.2f s)\n", r.seconds_total,
                     r.seconds_setup, args.steps, r.seconds_steps);
      }
    }
    std::cout.flush();
    std::fflush(stderr);
  };
  auto report = exec::RunPlan(o);
  if (!report.ok()) {
    std::cerr << "ds-plan run: error: " << report.error().message << "\n";
    return kExitUsage;
  }
  if (output_status != kExitOk) return output_status;
  if (args.bench) return kExitOk;
  return report->ok ? kExitOk : kExitFindings;
}
#endif

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
  app->add_option_function<std::vector<std::string>>(
         "--model",
         [args](const std::vector<std::string>& paths) {
           args->model_path = paths.front();
           args->companion_paths.assign(paths.begin() + 1, paths.end());
         },
         "Hugging Face config.json the tiny model is derived from (default: a built-in llama, or qwen3_moe "
         "when expert_parallel is enabled); given twice, a second model (teacher/student, actor/reference) "
         "is built, sharded and trained in the same process, and both must keep parity")
      ->expected(1, 2)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--steps", args->steps, "SGD steps")->check(CLI::Range(1, 1000));
  app->add_option("--pp", args->pp,
                  "pipeline stages: the decoder layers split evenly over them (embedding on the first, head and loss on "
                  "the last), one pass of DeepSpeed's TrainSchedule (1F1B) over gradient_accumulation_steps "
                  "micro-batches per step")
      ->check(CLI::Range(1, 256));
  app->add_option("--backend", args->backend, "communication backend")->check(CLI::IsMember({"gloo", "nccl"}));
  app->add_option("--seed", args->seed, "seed of the weights and the synthetic data");
  app->add_option("--format", args->format, "report format on rank 0")->check(CLI::IsMember({"text", "json"}));
  app->add_option("--timeout", args->timeout, "seconds to wait for a peer before naming it and giving up")
      ->check(CLI::Range(1.0, 3600.0));
  app->add_option("--inject", args->inject, "break one contract on purpose; the parity check must then fail")
      ->check(CLI::IsMember({"none", "no-copy-allreduce", "skip-tp-cancel", "sum-router-grads", "wrong-ep-group",
                                "expert-grads-over-dp", "skip-tp-shard-on-save", "pp-stale-activation"}));
  app->add_option("--save", args->save_dir,
                  "after the last step, write every rank's shards and a manifest (layout, group tables, step) "
                  "to this directory");
  app->add_option("--load", args->load_dir,
                  "resume from a checkpoint saved by --save on any layout: shards consolidated across tp and "
                  "ZeRO partitions, the reference replayed to the saved step and checked against them");
  app->add_option("--recompute", args->recompute,
                  "activation checkpointing of the sharded model: none, or full (every decoder layer keeps "
                  "its input and runs again in backward; the config's activation_checkpointing."
                  "cpu_checkpointing keeps those inputs in host copies)")
      ->check(CLI::IsMember({"none", "full"}));
  app->add_option("--dtype", args->dtype,
                  "what the sharded run and the reference compute in: fp32 (tolerance rtol 1e-4, atol 1e-6) or "
                  "bf16 (parameters, activations and gradients in bfloat16, cross entropy in fp32; rtol 0.125, "
                  "atol 1e-3; gloo only; docs/exec.md)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app->add_option("--report", args->report_path,
                  "also write the JSON report to this file (rank 0; - for standard output, the text report then "
                  "goes to stderr)");
  app->add_flag("--force", args->force, "let --report and --cluster-out replace existing files, and --save an existing checkpoint");
  app->add_flag("--bench", args->bench,
                "measure every collective kind on every group kind instead of checking parity (nccl-tests "
                "bus bandwidth)");
  app->add_option("--cluster", args->cluster_base, "with --cluster-out: the cluster file whose other figures are kept");
  app->add_option("--cluster-out", args->cluster_out,
                  "with --bench: write a cluster file for simulate with the measured intra-node link (- for "
                  "standard output)");
  return Command{app, [args] { return RunRun(*args); }};
}

}  // namespace dsp::app
