// SPDX-License-Identifier: Apache-2.0
// ds-plan explore CONFIG --model M --cluster C: an interactive planning session over the same plan
// simulate evaluates. On a terminal it opens the full-screen UI; with --line, --script FILE or
// when stdin/stdout are not a terminal, the line mode. Models, clusters and flags that cannot be
// loaded are errors before anything starts.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/explore_frontends.h"
#include "apps/ds-plan/model_input.h"
#include "apps/ds-plan/sim_setup.h"
#include "core/json/hjson_parser.h"
#include "core/util/file_io.h"
#include "sim/session/session_text.h"

namespace dsp::app {
namespace {

struct ExploreArgs {
  SimArgs sim;
  std::string script;
  bool line = false;
};

int RunExplore(const ExploreArgs& args) {
  if (args.sim.config == "-") return UsageError("explore needs a config file path, not standard input");
  auto text = ReadFile(args.sim.config);
  if (!text.ok()) return UsageError(text.error().message);
  SimArgs effective = args.sim;
  std::vector<std::string> notes;
  {
    const Json note = ParseDeepSpeedConfig(args.sim.config, text.value()).doc.root;
    Status merged = ApplyPlanNote(note, &effective, &notes);
    if (!merged.ok()) return UsageError(args.sim.config + ": " + merged.error().message);
  }
  auto cluster = LoadCluster(effective.cluster_path);
  if (!cluster.ok()) return UsageError("--cluster: " + cluster.error().message);
  auto model = LoadModel(effective.model_path);
  if (!model.ok()) return UsageError("--model: " + model.error().message);
  auto knobs = KnobsOf(effective);
  if (!knobs.ok()) return UsageError(knobs.error().message);
  if (Result<sim::ResolvedWorld> world = sim::ResolveWorld(*knobs, *cluster); !world.ok()) {
    return UsageError(world.error().message);
  }
  sim::Session session(args.sim.config, std::move(text).value(), std::move(model).value(), std::move(cluster).value(),
                       *knobs);
  ExploreContext context;
  context.session = &session;
  context.args = effective;
  // --set applies as the session's first edits (undo takes them back).
  for (const std::string& set : args.sim.sets) {
    auto r = session.Set(set);
    if (!r.ok()) return UsageError("--set " + set + ": " + r.error().message);
  }
  const bool terminal = isatty(STDIN_FILENO) != 0 && isatty(STDOUT_FILENO) != 0;
  for (const std::string& n : notes) std::cerr << "ds-plan: note: " << n << "\n";
  if (args.script.empty() && !args.line && terminal) return RunExploreTui(context);
  LineModeOptions line;
  line.script = args.script;
  line.interactive = args.script.empty() && terminal;
  return RunExploreLine(context, line);
}

}  // namespace

Command AddExploreCommand(CLI::App& root) {
  auto args = std::make_shared<ExploreArgs>();
  CLI::App* app = root.add_subcommand(
      "explore", "interactive planning: turn the knobs and watch validity, memory and step time (full-screen "
                 "on a terminal, line mode otherwise)");
  args->sim.AddTo(app);
  app->add_option("--script", args->script,
                  "run line-mode commands from FILE (one per line); the first failing command stops with exit 1")
      ->check(CLI::ExistingFile);
  app->add_flag("--line", args->line, "line mode on a terminal (libedit: history, tab completion)");
  app->footer(
      "\nLine-mode commands: set KEY=VALUE, unset KEY, show summary|memory|time|collectives|groups [RANK]|"
      "diagnostics|config, pin, unpin, diff, undo, redo, tune [--top N], apply N, write PATH [--force], "
      "plan PATH [--force], explain RULE, help, quit. Knobs besides config keys: world_size, nodes, "
      "gpus_per_node, pp, seq_len, recompute, precision.\nFull-screen keys: up/down select a knob, left/right "
      "(or -/+) step it, Enter types a value, e edits any key, : runs a line-mode command, u/r undo/redo, "
      "p pin, t tune, w write, s plan snapshot, [ ] pick the rank whose groups are shown, ? help, q quit.");
  return Command{app, [args] { return RunExplore(*args); }};
}

}  // namespace dsp::app
