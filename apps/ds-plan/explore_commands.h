// SPDX-License-Identifier: Apache-2.0
// explore's line-mode commands (also typed at the full-screen UI's `:` prompt): parse one line,
// call the session, return the text to print. No planning happens here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/ds-plan/sim_setup.h"
#include "sim/session/session.h"
#include "sim/tune/tune.h"

namespace dsp::app {

struct ExploreContext {
  sim::Session* session = nullptr;
  SimArgs args;                               // model and cluster paths, for plan snapshots
  std::optional<sim::TuneResult> last_tune;   // what `apply N` picks from
};

struct CommandOutcome {
  std::string output;   // printed as is (ends with a newline when not empty)
  bool failed = false;  // the command could not be carried out (stops a --script run)
  bool quit = false;
};

CommandOutcome RunExploreCommand(ExploreContext& context, std::string_view line);

// The command words, for completion and help.
const std::vector<std::string>& ExploreCommandNames();
std::string ExploreHelp();

// Completions of the word being typed at the end of `line`: a command, a `show` view, or a config
// key / knob (after set and unset; config keys from the DeepSpeed config schema).
std::vector<std::string> ExploreCompletions(std::string_view line);

}  // namespace dsp::app
