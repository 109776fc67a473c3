// SPDX-License-Identifier: Apache-2.0
// Each subcommand lives in its own file and registers itself with the CLI11 app; main.cc only
// dispatches and turns the handler's result into the process exit code.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace dsp {
struct RuleInfo;
}  // namespace dsp

namespace dsp::app {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;        // nothing wrong
inline constexpr int kExitFindings = 1;  // the input has errors (or warnings with --werror)
inline constexpr int kExitUsage = 2;     // bad flags, unreadable files, internal limits

inline constexpr const char* kVersion = "0.1.0";

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command AddValidateCommand(CLI::App& root);
Command AddGroupsCommand(CLI::App& root);
Command AddRulesCommand(CLI::App& root);
Command AddExplainCommand(CLI::App& root);
Command AddSimulateCommand(CLI::App& root);
Command AddTuneCommand(CLI::App& root);
Command AddCalibrateCommand(CLI::App& root);
Command AddCompareCommand(CLI::App& root);
Command AddVisualizeCommand(CLI::App& root);
Command AddPassesCommand(CLI::App& root);
Command AddPlanCommand(CLI::App& root);
Command AddCheckCommand(CLI::App& root);
// `visualize schedule`, registered under the visualize command.
Command AddVisualizeScheduleCommand(CLI::App& visualize);
Command AddRunCommand(CLI::App& root);
// `completion bash|zsh`: walks the whole tree at run time, so it is registered last.
Command AddCompletionCommand(CLI::App& root);

Command AddExploreCommand(CLI::App& root);

// `explain RULE`'s text (explore's `explain` prints the same).
std::string ExplainRule(const RuleInfo& rule);

// Prints "ds-plan: error: MESSAGE" to stderr and returns kExitUsage.
int UsageError(const std::string& message);

}  // namespace dsp::app
