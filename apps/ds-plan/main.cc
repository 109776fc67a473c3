// SPDX-License-Identifier: Apache-2.0
// ds-plan: plan, check and simulate DeepSpeed parallel training before launching it.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <vector>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/terminal_color.h"
#include "core/config/deepspeed_version.h"
#include "core/util/text.h"
#include "git_version.h"

int main(int argc, char** argv) {
  using namespace dsp::app;
  CLI::App app{"ds-plan: check, lay out and simulate DeepSpeed parallel training before launch", "ds-plan"};
  // The version, the commit it was built from and the DeepSpeed tree its rules follow.
  app.set_version_flag("--version", std::string("ds-plan ") + kVersion + " (commit " + kGitCommit + ")\n" +
                                        "validate rules: " + dsp::kDeepSpeedRulesSource +
                                        "; --deepspeed-version X.Y.Z for a release's verdicts");
  app.require_subcommand(1);
  // Global: accepted before or after the command name (fallthrough hands it to the root).
  std::string color = "auto";
  app.add_option("--color", color, "colour diagnostics: auto (on a terminal, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.fallthrough();
  // Set before parsing too, so the errors of the checks below are coloured as asked.
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.starts_with("--color=")) SetColorMode(word.substr(8));
    if (word == "--color" && i + 1 < argc) SetColorMode(argv[i + 1]);
  }
  std::vector<Command> commands = {AddValidateCommand(app), AddGroupsCommand(app), AddSimulateCommand(app),
                                   AddPlanCommand(app), AddCheckCommand(app),
                                   AddTuneCommand(app), AddCalibrateCommand(app), AddCompareCommand(app), AddVisualizeCommand(app), AddPassesCommand(app),
                                   AddRunCommand(app), AddExploreCommand(app),
                                   AddRulesCommand(app), AddExplainCommand(app), AddCompletionCommand(app)};

  // An unknown subcommand gets an edit-distance suggestion before CLI11's generic message.
  if (argc > 1 && argv[1][0] != '-') {
    std::string word = argv[1];
    std::vector<std::string> names;
    bool known = false;
    for (const auto& c : commands) {
      names.push_back(c.app->get_name());
      known = known || c.app->get_name() == word;
    }
    if (!known) {
      std::string guess = dsp::ClosestMatch(word, names);
      return UsageError("unknown command '" + word + "'" +
                        (guess.empty() ? "" : ", did you mean '" + guess + "'?") +
                        " (run ds-plan --help for the list)");
    }
  }
  // A misspelt flag gets a suggestion from the options of the command it was given to, and the
  // same "ds-plan: error:" prefix as every other usage error.
  {
    CLI::App* current = &app;
    std::string path;  // "visualize schedule"
    for (int i = 1; i < argc; ++i) {
      std::string word = argv[i];
      if (word == "--") break;
      if (!word.starts_with("-")) {
        for (CLI::App* sub : current->get_subcommands([](CLI::App*) { return true; })) {
          if (sub->get_name() == word) {
            current = sub;
            path += (path.empty() ? "" : " ") + word;
            break;
          }
        }
        continue;
      }
      if (!word.starts_with("--") || word == "--help" || word == "--version") continue;
      const std::string name = word.substr(2, word.find('=') == std::string::npos ? std::string::npos : word.find('=') - 2);
      std::vector<std::string> known;
      bool found = false;
      std::vector<const CLI::Option*> options;
      for (const CLI::Option* opt : current->get_options()) options.push_back(opt);
      for (const CLI::Option* opt : app.get_options()) options.push_back(opt);  // --color
      for (const CLI::Option* opt : options) {
        for (const std::string& l : opt->get_lnames()) {
          known.push_back("--" + l);
          found = found || l == name;
        }
      }
      if (!found && current != &app) {
        const std::string guess = dsp::ClosestMatch("--" + name, known);
        return UsageError("unknown option '--" + name + "' for " + path +
                          (guess.empty() ? "" : ", did you mean '" + guess + "'?") + " (run ds-plan " + path +
                          " --help)");
      }
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return UsageError(std::string(e.what()) + " (run with --help for more information)");
  }
  SetColorMode(color);
  for (const auto& c : commands) {
    if (c.app->parsed()) {
      try {
        const int code = c.run();
        // A report that did not reach standard output (a full disk, a closed pipe) is a failure,
        // whatever the command found.
        std::cout.flush();
        if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
          std::cerr << "ds-plan: error: cannot write to standard output: " << std::strerror(errno) << "\n";
          return kExitUsage;
        }
        return code;
      } catch (const std::exception& e) {
        // Core code returns errors as values; this is the last line of defence against a crash.
        std::cerr << "ds-plan: internal error: " << e.what() << "\n";
        return kExitUsage;
      }
    }
  }
  return UsageError("no command given (run ds-plan --help)");
}
