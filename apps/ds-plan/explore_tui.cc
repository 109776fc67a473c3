// SPDX-License-Identifier: Apache-2.0
// explore's full-screen UI (ncurses): a header with the layout and verdict, the knobs pane, and
// result panes for memory (a stacked bar against the HBM line), step time, diagnostics and the
// groups of one rank. Every key calls the session and redraws; nothing here plans.
#include <curses.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "apps/ds-plan/explore_frontends.h"
#include "core/report/groups_report.h"
#include "sim/report/error_band.h"
#include "sim/session/dials.h"
#include "sim/session/session_text.h"
#include "sim/report/simulate_report.h"

namespace dsp::app {
namespace {

constexpr int kMinCols = 80;
constexpr int kMinLines = 24;
constexpr int kKnobWidth = 38;

enum Pair : short { kPairTitle = 1, kPairGood, kPairBad, kPairWarn, kPairDim, kPairSelect };

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

void Put(int y, int x, const std::string& text, int width, attr_t attr = A_NORMAL) {
  if (y < 0 || y >= LINES || x >= COLS || width <= 0) return;
  attron(attr);
  mvaddnstr(y, x, text.c_str(), std::min(width, COLS - x));
  attroff(attr);
}

std::string Delta(double now, const sim::Evaluation* base, double sim::Evaluation::*, double before) {
  if (base == nullptr || before == 0 || now == before) return "";
  return Fmt(" (%+.1f%%)", 100 * (now - before) / before);
}

struct Ui {
  ExploreContext* c = nullptr;
  size_t selected = 0;
  int64_t rank = 0;
  std::string message = "? help   q quit";
  bool message_is_error = false;

  sim::Session& s() { return *c->session; }

  void Say(const std::string& text, bool error = false) {
    message = text.substr(0, text.find('\n'));
    message_is_error = error;
  }

  // A one-line prompt on the bottom row. Returns false on Esc.
  bool Prompt(const std::string& label, std::string* value) {
    curs_set(1);
    for (;;) {
      move(LINES - 1, 0);
      clrtoeol();
      Put(LINES - 1, 0, label + *value, COLS - 1, A_BOLD);
      refresh();
      const int ch = getch();
      if (ch == 27) {
        curs_set(0);
        return false;
      }
      if (ch == '\n' || ch == KEY_ENTER) break;
      if (ch == 21) {  // ^U clears the line, as in a shell
        value->clear();
      } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        if (!value->empty()) value->pop_back();
      } else if (ch == KEY_RESIZE) {
        Draw();
      } else if (ch >= 32 && ch < 127) {
        value->push_back(static_cast<char>(ch));
      }
    }
    curs_set(0);
    return true;
  }

  bool Confirm(const std::string& question) {
    std::string answer;
    return Prompt(question + " [y/N] ", &answer) && !answer.empty() && (answer[0] == 'y' || answer[0] == 'Y');
  }

