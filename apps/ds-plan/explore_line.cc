// SPDX-License-Identifier: Apache-2.0
// explore's line mode. Non-interactive input (--script FILE, a pipe) echoes each command after
// "explore> " so the output reads as a transcript, and the first failing command stops the run
// with its line number. On a terminal, libedit (BSD licensed) gives line editing, history
// (~/.ds_plan_history) and tab completion of commands, views, rule ids and config keys.
#include <histedit.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "apps/ds-plan/explore_frontends.h"
#include "sim/session/session_text.h"

namespace dsp::app {
namespace {

const char* Prompt(EditLine*) { return "explore> "; }

// The longest prefix every candidate shares.
std::string CommonPrefix(const std::vector<std::string>& words) {
  if (words.empty()) return "";
  std::string p = words.front();
  for (const std::string& w : words) {
    size_t i = 0;
    while (i < p.size() && i < w.size() && p[i] == w[i]) ++i;
    p.resize(i);
  }
  return p;
}

unsigned char Complete(EditLine* el, int) {
  const LineInfo* li = el_line(el);
  const std::string before(li->buffer, li->cursor);
  const std::vector<std::string> options = ExploreCompletions(before);
  if (options.empty()) return CC_ERROR;
  const size_t space = before.find_last_of(" \t");
  const std::string word = space == std::string::npos ? before : before.substr(space + 1);
  std::string add = CommonPrefix(options).substr(word.size());
  if (options.size() == 1) add += options.front().ends_with(".") ? "" : (before.starts_with("set ") ? "=" : " ");
  if (!add.empty()) {
    el_insertstr(el, add.c_str());
    return CC_REFRESH;
  }
  // Ambiguous: list the candidates under the line (at most 40).
  std::fputc('\n', stdout);
  for (size_t i = 0; i < options.size() && i < 40; ++i) std::fprintf(stdout, "  %s\n", options[i].c_str());
  if (options.size() > 40) std::fprintf(stdout, "  ... %zu more\n", options.size() - 40);
  return CC_REDISPLAY;
}

std::string HistoryPath() {
  const char* home = std::getenv("HOME");
  return home != nullptr && *home != '\0' ? std::string(home) + "/.ds_plan_history" : "";
}

int Interactive(ExploreContext& c) {
  EditLine* el = el_init("ds-plan", stdin, stdout, stderr);
  History* history_state = history_init();
  HistEvent ev;
  history(history_state, &ev, H_SETSIZE, 1000);
  history(history_state, &ev, H_SETUNIQUE, 1);
  const std::string path = HistoryPath();
  if (!path.empty()) history(history_state, &ev, H_LOAD, path.c_str());
  el_set(el, EL_PROMPT, &Prompt);
  el_set(el, EL_EDITOR, "emacs");
  el_set(el, EL_HIST, history, history_state);
  el_set(el, EL_ADDFN, "ds-complete", "complete a command or key", &Complete);
  el_set(el, EL_BIND, "^I", "ds-complete", nullptr);
  el_source(el, nullptr);  // ~/.editrc, as every libedit program reads it
  std::cout << sim::RenderSummary(*c.session) << "type help for the commands, tab completes\n";
  auto ask_quit = [&]() {
    if (!c.session->dirty()) return true;
    std::cout << "the config has edits that are not written: quit anyway? [y/N] " << std::flush;
    int n = 0;
    const char* answer = el_gets(el, &n);
    return answer == nullptr || answer[0] == 'y' || answer[0] == 'Y';
  };
  for (;;) {
    int count = 0;
    const char* raw = el_gets(el, &count);
    if (raw == nullptr) {  // end of input (^D)
      std::cout << "\n";
      if (ask_quit()) break;
      continue;
    }
    std::string line(raw, static_cast<size_t>(count));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) history(history_state, &ev, H_ENTER, line.c_str());
    CommandOutcome out = RunExploreCommand(c, line);
    std::cout << out.output << std::flush;
    if (out.quit && ask_quit()) break;
  }
  if (!path.empty()) history(history_state, &ev, H_SAVE, path.c_str());
  history_end(history_state);
  el_end(el);
  return 0;
}

}  // namespace

namespace {

// One line of a script or a pipe, at most kMaxScriptLine bytes: a file with no newline (a device
// such as /dev/zero, a binary) would otherwise be read into memory whole as one line. False at the
// end of the input; `error` says why a line was refused (too long, a NUL byte: not a text file).
constexpr size_t kMaxScriptLine = 64 * 1024;
bool ReadScriptLine(std::istream& in, std::string& line, std::string& error) {
  line.clear();
  char ch;
  bool any = false;
  while (in.get(ch)) {
    any = true;
    if (ch == '\n') return true;
    if (ch == '\0') {
      error = "a NUL byte: not a text file of explore commands";
      return false;
    }
    if (line.size() == kMaxScriptLine) {
      error = "longer than " + std::to_string(kMaxScriptLine) + " bytes: not a text file of explore commands";
      return false;
    }
    line += ch;
  }
  return any;
}

}  // namespace

int RunExploreLine(ExploreContext& c, const LineModeOptions& options) {
  if (options.interactive) return Interactive(c);
  std::ifstream file;
  std::istream* in = &std::cin;
  const std::string name = options.script.empty() ? "<stdin>" : options.script;
  if (!options.script.empty()) {
    file.open(options.script);
    if (!file) {
      std::cerr << "ds-plan: error: cannot read " << options.script << "\n";
      return 2;
    }
    in = &file;
  }
  std::cout << sim::RenderSummary(*c.session);
  int number = 0;
  std::string line, error;
  while (ReadScriptLine(*in, line, error)) {
    ++number;
    while (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::cout << "explore> " << line << "\n";
    CommandOutcome out = RunExploreCommand(c, line);
    std::cout << out.output << std::flush;
    if (out.failed) {
      std::cerr << name << ":" << number << ": " << out.output.substr(0, out.output.find('\n')) << "\n";
      return 1;
    }
    if (out.quit) break;
  }
  if (!error.empty()) {
    std::cerr << name << ":" << number + 1 << ": error: " << error << "\n";
    return 2;
  }
  return 0;
}

}  // namespace dsp::app
