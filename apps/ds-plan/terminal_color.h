// SPDX-License-Identifier: Apache-2.0
// Colour for diagnostics: --color auto|always|never on every command, and NO_COLOR
// (https://no-color.org: present and not empty means no colour unless --color always asks).
// In auto mode a stream gets colour only when it is a terminal and TERM is not "dumb", so pipes,
// files and CI logs stay plain text.
#pragma once

#include <cstdio>
#include <string>

#include "core/report/validate_report.h"

namespace dsp::app {

enum class ColorMode { kAuto, kAlways, kNever };

// Parses "auto" | "always" | "never" (CLI11 has already checked the value) and sets the mode for
// the rest of the process.
void SetColorMode(const std::string& mode);

// Whether text written to `stream` (stdout or stderr) should carry colour.
bool ColorFor(FILE* stream);

// The text style for diagnostics written to `stream`.
TextStyle StyleFor(FILE* stream);

// A transient status line on stderr for work that can take more than a second ("laying out 3412
// nodes with Graphviz"): shown only when stderr is a terminal, erased when the work is done, so
// logs and pipes never see it.
class StatusLine {
 public:
  explicit StatusLine(const std::string& text);
  ~StatusLine();
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

 private:
  bool shown_ = false;
};

}  // namespace dsp::app