  // Multi-line text in a box over the panes; any key closes it.
  void Overlay(const std::string& title, const std::string& text) {
    std::vector<std::string> lines;
    for (size_t at = 0; at < text.size();) {
      const size_t nl = text.find('\n', at);
      lines.push_back(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
      if (nl == std::string::npos) break;
      at = nl + 1;
    }
    size_t top = 0;
    for (;;) {
      const int h = LINES - 4, w = COLS - 4;
      for (int y = 0; y < h; ++y) {
        move(2 + y, 2);
        for (int x = 0; x < w; ++x) addch(' ');
      }
      Put(2, 3, "[ " + title + " ]  any key closes, up/down scroll", w - 2, A_BOLD);
      for (int y = 0; y + 2 < h && top + static_cast<size_t>(y) < lines.size(); ++y) {
        Put(4 + y, 4, lines[top + static_cast<size_t>(y)], w - 4);
      }
      refresh();
      const int ch = getch();
      if (ch == KEY_DOWN && top + 1 < lines.size()) {
        ++top;
      } else if (ch == KEY_UP && top > 0) {
        --top;
      } else if (ch != KEY_RESIZE) {
        return;
      }
    }
  }

  void DrawHeader() {
    const sim::Evaluation& e = s().now();
    std::string title = "ds-plan explore  " + s().config_path() + (s().dirty() ? " [edited]" : "") + "   " +
                        s().model().model_type + " on " + s().cluster().name;
    Put(0, 0, title, COLS, COLOR_PAIR(kPairTitle) | A_BOLD);
    Put(1, 0, sim::LayoutLine(e), COLS, A_BOLD);
    const sim::Evaluation* base = s().baseline();
    std::string verdict;
    attr_t attr = A_BOLD;
    const DiagnosticCounts counts = Count(e.report.diagnostics);
    if (e.outcome == sim::Evaluation::Outcome::kConfigErrors) {
      verdict = "INVALID: " + std::to_string(counts.errors) + " error" + (counts.errors == 1 ? "" : "s");
      attr |= COLOR_PAIR(kPairBad);
    } else if (!e.has_numbers()) {
      verdict = "NO PLAN: " + e.message;
      attr |= COLOR_PAIR(kPairBad);
    } else {
      verdict = std::string(counts.warnings ? "valid (" + std::to_string(counts.warnings) + " warnings)" : "valid") +
                " | " + (e.memory.fits ? "FITS" : "DOES NOT FIT") + " " + Fmt("%.2f GB", e.memory.peak_bytes / 1e9) +
                Delta(e.memory.peak_bytes, base, nullptr, base && base->has_numbers() ? base->memory.peak_bytes : 0) +
                " | step " + Fmt("%.3f s", e.time.step_seconds) +
                Delta(e.time.step_seconds, base, nullptr, base && base->has_numbers() ? base->time.step_seconds : 0) +
                " | " + Fmt("%.0f tok/s", e.time.tokens_per_second) +
                Delta(e.time.tokens_per_second, base, nullptr,
                      base && base->has_numbers() ? base->time.tokens_per_second : 0) +
                " | MFU " + Fmt("%.1f%%", 100 * e.time.mfu) + " | accuracy " +
                sim::BandShort(sim::AccuracyFor(e.input.engine.engine, e.cluster.gpu), false);
      attr |= COLOR_PAIR(e.memory.fits ? kPairGood : kPairBad);
    }
    Put(2, 0, verdict, COLS, attr);
    if (base != nullptr) Put(3, 0, "baseline: " + sim::LayoutLine(*base), COLS, COLOR_PAIR(kPairDim));
  }

  void DrawKnobs(int top, int height) {
    Put(top, 0, "Knobs  (* = set explicitly)", kKnobWidth - 1, A_UNDERLINE);
    const auto& dials = sim::Dials();
    for (size_t i = 0; i < dials.size() && static_cast<int>(i) + 1 < height; ++i) {
      const sim::Dial& d = dials[i];
      std::string row = (i == selected ? "> " : "  ") + d.label;
      row.resize(22, ' ');
      row += (sim::DialIsSet(s(), d) ? "*" : " ") + sim::DialValue(s(), d);
      Put(top + 1 + static_cast<int>(i), 0, row, kKnobWidth - 1,
          i == selected ? (COLOR_PAIR(kPairSelect) | A_REVERSE) : A_NORMAL);
    }
  }

  // The stacked bar: P parameters, G gradients, O optimizer states, A activations, B buffers,
  // '|' the HBM line.
  int DrawMemory(int top, int x, int width, const sim::Evaluation& e, bool stale) {
    const sim::MemoryReport& m = e.memory;
    Put(top, x, std::string("Memory per rank") + (stale ? "  [last valid plan]" : ""), width, A_UNDERLINE);
    const double scale = std::max({m.hbm_bytes, m.peak_bytes + m.allowance_bytes, 1.0});
    const int bar = width - 2;
    std::string line(static_cast<size_t>(bar), '.');
    const std::pair<char, double> parts[] = {{'P', m.parameters_bytes}, {'G', m.gradients_bytes},
                                             {'O', m.optimizer_states_bytes}, {'A', m.activations_bytes},
                                             {'B', m.buffers_bytes}};
    double at = 0;
    for (const auto& [ch, bytes] : parts) {
      const int from = static_cast<int>(at / scale * bar);
      at += bytes;
      const int to = std::min(bar, static_cast<int>(at / scale * bar));
      for (int i = from; i < to; ++i) line[static_cast<size_t>(i)] = ch;
    }
    const int hbm = std::min(bar - 1, static_cast<int>(m.hbm_bytes / scale * bar));
    line[static_cast<size_t>(std::max(hbm, 0))] = '|';
    Put(top + 1, x, "[" + line + "]", width, COLOR_PAIR(m.fits ? kPairGood : kPairBad));
    const sim::Evaluation* base = s().baseline() && s().baseline()->has_numbers() ? s().baseline() : nullptr;
    auto item = [&](const char* name, double bytes, double before) {
      std::string t = std::string(name) + Fmt(" %.2f", bytes / 1e9);
      if (base && before != bytes) t += Fmt(" (%+.2f)", (bytes - before) / 1e9);
      return t;
    };
    const sim::MemoryReport* b = base ? &base->memory : nullptr;
    Put(top + 2, x,
        item("P params", m.parameters_bytes, b ? b->parameters_bytes : 0) + "  " +
            item("G grads", m.gradients_bytes, b ? b->gradients_bytes : 0) + "  " +
            item("O optim", m.optimizer_states_bytes, b ? b->optimizer_states_bytes : 0),
        width);
    Put(top + 3, x,
        item("A activ", m.activations_bytes, b ? b->activations_bytes : 0) + "  " +
            item("B buffers", m.buffers_bytes, b ? b->buffers_bytes : 0) + "  " +
            item("peak", m.peak_bytes, b ? b->peak_bytes : 0) + " + " + Fmt("%.2f", m.allowance_bytes / 1e9) +
            " of " + Fmt("%.0f GB HBM", m.hbm_bytes / 1e9),
        width);
    int y = top + 4;
    std::string classes;
    if (!e.stage_peak_bytes.empty()) {
      classes += "peak by stage (GB):";
      for (size_t i = 0; i < e.stage_peak_bytes.size(); ++i) classes += Fmt(" %.1f", e.stage_peak_bytes[i] / 1e9);
    }
    for (const auto& [family, fm] : m.by_family) {
      if (family != ParamFamily::kRoutedExperts || !s().model().is_moe()) continue;
      classes += std::string(classes.empty() ? "" : "; ") + "experts " +
                 Fmt("%.2f GB", (fm.parameters_bytes + fm.gradients_bytes + fm.optimizer_states_bytes) / 1e9) +
                 " of the states (over edp " + std::to_string(m.expert_zero_group_size) + ")";
    }
    if (m.cpu_bytes > 0) classes += std::string(classes.empty() ? "" : "; ") + Fmt("host %.2f GB", m.cpu_bytes / 1e9);
    if (!classes.empty()) Put(y++, x, classes, width, COLOR_PAIR(kPairDim));
    return y;
  }

  int DrawTime(int top, int x, int width, const sim::Evaluation& e) {
    const sim::TimeReport& t = e.time;
    Put(top, x, "Step time", width, A_UNDERLINE);
    int y = top + 1;
    auto row = [&](const std::string& name, double secs) {
      if (secs == 0 && name != "compute" && name != "step") return;
      std::string r = name;
      r.resize(26, ' ');
      r += Fmt("%10.3f s", secs) + Fmt("%7.1f%%", t.step_seconds > 0 ? 100 * secs / t.step_seconds : 0);
      Put(y++, x, r, width);
    };
    row("compute", t.compute_seconds);
    for (const auto& [kind, secs] : sim::ExposedByKind(t)) row("exposed " + kind, secs);
    if (t.offload_seconds > 0) row("CPU offload", t.offload_seconds);
    if (t.pipeline_bubble_seconds > 0) row("pipeline bubble", t.pipeline_bubble_seconds);
    row("step", t.step_seconds);
    return y;
  }

  int DrawDiagnostics(int top, int x, int width, int max_rows) {
    const sim::Evaluation& e = s().now();
    Put(top, x, "Diagnostics", width, A_UNDERLINE);
    int y = top + 1;
    int shown = 0;
    for (const Diagnostic& d : e.report.diagnostics) {
      if (shown >= max_rows) break;
      const bool error = d.severity == Severity::kError;
      const char* sev = error ? "error" : d.severity == Severity::kWarning ? "warning" : "note";
      Put(y++, x, std::string(sev) + "[" + d.rule_id + "] " + d.pointer + ": " + d.message, width,
          COLOR_PAIR(error ? kPairBad : d.severity == Severity::kWarning ? kPairWarn : kPairDim));
      ++shown;
    }
    if (!e.message.empty() && shown < max_rows) Put(y++, x, "no plan: " + e.message, width, COLOR_PAIR(kPairBad));
    if (e.report.diagnostics.empty() && e.message.empty()) Put(y++, x, "none", width, COLOR_PAIR(kPairGood));
    return y;
  }

  int DrawGroups(int top, int x, int width, int max_rows, const sim::Evaluation& e) {
    Put(top, x, "Groups of rank " + std::to_string(rank) + "  ([ ] change, * crosses a node)", width, A_UNDERLINE);
    int y = top + 1;
    int rows = 0;
    for (const auto& [kind, groups] : e.plan.groups.groups) {
      if (rows >= max_rows) break;
      for (const RankGroup& g : GroupsContaining(groups, static_cast<int>(rank))) {
        const bool crosses = e.gpus_per_node > 0 && CrossesNode(g, static_cast<int>(e.gpus_per_node));
        std::string name(GroupKindName(kind));
        name.resize(6, ' ');
        Put(y++, x, name + FormatRankGroup(g) + (crosses ? "*" : ""), width);
        ++rows;
      }
    }
    return y;
  }

  void Draw() {
    erase();
    if (COLS < kMinCols || LINES < kMinLines) {
      const std::string text = "terminal too small: " + std::to_string(COLS) + "x" + std::to_string(LINES) +
                               ", explore needs at least " + std::to_string(kMinCols) + "x" + std::to_string(kMinLines);
      Put(LINES / 2, 0, text, COLS, A_BOLD);
      Put(LINES / 2 + 1, 0, "resize the terminal, or q to quit", COLS);
      refresh();
      return;
    }
    DrawHeader();
    const int top = 5;
    const int bottom = LINES - 2;
    DrawKnobs(top, bottom - top);
    const int x = kKnobWidth + 1;
    const int width = COLS - x - 1;
    const sim::Evaluation& now = s().now();
    const sim::Evaluation* shown = now.has_numbers() ? &now : s().last_good();
    int y = top;
    if (shown != nullptr) {
      y = DrawMemory(y, x, width, *shown, shown != &now) + 1;
      y = DrawTime(y, x, width, *shown) + 1;
    }
    // The groups pane needs a row per group kind; diagnostics take the rest.
    const int group_rows = shown != nullptr ? static_cast<int>(shown->plan.groups.groups.size()) + 2 : 0;
    const int diag_rows = std::max(2, bottom - y - group_rows - 2);
    y = DrawDiagnostics(y, x, width, diag_rows) + 1;
    if (shown != nullptr && y < bottom - 1) DrawGroups(y, x, width, bottom - y - 1, *shown);
    Put(LINES - 2, 0,
        "<-/-> step  Enter value  e key  : cmd  u undo  r redo  p pin  t tune  w write  s snapshot  [ ] rank  ? help  q quit",
        COLS, COLOR_PAIR(kPairDim));
    Put(LINES - 1, 0, message, COLS, message_is_error ? COLOR_PAIR(kPairBad) | A_BOLD : A_NORMAL);
    refresh();
  }

  template <typename T>
  void Report(const Result<T>& r) {
    if (r.ok()) {
      Say(*r);
    } else {
      Say("error: " + r.error().message, true);
    }
  }

  void Run(const std::string& command) {
    CommandOutcome out = RunExploreCommand(*c, command);
    const size_t lines = static_cast<size_t>(std::count(out.output.begin(), out.output.end(), '\n'));
    if (lines > 1) {
      Overlay(command, out.output);
      Say(command);
    } else {
      Say(out.output, out.failed);
    }
  }

  void Tune() {
    Say("tuning: every layout of " + std::to_string(s().now().world_size) + " GPUs...");
    Draw();
    auto r = s().Tune(10);
    if (!r.ok()) return Say("error: " + r.error().message, true);
    c->last_tune = *r;
    if (r->plans.empty()) return Say("tune: no plan fits", true);
    const std::string text = sim::RenderTune(*r);
    std::vector<std::string> lines;
    for (size_t at = 0; at < text.size();) {
      const size_t nl = text.find('\n', at);
      lines.push_back(text.substr(at, nl - at));
      at = nl + 1;
    }
    size_t choice = 0;
    for (;;) {
      for (int y = 3; y < LINES - 2; ++y) {
        move(y, 0);
        clrtoeol();
      }
      Put(3, 1, "[ tune ]  up/down choose, Enter applies, Esc cancels", COLS - 2, A_BOLD);
      for (size_t i = 0; i + 1 < lines.size() && 5 + static_cast<int>(i) < LINES - 2; ++i) {
        const bool row = i >= 2 && i - 2 == choice;
        Put(5 + static_cast<int>(i), 1, lines[i], COLS - 2, row ? A_REVERSE : A_NORMAL);
      }
      refresh();
      const int ch = getch();
      if (ch == KEY_DOWN && choice + 1 < r->plans.size()) ++choice;
      if (ch == KEY_UP && choice > 0) --choice;
      if (ch == 27) return Say("tune: nothing applied");
      if (ch == '\n' || ch == KEY_ENTER) return Report(s().Apply(r->plans[choice]));
    }
  }

  void Write() {
    std::string path = s().written_path().empty() ? s().config_path() : s().written_path();
    if (!Prompt("write config to: ", &path) || path.empty()) return Say("write: cancelled");
    Status st = s().Write(path, false);
    if (!st.ok() && st.error().message.find("--force") != std::string::npos) {
      if (!Confirm(path + " exists: overwrite?")) return Say("write: not written");
      st = s().Write(path, true);
    }
    if (st.ok()) return Say("wrote " + path);
    Say("error: " + st.error().message, true);
  }

  // Returns false to quit.
  bool Key(int ch) {
    const auto& dials = sim::Dials();
    switch (ch) {
      case KEY_UP: case 'k':
        selected = selected == 0 ? dials.size() - 1 : selected - 1;
        break;
      case KEY_DOWN: case 'j':
        selected = (selected + 1) % dials.size();
        break;
      case KEY_LEFT: case '-': case 'h':
        Report(sim::StepDial(s(), dials[selected], -1));
        break;
      case KEY_RIGHT: case '+': case '=': case 'l':
        Report(sim::StepDial(s(), dials[selected], +1));
        break;
      case '\n': case KEY_ENTER: {
        std::string value;
        if (Prompt(dials[selected].label + " = ", &value) && !value.empty()) {
          Report(sim::SetDial(s(), dials[selected], value));
        }
        break;
      }
      case 'e': {
        std::string assignment;
        if (Prompt("set KEY=VALUE (dotted name or JSON pointer): ", &assignment) && !assignment.empty()) {
          Report(s().Set(assignment));
        }
        break;
      }
      case ':': {
        std::string command;
        if (Prompt(":", &command) && !command.empty()) {
          if (command == "quit" || command == "q") return !(!s().dirty() || Confirm("edits are not written: quit anyway?"));
          Run(command);
        }
        break;
      }
      case 'u': Report(s().Undo()); break;
      case 'r': case 18 /* ^R */: Report(s().Redo()); break;
      case 'p':
        s().Pin();
        Say("pinned: every number now shows its change against this plan (P clears)");
        break;
      case 'P':
        s().Unpin();
        Say("baseline cleared");
        break;
      case 't': Tune(); break;
      case 'w': Write(); break;
      case 's': {
        std::string path = "plan.json";
        if (Prompt("plan snapshot to: ", &path) && !path.empty()) Run("plan " + path);
        break;
      }
      case 'd': Run("show diagnostics"); break;
      case 'c': Run("show collectives"); break;
      case '[':
        if (rank > 0) --rank;
        break;
      case ']':
        if (rank + 1 < s().now().world_size) ++rank;
        break;
      case 'g': {
        std::string value;
        if (Prompt("rank: ", &value) && !value.empty()) {
          const long long r = std::atoll(value.c_str());
          if (r >= 0 && r < s().now().world_size) {
            rank = r;
          } else {
            Say("error: rank " + value + " is outside the world", true);
          }
        }
        break;
      }
      case '?':
        Overlay("help", ExploreHelp() +
                            "\nkeys: up/down select a knob; left/right or -/+ step it through the values that keep "
                            "the layout valid;\nEnter types a value; e sets any key; : runs a command above; u undo; "
                            "r redo; p pin, P unpin;\nt tune (Enter applies the chosen plan); w write; s plan "
                            "snapshot; d diagnostics; c collectives;\n[ ] or g choose the rank whose groups are "
                            "shown; q quit (asks when edits are not written).\nMemory bar: P parameters, G "
                            "gradients, O optimizer states, A activations, B buffers, | the HBM line.");
        break;
      case 'q': case 'Q':
        return !(!s().dirty() || Confirm("edits are not written: quit anyway?"));
      case KEY_RESIZE:
        break;
      default:
        break;
    }
    // The selected rank stays inside a world that shrank.
    if (s().now().world_size > 0 && rank >= s().now().world_size) rank = s().now().world_size - 1;
    return true;
  }
};

}  // namespace

int RunExploreTui(ExploreContext& context) {
  // initscr() exits the process when the terminal type is unknown; newterm() reports it instead,
  // and the session continues in line mode.
  SCREEN* screen = newterm(nullptr, stdout, stdin);
  if (screen == nullptr) {
    const char* term = std::getenv("TERM");
    std::cerr << "ds-plan: note: the terminal type \"" << (term != nullptr ? term : "") << "\" is unknown to "
              << "ncurses: explore continues in line mode (set TERM, e.g. xterm-256color, for the full screen)\n";
    return RunExploreLine(context, LineModeOptions{.script = "", .interactive = true});
  }
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  set_escdelay(25);
  if (has_colors()) {
    start_color();
    use_default_colors();
    init_pair(kPairTitle, COLOR_CYAN, -1);
    init_pair(kPairGood, COLOR_GREEN, -1);
    init_pair(kPairBad, COLOR_RED, -1);
    init_pair(kPairWarn, COLOR_YELLOW, -1);
    init_pair(kPairDim, COLOR_BLUE, -1);
    init_pair(kPairSelect, COLOR_WHITE, -1);
  }
  Ui ui;
  ui.c = &context;
  for (;;) {
    ui.Draw();
    const int ch = getch();
    if (ch == ERR) continue;
    if (COLS < kMinCols || LINES < kMinLines) {
      if (ch == 'q' || ch == 'Q') break;
      continue;
    }
    if (!ui.Key(ch)) break;
  }
  endwin();
  delscreen(screen);
  return 0;
}

}  // namespace dsp::app
