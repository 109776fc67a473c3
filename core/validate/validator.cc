// SPDX-License-Identifier: Apache-2.0
#include "core/json/hjson_parser.h"
#include "core/validate/validator.h"

#include <set>

#include "core/rules/rule.h"
#include "core/schema/schema_check.h"
#include "core/util/text.h"

namespace dsp {
namespace {

// A semantic rule (error or warning) at the same pointer explains the problem better than the bare
// schema message, and knows when DeepSpeed accepts the value anyway.
void DropShadowedSchemaFindings(std::vector<Diagnostic>* diags) {
  // A rule's finding at a value replaces the schema's generic one. A schema warning (a value
  // pydantic coerces) gives way only to a rule that finds the value itself invalid ("...-invalid":
  // DeepSpeed checks the raw value first); a rule about something else at the same key, such as
  // zero-no-optimizer at "stage": "2", leaves the coercion warning standing.
  std::set<std::string> rule_pointers, invalid_pointers;
  for (const auto& d : *diags) {
    if (d.rule_id.starts_with("schema-") || d.severity == Severity::kNote) continue;
    rule_pointers.insert(d.pointer);
    if (d.rule_id.ends_with("-invalid")) invalid_pointers.insert(d.pointer);
  }
  std::erase_if(*diags, [&](const Diagnostic& d) {
    if (!d.rule_id.starts_with("schema-")) return false;
    return d.severity == Severity::kWarning ? invalid_pointers.contains(d.pointer) : rule_pointers.contains(d.pointer);
  });
}

// The Hugging Face Trainer, Accelerate and Megatron-DeepSpeed read the file with json.load and pass
// DeepSpeed a dict: what only hjson accepts fails there, and a number written 2.0 or 1e3 stays a float.
void ReadAsStrictJson(Consumer consumer, ParsedJson* parsed) {
  if (Holds(Condition::kStrictJsonLoader, consumer) != true) return;
  for (Diagnostic& d : parsed->diagnostics) {
    if (d.rule_id == "json-comment" || d.rule_id == "json-trailing-comma" || d.rule_id == "json-hjson-syntax") {
      d.severity = Severity::kError;
      d.message += " (--consumer " + std::string(ConsumerName(consumer)) +
                   " reads the file with json.load, so this is a JSONDecodeError before DeepSpeed starts)";
    }
  }
  for (const std::string& pointer : parsed->doc.float_literals) {
    Json::json_pointer jp(pointer);
    if (!parsed->doc.root.contains(jp)) continue;
    Json& v = parsed->doc.root.at(jp);
    if (v.is_number_integer()) v = static_cast<double>(v.get<int64_t>());
  }
}

}  // namespace

void ApplyOverride(Json& root, const Override& o) {
  Json* cur = &root;
  auto tokens = PointerTokens(o.pointer);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!cur->is_object()) *cur = Json::object();
    cur = &(*cur)[tokens[i]];
  }
  *cur = o.value;
}

Result<std::string> OverridePointer(const std::string& key) {
  if (!key.empty() && key.front() == '/') return key;
  std::string pointer, token;
  for (char c : key + ".") {
    if (c == '.') {
      if (token.empty()) return Error{"--set key \"" + key + "\" has an empty component"};
      pointer = PointerJoin(pointer, token);
      token.clear();
    } else {
      token += c;
    }
  }
  return pointer;
}

Result<Override> ParseOverride(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Error{"--set expects KEY=VALUE (for example zero_optimization.stage=2), got \"" + text + "\""};
  }
  std::string raw = text.substr(eq + 1);
  Override o;
  auto pointer = OverridePointer(text.substr(0, eq));
  if (!pointer.ok()) return pointer.error();
  o.pointer = std::move(pointer).value();
  // Bounded like every other input (ParseOptions::max_depth): deeper values stay the string.
  ParsedJson parsed = ParseJsonLenient("--set", raw);
  o.value = parsed.ok ? std::move(parsed.doc.root) : Json(raw);
  return o;
}

bool FileReport::valid() const {
  for (const auto& d : diagnostics) {
    if (d.severity == Severity::kError) return false;
  }
  return true;
}

FileReport ValidateText(std::string path, std::string text, const ValidateOptions& options,
                        const std::vector<Override>& overrides) {
  FileReport report;
  report.path = path;
  ParsedJson parsed = ParseDeepSpeedConfig(std::move(path), std::move(text));
  if (parsed.ok) ReadAsStrictJson(options.consumer, &parsed);
  report.diagnostics = std::move(parsed.diagnostics);
  if (parsed.ok && !parsed.doc.root.is_object()) {
    Diagnostic d;
    d.rule_id = "schema-type";
    d.severity = Severity::kError;
    d.message = "a DeepSpeed config must be a JSON object, not " + std::string(parsed.doc.root.type_name());
    d.hint = "wrap the settings in { }";
    d.loc = parsed.doc.LocateValue("");
    report.diagnostics.push_back(std::move(d));
    parsed.ok = false;
  }
  if (parsed.ok) {
    for (const auto& o : overrides) ApplyOverride(parsed.doc.root, o);
    CheckSchema(parsed.doc, &report.diagnostics);
    CheckKeys(parsed.doc, &report.diagnostics);
    // The rules check what DeepSpeed runs: pydantic's coerced values ("stage": "3" is stage 3),
    // each already a schema warning above.
    JsonDocument as_read = parsed.doc;
    as_read.root = PydanticLaxView(parsed.doc.root);
    RuleContext ctx(as_read, options, &parsed.doc.root);
    for (const auto& set : AllRuleSets()) {
      if (set.check) set.check(ctx);
    }
    for (auto& d : ctx.diagnostics()) report.diagnostics.push_back(std::move(d));
    report.layout = SummarizeLayout(ctx.parallel(), options.world_size, options.pp, options.mpu_tp);
  }
  DropShadowedSchemaFindings(&report.diagnostics);
  // Messages and pointers quote the user's keys and values: bound them, so a 2 MB key gives a
  // diagnostic of a few hundred bytes, not a 4 MB SARIF file (issue 16).
  for (Diagnostic& d : report.diagnostics) {
    d.message = ClipForDisplay(d.message, 1000);
    d.pointer = ClipForDisplay(d.pointer, 300);
    d.hint = ClipForDisplay(d.hint, 1000);
  }
  SortDiagnostics(report.diagnostics);
  report.source = std::move(parsed.doc.source);
  return report;
}

bool ConfigPassesValidation(const Json& config, const ValidateOptions& options) {
  if (!config.is_object()) return false;
  JsonDocument doc;
  doc.root = config;
  std::vector<Diagnostic> diagnostics;
  CheckSchema(doc, &diagnostics);
  CheckKeys(doc, &diagnostics);
  JsonDocument as_read = doc;
  as_read.root = PydanticLaxView(doc.root);
  RuleContext ctx(as_read, options, &doc.root);
  for (const auto& set : AllRuleSets()) {
    if (set.check) set.check(ctx);
  }
  for (auto& d : ctx.diagnostics()) diagnostics.push_back(std::move(d));
  DropShadowedSchemaFindings(&diagnostics);
  for (const auto& d : diagnostics) {
    if (d.severity == Severity::kError) return false;
  }
  return true;
}

}  // namespace dsp
