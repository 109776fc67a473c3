// SPDX-License-Identifier: Apache-2.0
// ds-plan plan CONFIG --model M --cluster C -o plan.json: a snapshot of what the config implies
// (layout, group tables, memory, step time, collective volumes) together with the inputs it came
// from, for `ds-plan check` to recompute in CI. Format: docs/plan.md.
#include <filesystem>
#include <iostream>
#include <memory>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/plan_setup.h"
#include "core/util/file_io.h"
#include "sim/plan/snapshot.h"

namespace dsp::app {
namespace {

struct PlanArgs {
  SimArgs sim;
  std::string output;
  bool force = false;
};

int RunPlan(const PlanArgs& args) {
  // Checked before any work, like every other output (core/util/file_io.h).
  if (Status out = CheckOutputPath("-o", args.output, args.force); !out.ok()) return UsageError(out.error().message);
  int code = kExitOk;
  std::optional<Json> snapshot = ComputeSnapshot(args.sim, &code);
  if (!snapshot) return code;
  const std::string text = sim::RenderPlanSnapshot(*snapshot);
  Status written = WriteOutput("-o", args.output, text, args.force);
  if (!written.ok()) return UsageError(written.error().message);
  if (args.output != "-") std::cerr << "wrote " << args.output << "\n";
  return kExitOk;
}

}  // namespace

Command AddPlanCommand(CLI::App& root) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* app = root.add_subcommand(
      "plan", "write a plan snapshot (layout, groups, memory, step time, collectives) for ds-plan check");
  args->sim.AddTo(app);
  app->add_option("-o,--output", args->output, "snapshot file to write (- for standard output)")->required();
  app->add_flag("--force", args->force, "replace the output file if it exists");
  return Command{app, [args] { return RunPlan(*args); }};
}

}  // namespace dsp::app
