// SPDX-License-Identifier: Apache-2.0
// ds-plan-exec: the half of `ds-plan run` that links LibTorch. ds-plan re-executes itself as this
// binary (same arguments) once `run` is parsed, so only run pays the ~0.45 s of loading libtorch.
// It accepts exactly `ds-plan run ...`'s command line.
#include <csignal>
#include <iostream>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/terminal_color.h"

int main(int argc, char** argv) {
  using namespace dsp::app;
  // A peer that dies closes its Gloo TCP connections; a write to one must come back as EPIPE (Gloo
  // throws, and the run names the dead rank), not kill this rank with SIGPIPE (exit 141) before it
  // can say anything: RunCliTest.WithoutTorchrunTheSurvivorsNameTheKilledRank caught that race.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"ds-plan-exec: the LibTorch executor behind `ds-plan run`", "ds-plan"};
  app.require_subcommand(1);
  std::string color = "auto";
  app.add_option("--color", color)->check(CLI::IsMember({"auto", "always", "never"}));
  app.fallthrough();
  Command run = AddRunCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return e.get_exit_code() == 0 ? kExitOk : kExitUsage;
  }
  SetColorMode(color);
  try {
    return run.run();
  } catch (const std::exception& e) {
    std::cerr << "ds-plan: internal error: " << e.what() << "\n";
    return kExitUsage;
  }
}
