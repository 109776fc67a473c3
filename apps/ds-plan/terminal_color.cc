// SPDX-License-Identifier: Apache-2.0
#include "apps/ds-plan/terminal_color.h"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace dsp::app {
namespace {

ColorMode g_mode = ColorMode::kAuto;

}  // namespace

void SetColorMode(const std::string& mode) {
  g_mode = mode == "always" ? ColorMode::kAlways : mode == "never" ? ColorMode::kNever : ColorMode::kAuto;
}

bool ColorFor(FILE* stream) {
  if (g_mode != ColorMode::kAuto) return g_mode == ColorMode::kAlways;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term == nullptr || std::string_view(term) == "dumb") return false;
  return isatty(fileno(stream)) != 0;
}

TextStyle StyleFor(FILE* stream) { return ColorFor(stream) ? TextStyle::kColor : TextStyle::kPlain; }

StatusLine::StatusLine(const std::string& text) {
  if (isatty(STDERR_FILENO) == 0) return;
  std::fprintf(stderr, "ds-plan: %s...", text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

StatusLine::~StatusLine() {
  if (!shown_) return;
  std::fputs("\r\033[K", stderr);  // back to the start of the line, erase it
  std::fflush(stderr);
}

}  // namespace dsp::app
