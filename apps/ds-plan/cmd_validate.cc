// SPDX-License-Identifier: Apache-2.0
// ds-plan validate FILE...: every config mistake DeepSpeed would raise, and the typos it ignores.
#include <iostream>
#include <memory>
#include <tuple>

#include "apps/ds-plan/data_files.h"
#include "apps/ds-plan/command.h"
#include "apps/ds-plan/terminal_color.h"
#include "apps/ds-plan/model_input.h"
#include "apps/ds-plan/sim_setup.h"
#include "apps/ds-plan/world_options.h"
#include "core/json/hjson_parser.h"
#include "core/report/validate_report.h"
#include "core/util/file_io.h"
#include "sim/frameworks/framework.h"

namespace dsp::app {
namespace {

struct ValidateArgs {
  std::vector<std::string> files;
  WorldOptions world;
  std::string model_path;
  int64_t seq_len = 0;
  std::vector<std::string> sets;
  std::string format = "text";
  bool werror = false;
  std::string deepspeed_version;
  std::string consumer;
  std::string torch_version;
  std::string transformers_version;
  std::string attn_impl;
};

// ds-plan tune and explore write the layout a config was planned with under "_ds_plan" (pipeline
// stages, the engine, Megatron's tp, context parallelism): validate checks the batch and the
// pipeline rules against it for every setting the command line did not give, and says which it
// took (on stderr, so a report format's output stays what it is).
ValidateOptions OptionsForFile(const std::string& path, const std::string& text, const ValidateArgs& args,
                               ValidateOptions options) {
  const Json root = ParseDeepSpeedConfig(path, text).doc.root;
  std::vector<std::string> notes;
  const std::optional<NotedLayout> noted = ReadNotedLayout(path, root, args.world, &notes);
  for (const std::string& n : notes) std::cerr << "ds-plan: note: " << n << "\n";
  if (!noted) return options;
  options.pp = noted->pp;
  if (noted->mpu_tp > 0) options.mpu_tp = noted->mpu_tp;
  if (noted->cp > 1) options.context_parallel = noted->cp;
  options.pipeline_allows_sharded_zero = noted->framework->pipeline_max_zero_stage >= 2;
  return options;
}

int RunValidate(const ValidateArgs& args) {
  auto world = args.world.Resolve();
  if (!world.ok()) return UsageError(world.error().message);

  ValidateOptions options;
  options.world_size = world->world_size;
  options.gpus_per_node = world->gpus_per_node;
  options.pp = world->pp;
  if (args.seq_len > 0) options.seq_len = args.seq_len;
  if (!args.deepspeed_version.empty()) {
    auto v = ParseKnownDeepSpeedVersion(args.deepspeed_version);
    if (!v.ok()) return UsageError(v.error().message);
    options.version = *v;
  }
  if (!args.consumer.empty()) options.consumer = *ParseConsumer(args.consumer);
  for (auto [flag, text, slot] : {std::tuple{"--torch-version", &args.torch_version, &options.torch_version},
                                  std::tuple{"--transformers-version", &args.transformers_version, &options.transformers_version}}) {
    if (text->empty()) continue;
    *slot = PackageVersion::Parse(*text);
    if (!*slot) return UsageError(std::string(flag) + " \"" + *text + "\" is not a version (for example 2.6.0 or 2.6.0+cu124)");
  }
  if (!args.attn_impl.empty()) options.attn_implementation = args.attn_impl;
  std::unique_ptr<ModelSpec> model;
  if (!args.model_path.empty()) {
    auto m = LoadModel(args.model_path);
    if (!m.ok()) return UsageError("--model: " + m.error().message);
    model = std::make_unique<ModelSpec>(std::move(m).value());
    options.model = model.get();
  }
  std::vector<Override> overrides;
  for (const auto& s : args.sets) {
    auto o = ParseOverride(s);
    if (!o.ok()) return UsageError(o.error().message);
    overrides.push_back(std::move(o).value());
  }
  ReportFormat format = args.format == "json"     ? ReportFormat::kJson
                        : args.format == "sarif"  ? ReportFormat::kSarif
                        : args.format == "github" ? ReportFormat::kGithub
                                                  : ReportFormat::kText;

  // Read everything first: an unreadable file is a usage problem (exit 2), not a finding.
  std::vector<std::pair<std::string, std::string>> inputs;
  std::vector<UnreadInput> unread;
  for (const auto& path : args.files) {
    auto text = ReadFile(path);
    if (!text.ok()) {
      unread.push_back({path, text.error().message});
      continue;
    }
    inputs.emplace_back(path, std::move(text).value());
  }
  // SARIF is usually uploaded by the next CI step whatever the exit code, so it is written even
  // then: the readable files' results and the unread ones as tool execution notifications.
  if (!unread.empty() && format != ReportFormat::kSarif) return UsageError(unread.front().message);
  std::vector<FileReport> reports;
  for (auto& [path, text] : inputs) {
    const ValidateOptions file_options = OptionsForFile(path, text, args, options);
    reports.push_back(ValidateText(path, std::move(text), file_options, overrides));
  }
  std::cout << (format == ReportFormat::kSarif ? RenderSarif(reports, kVersion, unread)
                                               : RenderValidateReport(reports, format, kVersion, StyleFor(stdout)));
  std::cout.flush();
  if (!unread.empty()) {
    for (const UnreadInput& u : unread) UsageError(u.message);
    return kExitUsage;
  }

  bool failed = false;
  for (const auto& r : reports) {
    DiagnosticCounts c = Count(r.diagnostics);
    if (c.errors > 0 || (args.werror && c.warnings > 0)) failed = true;
  }
  return failed ? kExitFindings : kExitOk;
}

}  // namespace

Command AddValidateCommand(CLI::App& root) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* app = root.add_subcommand("validate", "check DeepSpeed config files before launch");
  app->add_option("files", args->files, "DeepSpeed config files (- for stdin)")->required();
  args->world.AddTo(app);
  app->add_option("--model", args->model_path, kModelHelp)->transform(PresetFile("models"));
  app->add_option("--seq-len", args->seq_len, "training sequence length")->check(CLI::Range(int64_t{1}, int64_t{1} << 26));
  app->add_option("--set", args->sets,
                  "KEY=VALUE override (JSON pointer or dotted key; fills \"auto\" values); repeatable");
  app->add_option("--format", args->format, "output format")
      ->check(CLI::IsMember({"text", "json", "sarif", "github"}));
  app->add_flag("--werror", args->werror, "treat warnings as errors for the exit code");
  app->add_option("--deepspeed-version", args->deepspeed_version,
                  "DeepSpeed to check against: a release (X.Y or X.Y.Z, e.g. 0.19.5), or master (main after "
                  "edaa7221 with PRs #8213, #8266, #8274, #8326, #8359, #8380); default 0.19.6, which is no "
                  "release but main at edaa7221 (2026-08-22), the tree the rules were read from");
  app->add_option("--consumer", args->consumer,
                  "who launches with this config: deepspeed (the script calls deepspeed.initialize "
                  "and lets it build the optimizer), hf-trainer, accelerate or megatron-deepspeed; "
                  "decides the checks that depend on it (default: those are warnings)")
      ->check(CLI::IsMember({"deepspeed", "hf-trainer", "accelerate", "megatron-deepspeed"}));
  app->add_option("--torch-version", args->torch_version,
                  "torch the job runs with (e.g. 2.6.0+cu124): checks the AutoTP/AutoSP/ZenFlow guards");
  app->add_option("--transformers-version", args->transformers_version,
                  "transformers the job runs with: checks the AutoTP MoE and AutoEP preset guards");
  app->add_option("--attn-impl", args->attn_impl,
                  "attention implementation transformers runs (sdpa, flash_attention_2, eager, ...; default: "
                  "the model config's _attn_implementation): the autosp pass needs sdpa");
  return Command{app, [args] { return RunValidate(*args); }};
}

}  // namespace dsp::app
