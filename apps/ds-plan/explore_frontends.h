// SPDX-License-Identifier: Apache-2.0
// explore's two front ends over one session: the line mode (a script, a pipe, or a terminal with
// libedit's editing, history and completion) and the full-screen ncurses UI.
#pragma once

#include <string>

#include "apps/ds-plan/explore_commands.h"

namespace dsp::app {

struct LineModeOptions {
  std::string script;  // "": standard input
  bool interactive = false;  // a terminal: libedit, no echo, asks before quitting with unsaved edits
};

// Returns the exit code: 0, or 1 when a command of a script (or piped input) failed.
int RunExploreLine(ExploreContext& context, const LineModeOptions& options);

// Returns the exit code.
int RunExploreTui(ExploreContext& context);

}  // namespace dsp::app
