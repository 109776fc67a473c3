// SPDX-License-Identifier: Apache-2.0
// ds-plan groups CONFIG: the exact rank lists of every process group DeepSpeed builds.
#include <iostream>
#include <memory>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/sim_setup.h"
#include "core/schema/schema_check.h"
#include "apps/ds-plan/terminal_color.h"
#include "apps/ds-plan/world_options.h"
#include "core/json/hjson_parser.h"
#include "core/report/groups_report.h"
#include "core/report/validate_report.h"
#include "core/util/file_io.h"
#include "core/validate/validator.h"

namespace dsp::app {
namespace {

struct GroupsArgs {
  std::string config;
  WorldOptions world;
  int rank = -1;
  std::string layout = "deepspeed";
  std::string expert_layout = "auto";
  std::string format = "table";
  std::vector<std::string> sets;
  CLI::Option* layout_option = nullptr;  // whether --layout was given
};

int RunGroups(const GroupsArgs& args) {
  auto world = args.world.Resolve();
  if (!world.ok()) return UsageError(world.error().message);
  if (!world->world_size) return UsageError("groups needs a world size: --world-size N, or --nodes N --gpus-per-node G");
  if (args.rank >= 0 && args.rank >= *world->world_size) {
    return UsageError("--rank " + std::to_string(args.rank) + " is outside the world (0.." +
                      std::to_string(*world->world_size - 1) + ")");
  }
  auto text = ReadFile(args.config);
  if (!text.ok()) return UsageError(text.error().message);

  ParsedJson parsed = ParseDeepSpeedConfig(args.config, std::move(text).value());
  if (!parsed.ok || !parsed.doc.root.is_object()) {
    // Show the parse problem the way validate would.
    FileReport report = ValidateText(args.config, parsed.doc.source.text(), ValidateOptions{});
    std::cerr << RenderText({report}, StyleFor(stderr));
    return kExitFindings;
  }
  std::vector<Override> overrides;
  for (const auto& s : args.sets) {
    auto o = ParseOverride(s);
    if (!o.ok()) return UsageError(o.error().message);
    ApplyOverride(parsed.doc.root, *o);
    overrides.push_back(std::move(o).value());
  }

  PlanInputs inputs;
  inputs.world_size = *world->world_size;
  inputs.gpus_per_node = world->gpus_per_node;
  inputs.pp = world->pp;
  inputs.layout = args.layout == "megatron" ? RankLayout::kMegatron : RankLayout::kDeepSpeed;
  // The layout tune or explore recorded under _ds_plan (pipeline stages, the engine's tp, cp, ep):
  // the groups of the plan that was emitted, with the engine's rank layout unless --layout is given.
  std::vector<std::string> notes;
  if (auto noted = ReadNotedLayout(args.config, parsed.doc.root, args.world, &notes)) {
    inputs.pp = noted->pp;
    inputs.mpu_tp = noted->mpu_tp;
    inputs.cp = noted->cp;
    inputs.ep = noted->ep;
    inputs.etp = noted->etp;
    if (args.layout_option == nullptr || args.layout_option->count() == 0) inputs.layout = noted->framework->rank_layout;
  }
  for (const std::string& n : notes) std::cerr << "ds-plan: note: " << n << "\n";
  for (ExpertLayout e : {ExpertLayout::kAuto, ExpertLayout::kExpertsFirst, ExpertLayout::kDataFirst,
                         ExpertLayout::kLaneMajor, ExpertLayout::kFolding, ExpertLayout::kMegatronMpu}) {
    if (ExpertLayoutName(e) == args.expert_layout) inputs.expert_layout = e;
  }
  // The layout DeepSpeed builds: its pydantic sections coerce "autotp_size": "2" to 2.
  auto plan = BuildPlan(PydanticLaxView(parsed.doc.root), inputs);
  if (!plan.ok()) {
    std::cerr << args.config << ": error: " << plan.error().message << "\n";
    return kExitFindings;
  }
  // The tables are what DeepSpeed would build; say so when DeepSpeed would not start at all.
  ValidateOptions vopt;
  vopt.world_size = inputs.world_size;
  vopt.gpus_per_node = inputs.gpus_per_node;
  vopt.pp = inputs.pp;
  if (inputs.mpu_tp > 0) vopt.mpu_tp = inputs.mpu_tp;
  if (inputs.cp > 1) vopt.context_parallel = inputs.cp;
  FileReport report = ValidateText(args.config, parsed.doc.source.text(), vopt, overrides);
  GroupsView view;
  if (args.rank >= 0) view.rank = args.rank;
  GroupsFormat format = args.format == "json" ? GroupsFormat::kJson
                        : args.format == "csv" ? GroupsFormat::kCsv
                                               : GroupsFormat::kTable;
  std::cout << RenderGroups(*plan, format, view);
  std::cout.flush();
  if (int errors = Count(report.diagnostics).errors; errors > 0) {
    std::cerr << args.config << ": note: DeepSpeed would reject this config (" << errors << " error"
              << (errors == 1 ? "" : "s") << "; run ds-plan validate): these are the groups it would "
              << "build if it started\n";
  }
  return kExitOk;
}

}  // namespace

Command AddGroupsCommand(CLI::App& root) {
  auto args = std::make_shared<GroupsArgs>();
  CLI::App* app = root.add_subcommand("groups", "print the rank lists of every process group (tp, dp, sp, ep, edp, pp)");
  app->add_option("config", args->config, "DeepSpeed config file")->required();
  args->world.AddTo(app);
  app->add_option("--rank", args->rank, "show only the groups containing this rank")->check(CLI::NonNegativeNumber);
  args->layout_option = app->add_option("--layout", args->layout, "whose rank layout: DeepSpeed's, or Megatron-core's for comparison")
      ->check(CLI::IsMember({"deepspeed", "megatron"}));
  app->add_option("--expert-layout", args->expert_layout,
                  "DeepSpeed EP/EDP code path: auto (what the engine builds), e+d, d+e, lane-major, folding, mpu")
      ->check(CLI::IsMember({"auto", "e+d", "d+e", "lane-major", "folding", "mpu"}));
  app->add_option("--format", args->format, "output format")->check(CLI::IsMember({"table", "json", "csv"}));
  app->add_option("--set", args->sets, "KEY=VALUE override (JSON pointer or dotted key); repeatable");
  return Command{app, [args] { return RunGroups(*args); }};
}

}  // namespace dsp::app
