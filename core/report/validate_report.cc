// SPDX-License-Identifier: Apache-2.0
#include "core/report/validate_report.h"

#include <cctype>

#include <map>

#include "core/rules/rule.h"

namespace dsp {
namespace {

Json Optional(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(nullptr); }

std::string LayoutLine(const LayoutSummary& l) {
  auto f = [](const char* name, const std::optional<int64_t>& v) {
    return std::string(name) + "=" + (v ? std::to_string(*v) : std::string("?"));
  };
  std::string out = l.world_size ? "world " + std::to_string(*l.world_size) + ": " : "world ?: ";
  out += f("tp", l.tp) + " " + f("dp", l.dp) + " " + f("sp", l.sp) + " " + f("pp", l.pp);
  if (l.ep && *l.ep > 1) out += " " + f("ep", l.ep) + " " + f("etp", l.etp) + " " + f("edp", l.edp);
  out += " " + f("zero", l.zero_stage);
  return out;
}

// The offending line with a caret under the column; long (minified) lines are cut to a window
// around the column so one diagnostic never prints megabytes.
std::string SourceExcerpt(const SourceText& source, SourceLoc loc, bool color) {
  constexpr size_t kWindow = 100;
  std::string_view line = source.Line(loc.line);
  size_t caret = static_cast<size_t>(loc.column - 1);
  std::string prefix, suffix;
  if (line.size() > kWindow) {
    size_t begin = caret > kWindow / 2 ? caret - kWindow / 2 : 0;
    if (begin > 0) prefix = "...";
    if (begin + kWindow < line.size()) suffix = "...";
    line = line.substr(begin, kWindow);
    caret = caret - begin + prefix.size();
  }
  std::string number = std::to_string(loc.line);
  std::string shown = prefix + std::string(line) + suffix;
  std::string out = " " + number + " | " + shown + "\n";
  out += " " + std::string(number.size(), ' ') + " | ";
  // Keep tabs so the caret lines up under the same column in a terminal, and one space per code
  // point (UTF-8 continuation bytes take no room on screen).
  for (size_t i = 0; i < caret && i < shown.size(); ++i) {
    if ((static_cast<unsigned char>(shown[i]) & 0xC0) == 0x80) continue;
    out += shown[i] == '\t' ? '\t' : ' ';
  }
  out += color ? "\033[1;32m^\033[0m\n" : "^\n";
  return out;
}

std::string_view SeverityColor(Severity s) {
  switch (s) {
    case Severity::kError: return "\033[1;31m";
    case Severity::kWarning: return "\033[1;35m";
    case Severity::kNote: return "\033[1;36m";
  }
  return "";
}

std::string Plural(int n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Escaping for workflow commands: data and property values.
std::string GithubEscape(std::string_view s, bool property) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '%': out += "%25"; break;
      case '\r': out += "%0D"; break;
      case '\n': out += "%0A"; break;
      case ':': out += property ? "%3A" : ":"; break;
      case ',': out += property ? "%2C" : ","; break;
      default: out += c;
    }
  }
  return out;
}

std::string_view SarifLevel(Severity s) {
  switch (s) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kNote: return "note";
  }
  return "error";
}

}  // namespace

Json LayoutToJson(const LayoutSummary& l) {
  Json j = Json::object();
  j["world_size"] = Optional(l.world_size);
  j["tp"] = Optional(l.tp);
  j["dp"] = Optional(l.dp);
  j["sp"] = Optional(l.sp);
  j["ep"] = Optional(l.ep);
  j["etp"] = Optional(l.etp);
  j["edp"] = Optional(l.edp);
  j["pp"] = Optional(l.pp);
  j["zero_stage"] = Optional(l.zero_stage);
  return j;
}

std::string RenderText(const std::vector<FileReport>& files, TextStyle style) {
  const bool color = style == TextStyle::kColor;
  const std::string bold = color ? "\033[1m" : "", reset = color ? "\033[0m" : "";
  std::string out;
  for (const auto& f : files) {
    for (const auto& d : f.diagnostics) {
      out += bold + f.path;
      if (d.loc.known()) out += ":" + std::to_string(d.loc.line) + ":" + std::to_string(d.loc.column);
      out += ":" + reset + " " + (color ? std::string(SeverityColor(d.severity)) : "") +
             std::string(SeverityName(d.severity)) + ":" + reset + " " + d.message + " [" + d.rule_id + "]\n";
      if (d.loc.known()) {
        out += SourceExcerpt(f.source, d.loc, color);
      }
      if (!d.pointer.empty()) out += "  at " + d.pointer + "\n";
      if (!d.hint.empty()) out += "  hint: " + d.hint + "\n";
    }
    DiagnosticCounts c = Count(f.diagnostics);
    out += f.path + ": " + (f.valid() ? "ok" : "invalid") + " (" + Plural(c.errors, "error") + ", " +
           Plural(c.warnings, "warning") + ", " + Plural(c.notes, "note") + ")";
    if (f.valid()) out += "; " + LayoutLine(f.layout);
    out += "\n";
  }
  return out;
}

