// SPDX-License-Identifier: Apache-2.0
#include "apps/ds-plan/explore_commands.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/plan_setup.h"
#include "core/rules/rule.h"
#include "core/schema/schema_check.h"
#include "core/schema/schema_keys.h"
#include "core/util/file_io.h"
#include "core/util/text.h"
#include "sim/plan/snapshot.h"
#include "sim/session/session_text.h"

namespace dsp::app {
namespace {

const std::vector<std::string> kViews = {"summary", "memory", "time", "collectives", "groups", "diagnostics", "config"};

std::optional<int64_t> ParseInt(const std::string& text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string Rest(std::string_view line, std::string_view command) {
  std::string s(line);
  const size_t at = s.find(command);
  s = s.substr(at + command.size());
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  s = s.substr(first);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

CommandOutcome Ok(std::string text) {
  if (!text.empty() && text.back() != '\n') text += "\n";
  return {std::move(text), false, false};
}
CommandOutcome Fail(std::string text) {
  if (!text.empty() && text.back() != '\n') text += "\n";
  return {"error: " + text, true, false};
}

template <typename T>
CommandOutcome FromResult(const Result<T>& r) {
  return r.ok() ? Ok(*r) : Fail(r.error().message);
}

CommandOutcome Show(ExploreContext& c, const std::vector<std::string>& w) {
  const sim::Session& s = *c.session;
  const std::string view = w.size() > 1 ? w[1] : "summary";
  if (view == "summary") return Ok(sim::RenderSummary(s));
  if (view == "memory") return Ok(sim::RenderMemory(s));
  if (view == "time") return Ok(sim::RenderTime(s));
  if (view == "collectives") return Ok(sim::RenderCollectives(s));
  if (view == "diagnostics") return Ok(sim::RenderDiagnostics(s));
  if (view == "config") return Ok(s.ConfigText());
  if (view == "groups") {
    int64_t rank = 0;
    if (w.size() > 2) {
      auto r = ParseInt(w[2]);
      if (!r) return Fail("show groups RANK: \"" + w[2] + "\" is not a rank number");
      rank = *r;
    }
    return Ok(sim::RenderRankGroups(s, rank));
  }
  const std::string guess = ClosestMatch(view, kViews);
  return Fail("unknown view \"" + view + "\"" + (guess.empty() ? "" : ", did you mean \"" + guess + "\"?") +
              " (show summary|memory|time|collectives|groups [RANK]|diagnostics|config)");
}

// --force anywhere after the path.
// `CMD PATH [--force]`: exactly one path; anything else (a second word, another flag) is an error
// rather than silently dropped (`write a b.json` once wrote a file named `a`).
struct PathArgs {
  std::string path;
  bool force = false;
  std::string error;
};
PathArgs PathAndForce(const std::vector<std::string>& w) {
  PathArgs a;
  const std::string usage = w.empty() ? std::string() : w[0] + " PATH [--force]";
  for (size_t i = 1; i < w.size(); ++i) {
    if (w[i] == "--force") {
      a.force = true;
    } else if (w[i].starts_with("--")) {
      a.error = usage + ": unknown option " + w[i];
    } else if (a.path.empty()) {
      a.path = w[i];
    } else {
      a.error = usage + ": one path, got " + a.path + " and " + w[i];
    }
  }
  if (a.error.empty() && a.path.empty()) a.error = usage;
  return a;
}

CommandOutcome Tune(ExploreContext& c, const std::vector<std::string>& w) {
  int top = 10;
  for (size_t i = 1; i < w.size(); ++i) {
    if (w[i] == "--top" && i + 1 < w.size()) {
      auto n = ParseInt(w[++i]);
      if (!n || *n < 1 || *n > 100) return Fail("tune --top N: N must be 1..100");
      top = static_cast<int>(*n);
    } else {
      return Fail("tune takes only --top N");
    }
  }
  auto r = c.session->Tune(top);
  if (!r.ok()) return Fail(r.error().message);
  c.last_tune = std::move(r).value();
  return Ok(sim::RenderTune(*c.last_tune));
}

CommandOutcome Apply(ExploreContext& c, const std::vector<std::string>& w) {
  if (!c.last_tune) return Fail("apply N needs a `tune` first");
  auto n = w.size() == 2 ? ParseInt(w[1]) : std::nullopt;
  if (!n || *n < 1 || *n > static_cast<int64_t>(c.last_tune->plans.size())) {
    return Fail("apply N: N is a plan number from the last tune (1.." + std::to_string(c.last_tune->plans.size()) + ")");
  }
  return FromResult(c.session->Apply(c.last_tune->plans[static_cast<size_t>(*n - 1)]));
}

CommandOutcome Write(ExploreContext& c, const std::vector<std::string>& w) {
  auto [path, force, error] = PathAndForce(w);
  if (!error.empty()) return Fail(error);
  if (Status s = c.session->Write(path, force); !s.ok()) return Fail(s.error().message);
  std::string out = "wrote " + path;
  const sim::PlanKnobs& k = c.session->knobs();
  if (k.world_size > 0 || k.nodes > 0 || k.seq_len > 0) {
    out += " (the world and the sequence length are not part of a DeepSpeed config: `plan` records them)";
  }
  return Ok(out);
}

// The snapshot `ds-plan plan` would write for the written config with the session's knobs.
CommandOutcome Plan(ExploreContext& c, const std::vector<std::string>& w) {
  auto [path, force, error] = PathAndForce(w);
  if (!error.empty()) return Fail(error);
  const sim::Session& s = *c.session;
  if (s.dirty()) return Fail("the config has edits that are not written: `write PATH` first (check re-reads the config file)");
  // The one output policy (core/util/file_io.h): regular files only, links and existing files
  // only with --force, a directory that exists and is writable.
  if (Status out = CheckOutputPath("plan", path, force); !out.ok()) return Fail(out.error().message);
  if (path == "-") return Fail("plan PATH: name a file (check re-reads it)");
  SimArgs a = c.args;
  a.config = s.written_path().empty() ? s.config_path() : s.written_path();
  const sim::PlanKnobs& k = s.knobs();
  a.world.world_size = k.world_size;
  a.world.nodes = k.nodes;
  a.world.gpus_per_node = k.gpus_per_node;
  a.world.pp = k.pp;
  a.seq_len = k.seq_len;
  a.recompute = std::string(sim::RecomputeName(k.recompute));
  SetLayoutFlags(k, &a);  // what `apply` set, not the launch flags
  a.sets.clear();
  a.flags_are_explicit = true;
  int code = 0;
  auto snapshot = ComputeSnapshot(a, &code);
  if (!snapshot) return Fail("no snapshot (see the messages above)");
  if (Status st = WriteFileAtomic(path, sim::RenderPlanSnapshot(*snapshot), /*replace=*/force); !st.ok()) {
    return Fail(st.error().message);
  }
  return Ok("wrote " + path + " (ds-plan check " + path + " re-simulates it)");
}

CommandOutcome Explain(const std::vector<std::string>& w) {
  if (w.size() != 2) return Fail("explain RULE");
  if (const RuleInfo* r = FindRule(w[1])) return Ok(ExplainRule(*r));
  std::vector<std::string> ids;
  for (const RuleInfo* r : AllRules()) ids.emplace_back(r->id);
  const std::string guess = ClosestMatch(w[1], ids);
  return Fail("unknown rule \"" + w[1] + "\"" + (guess.empty() ? "" : ", did you mean \"" + guess + "\"?"));
}

}  // namespace

const std::vector<std::string>& ExploreCommandNames() {
  static const std::vector<std::string> names = {"apply", "diff", "explain", "help", "pin",   "plan", "quit",
                                                 "redo",  "set",  "show",    "tune", "undo",  "unpin", "unset",
                                                 "write"};
  return names;
}

std::string ExploreHelp() {
  return "commands:\n"
         "  set KEY=VALUE         edit a config key (dotted name or JSON pointer) or a knob:\n"
         "                        world_size, nodes, gpus_per_node, pp, seq_len, recompute, precision\n"
         "  unset KEY             remove a config key (a knob goes back to its default)\n"
         "  show [VIEW]           summary (default), memory, time, collectives, groups [RANK],\n"
         "                        diagnostics, config\n"
         "  pin / unpin / diff    keep the current plan as the baseline; compare against it\n"
         "  undo / redo           step through the edits\n"
         "  tune [--top N]        search every layout from the current state; apply N takes one\n"
         "  write PATH [--force]  save the config (atomic; refuses a config with errors)\n"
         "  plan PATH [--force]   save a plan snapshot of the written config for `ds-plan check`\n"
         "  explain RULE          a diagnostic's documentation\n"
         "  help, quit\n";
}

CommandOutcome RunExploreCommand(ExploreContext& c, std::string_view line) {
  const std::vector<std::string> w = Words(line);
  if (w.empty() || w[0].starts_with("#")) return Ok("");
  const std::string& cmd = w[0];
  sim::Session& s = *c.session;
  if (cmd == "set") {
    const std::string rest = Rest(line, "set");
    if (rest.empty()) return Fail("set KEY=VALUE");
    return FromResult(s.Set(rest));
  }
  if (cmd == "unset") {
    if (w.size() != 2) return Fail("unset KEY");
    return FromResult(s.Unset(w[1]));
  }
  if (cmd == "show") return Show(c, w);
  if (cmd == "pin") {
    s.Pin();
    return Ok("pinned " + sim::LayoutLine(s.now()) + " as the baseline");
  }
  if (cmd == "unpin") {
    s.Unpin();
    return Ok("baseline cleared");
  }
  if (cmd == "diff") return Ok(sim::RenderDiff(s));
  if (cmd == "undo") return FromResult(s.Undo());
  if (cmd == "redo") return FromResult(s.Redo());
  if (cmd == "tune") return Tune(c, w);
  if (cmd == "apply") return Apply(c, w);
  if (cmd == "write") return Write(c, w);
  if (cmd == "plan") return Plan(c, w);
  if (cmd == "explain") return Explain(w);
  if (cmd == "help") return Ok(ExploreHelp());
  if (cmd == "quit" || cmd == "exit") return {"", false, true};
  const std::string guess = ClosestMatch(cmd, ExploreCommandNames());
  return Fail("unknown command \"" + cmd + "\"" + (guess.empty() ? "" : ", did you mean \"" + guess + "\"?") +
              " (help lists them)");
}

std::vector<std::string> ExploreCompletions(std::string_view line) {
  const std::string text(line);
  const size_t space = text.find_last_of(" \t");
  const std::string word = space == std::string::npos ? text : text.substr(space + 1);
  const std::vector<std::string> before = Words(space == std::string::npos ? "" : text.substr(0, space));
  std::vector<std::string> pool;
  if (before.empty()) {
    pool = ExploreCommandNames();
  } else if (before[0] == "show" && before.size() == 1) {
    pool = kViews;
  } else if ((before[0] == "set" || before[0] == "unset") && before.size() == 1) {
    static const std::vector<std::string> keys = [] {
      std::vector<std::string> k = SchemaKeyPaths(DeepSpeedConfigSchema());
      for (const std::string& knob : sim::KnobKeys()) k.push_back(knob);
      std::sort(k.begin(), k.end());
      return k;
    }();
    pool = keys;
  } else if (before[0] == "explain" && before.size() == 1) {
    for (const RuleInfo* r : AllRules()) pool.emplace_back(r->id);
  }
  std::vector<std::string> out;
  for (const std::string& p : pool) {
    if (p.starts_with(word)) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace dsp::app