std::string RenderJson(const std::vector<FileReport>& files) {
  Json root = Json::object();
  root["schema_version"] = 1;
  Json list = Json::array();
  for (const auto& f : files) {
    Json file = Json::object();
    file["path"] = f.path;
    file["valid"] = f.valid();
    Json diags = Json::array();
    for (const auto& d : f.diagnostics) {
      Json j = Json::object();
      j["id"] = d.rule_id;
      j["severity"] = SeverityName(d.severity);
      j["message"] = d.message;
      j["pointer"] = d.pointer;
      j["line"] = d.loc.known() ? Json(d.loc.line) : Json(nullptr);
      j["column"] = d.loc.known() ? Json(d.loc.column) : Json(nullptr);
      j["hint"] = d.hint;
      diags.push_back(std::move(j));
    }
    file["diagnostics"] = std::move(diags);
    file["layout"] = LayoutToJson(f.layout);
    list.push_back(std::move(file));
  }
  root["files"] = std::move(list);
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string SarifUri(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = !path.empty() && path.front() == '/' ? "file://" : "";
  for (char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
    if (unreserved && c < 0x80) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string RenderSarif(const std::vector<FileReport>& files, std::string_view tool_version,
                        const std::vector<UnreadInput>& unread) {
  // Every registered rule is listed so ruleIndex is stable across runs.
  auto rules = AllRules();
  std::map<std::string_view, size_t> index;
  Json rule_list = Json::array();
  for (size_t i = 0; i < rules.size(); ++i) {
    index[rules[i]->id] = i;
    Json r = Json::object();
    r["id"] = rules[i]->id;
    r["name"] = rules[i]->id;
    r["shortDescription"] = {{"text", rules[i]->summary}};
    r["fullDescription"] = {{"text", rules[i]->details}};
    r["defaultConfiguration"] = {{"level", SarifLevel(rules[i]->severity)}};
    r["properties"] = {{"category", rules[i]->category}};
    rule_list.push_back(std::move(r));
  }
  Json results = Json::array();
  for (const auto& f : files) {
    for (const auto& d : f.diagnostics) {
      Json r = Json::object();
      r["ruleId"] = d.rule_id;
      if (auto it = index.find(d.rule_id); it != index.end()) r["ruleIndex"] = it->second;
      r["level"] = SarifLevel(d.severity);
      std::string text = d.message;
      if (!d.hint.empty()) text += " (" + d.hint + ")";
      r["message"] = {{"text", text}};
      Json physical = Json::object();
      physical["artifactLocation"] = {{"uri", SarifUri(f.path)}};
      if (d.loc.known()) {
        physical["region"] = {{"startLine", d.loc.line}, {"startColumn", f.source.CodePointColumn(d.loc)}};
      }
      r["locations"] = Json::array({Json{{"physicalLocation", physical}}});
      r["properties"] = {{"jsonPointer", d.pointer}};
      results.push_back(std::move(r));
    }
  }
  Json driver = Json::object();
  driver["name"] = "ds-plan";
  driver["version"] = tool_version;
  driver["informationUri"] = "https://github.com/ds-plan/ds-plan";
  driver["rules"] = std::move(rule_list);
  Json run = Json::object();
  run["tool"] = {{"driver", std::move(driver)}};
  run["results"] = std::move(results);
  // Columns count code points (SourceText::CodePointColumn); SARIF's default is UTF-16 units.
  run["columnKind"] = "unicodeCodePoints";
  Json invocation = Json::object();
  invocation["executionSuccessful"] = unread.empty();
  if (!unread.empty()) {
    Json notes = Json::array();
    for (const UnreadInput& u : unread) {
      Json n = Json::object();
      n["level"] = "error";
      n["message"] = {{"text", u.message}};
      n["locations"] = Json::array({Json{{"physicalLocation", {{"artifactLocation", {{"uri", SarifUri(u.path)}}}}}}});
      notes.push_back(std::move(n));
    }
    invocation["toolExecutionNotifications"] = std::move(notes);
  }
  run["invocations"] = Json::array({std::move(invocation)});
  Json root = Json::object();
  root["$schema"] = "https://json.schemastore.org/sarif-2.1.0.json";
  root["version"] = "2.1.0";
  root["runs"] = Json::array({std::move(run)});
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string RenderGithub(const std::vector<FileReport>& files) {
  std::string out;
  for (const auto& f : files) {
    for (const auto& d : f.diagnostics) {
      std::string_view command = d.severity == Severity::kError     ? "error"
                                 : d.severity == Severity::kWarning ? "warning"
                                                                    : "notice";
      out += "::" + std::string(command) + " file=" + GithubEscape(f.path, true);
      if (d.loc.known()) {
        out += ",line=" + std::to_string(d.loc.line) + ",col=" + std::to_string(f.source.CodePointColumn(d.loc));
      }
      out += ",title=" + GithubEscape(d.rule_id, true) + "::";
      std::string text = d.message;
      if (!d.hint.empty()) text += "\nhint: " + d.hint;
      out += GithubEscape(text, false) + "\n";
    }
  }
  return out;
}

std::string RenderValidateReport(const std::vector<FileReport>& files, ReportFormat format,
                                 std::string_view tool_version, TextStyle style) {
  switch (format) {
    case ReportFormat::kText: return RenderText(files, style);
    case ReportFormat::kJson: return RenderJson(files);
    case ReportFormat::kSarif: return RenderSarif(files, tool_version);
    case ReportFormat::kGithub: return RenderGithub(files);
  }
  return RenderText(files, style);
}

}  // namespace dsp
