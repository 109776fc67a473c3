// SPDX-License-Identifier: Apache-2.0
#include "core/schema/schema_check.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>
#include <cctype>
#include <memory>
#include <set>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "core/schema/embedded.h"
#include "core/util/text.h"

namespace dsp {
namespace {

struct CompiledSchema {
  Json raw;
  valijson::Schema schema;
};

const CompiledSchema& Compiled() {
  static const std::unique_ptr<CompiledSchema> compiled = [] {
    auto c = std::make_unique<CompiledSchema>();
    c->raw = Json::parse(schemas::k_ds_config_schema_json);
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(c->raw);
    parser.populateSchema(adapter, c->schema);
    return c;
  }();
  return *compiled;
}

// valijson reports paths as "<root>" "[zero_optimization]" "[stage]".
std::string ContextToPointer(const std::vector<std::string>& context) {
  std::string pointer;
  for (const auto& part : context) {
    if (part == "<root>") continue;
    std::string token = part;
    if (token.size() >= 2 && token.front() == '[' && token.back() == ']') {
      token = token.substr(1, token.size() - 2);
    }
    if (token.size() >= 2 && token.front() == '"' && token.back() == '"') {
      token = token.substr(1, token.size() - 2);
    }
    pointer = PointerJoin(pointer, token);
  }
  return pointer;
}

bool IsWrapperMessage(const std::string& d) {
  // valijson repeats a failure at every enclosing level; the leaf message is the useful one.
  return d.starts_with("Failed to validate against schema associated with property") ||
         d.starts_with("Failed to validate item #") ||
         d.starts_with("Failed to validate against child schema") ||
         d.find("could not be validated using 'properties'") != std::string::npos ||
         d.find("additionalProperties") != std::string::npos;
}

std::string ClassifySchemaError(const std::string& d) {
  if (d.find("enum") != std::string::npos || d.find("Failed to match against any enum") != std::string::npos) {
    return "schema-enum";
  }
  if (d.find("greater than") != std::string::npos || d.find("less than") != std::string::npos) {
    return "schema-range";
  }
  if (d.find("type") != std::string::npos || d.find("Value type") != std::string::npos) {
    return "schema-type";
  }
  return "schema-invalid";
}

// Follows "$ref": "#/definitions/name".
const Json* Resolve(const Json& root, const Json* node) {
  for (int guard = 0; node != nullptr && guard < 16; ++guard) {
    auto ref = node->find("$ref");
    if (ref == node->end() || !ref->is_string()) return node;
    std::string target = ref->get<std::string>();
    if (!target.starts_with("#")) return node;
    Json::json_pointer p(target.substr(1));
    if (!root.contains(p)) return nullptr;
    node = &root.at(p);
  }
  return node;
}

std::string DottedPointer(const std::string& pointer) {
  std::string out;
  for (const auto& t : PointerTokens(pointer)) {
    if (!out.empty()) out += '.';
    out += t;
  }
  return out;
}

std::string ShowJson(const Json& v) {
  std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  std::string kind = v.is_string()            ? "a string"
                     : v.is_boolean()         ? "a boolean"
                     : v.is_number_integer()  ? "an integer"
                     : v.is_number()          ? "a number"
                     : v.is_null()            ? "null"
                     : v.is_array()           ? "a list"
                                              : "an object";
  if (v.is_null()) return "null";
  return text + " (" + kind + ")";
}

// The schema node that describes the value at `pointer` (through properties, items and $ref;
// for anyOf/oneOf the first branch that has the next property).
const Json* SchemaAt(const Json& root, const std::string& pointer) {
  const Json* node = Resolve(root, &root);
  for (const auto& token : PointerTokens(pointer)) {
    if (node == nullptr) return nullptr;
    const Json* next = nullptr;
    auto try_node = [&](const Json* n) {
      n = Resolve(root, n);
      if (n == nullptr || !n->is_object()) return;
      if (auto props = n->find("properties"); props != n->end() && props->contains(token)) {
        next = &(*props)[token];
      } else if (auto items = n->find("items"); items != n->end() && items->is_object()) {
        next = &*items;
      }
    };
    try_node(node);
    for (const char* key : {"anyOf", "oneOf", "allOf"}) {
      if (next != nullptr) break;
      if (auto alts = node->find(key); alts != node->end() && alts->is_array()) {
        for (const auto& alt : *alts) {
          try_node(&alt);
          if (next != nullptr) break;
        }
      }
    }
    node = next == nullptr ? nullptr : Resolve(root, next);
  }
  return node;
}

// What pydantic v2's lax (Python) mode makes of `v` for a field of this schema node, or nullopt
// when it rejects it or the section is not a pydantic one (additionalProperties: false in the
// schema; dict-parsed sections use the raw value). Verified against pydantic 2.13: a bool field
// takes 0/1 and "true"/"false"/"yes"/"no"/"on"/"off"/"t"/"f"/"y"/"n"/"1"/"0" (any case, no
// surrounding spaces); an int field takes booleans, integral floats and integer strings (spaces
// around, a sign, "_" between digits, a zero fraction: " 2 ", "+5", "5_000", "2.0"), not "1e3"; a
// float field takes booleans and numeric strings. Integer enums (ZeroStageEnum) coerce the same way.
std::optional<Json> PydanticLaxCoerce(const Json& root, const std::string& pointer, const Json& node, const Json& v) {
  const Json* parent = SchemaAt(root, PointerParent(pointer));
  if (parent == nullptr || !parent->contains("additionalProperties") ||
      (*parent)["additionalProperties"] != false) {
    return std::nullopt;
  }
  std::vector<std::string> types;
  if (auto t = node.find("type"); t != node.end()) {
    if (t->is_string()) types.push_back(t->get<std::string>());
    if (t->is_array()) {
      for (const auto& x : *t) types.push_back(x.get<std::string>());
    }
  }
  auto wants = [&](const char* t) { return std::find(types.begin(), types.end(), t) != types.end(); };
  if (wants("boolean")) {
    if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) return Json(v.get<int64_t>() == 1);
    if (v.is_string()) {
      std::string s = v.get<std::string>();
      for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (const char* yes : {"true", "yes", "on", "1", "t", "y"}) {
        if (s == yes) return Json(true);
      }
      for (const char* no : {"false", "no", "off", "0", "f", "n"}) {
        if (s == no) return Json(false);
      }
    }
  }
  if (wants("integer")) {
    if (v.is_boolean()) return Json(v.get<bool>() ? 1 : 0);
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.2e18) return Json(static_cast<int64_t>(d));
    }
    if (v.is_string()) {
      // [spaces] [+-] digits ('_' between digits) [.0...] [spaces]
      static const std::regex kInt(R"(^\s*([+-]?)(\d(?:_?\d)*)(?:\.0*)?\s*$)");
      std::smatch m;
      const std::string& s = v.get_ref<const std::string&>();
      if (std::regex_match(s, m, kInt)) {
        std::string digits;
        for (char c : m[2].str()) {
          if (c != '_') digits += c;
        }
        if (digits.size() <= 18) return Json((m[1] == "-" ? -1 : 1) * std::stoll(digits));
      }
    }
  }
  if (wants("number")) {
    if (v.is_boolean()) return Json(v.get<bool>() ? 1.0 : 0.0);
    if (v.is_string()) {
      static const std::regex kFloat(R"(^\s*[+-]?(\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d+)?\s*$)");
      std::string s = v.get<std::string>();
      if (std::regex_match(s, kFloat)) {
        std::erase(s, '_');
        return Json(std::stod(s));
      }
    }
  }
  return std::nullopt;
}

// Whether a coerced value also passes the node's enum and bounds (pydantic checks them after
// coercion: "-1" for a ge=0 field still fails).
bool CoercedFits(const Json& node, const Json& c) {
  if (auto e = node.find("enum"); e != node.end() && e->is_array()) {
    bool member = false;
    for (const auto& x : *e) member = member || (x == c) || (x.is_number() && c.is_number() && x.get<double>() == c.get<double>());
    if (!member) return false;
  }
  if (c.is_number()) {
    double d = c.get<double>();
    if (auto m = node.find("minimum"); m != node.end() && m->is_number() && d < m->get<double>()) return false;
    if (auto m = node.find("maximum"); m != node.end() && m->is_number() && d > m->get<double>()) return false;
  }
  return true;
}

// Whether `v` already has one of the node's JSON types (an integer counts as a number).
bool HasSchemaType(const Json& node, const Json& v) {
  auto t = node.find("type");
  if (t == node.end()) return true;
  auto is = [&](const std::string& type) {
    if (type == "integer") return v.is_number_integer();
    if (type == "number") return v.is_number();
    if (type == "string") return v.is_string();
    if (type == "boolean") return v.is_boolean();
    if (type == "object") return v.is_object();
    if (type == "array") return v.is_array();
    if (type == "null") return v.is_null();
    return false;
  };
  if (t->is_string()) return is(t->get<std::string>());
  if (t->is_array()) {
    for (const auto& x : *t) {
      if (x.is_string() && is(x.get<std::string>())) return true;
    }
    return false;
  }
  return true;
}

void CoerceInPlace(const Json& schema, Json& value, const std::string& pointer) {
  if (value.is_object()) {
    for (auto& [key, child] : value.items()) CoerceInPlace(schema, child, PointerJoin(pointer, key));
    return;
  }
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) CoerceInPlace(schema, value[i], PointerJoin(pointer, std::to_string(i)));
    return;
  }
  const Json* node = SchemaAt(schema, pointer);
  if (node == nullptr || HasSchemaType(*node, value)) return;
  std::optional<Json> coerced = PydanticLaxCoerce(schema, pointer, *node, value);
  if (coerced && CoercedFits(*node, *coerced)) value = *coerced;
}

// "an integer >= 1", "one of \"none\", \"cpu\", \"nvme\"", "a number between 0 and 1".
std::string Expectation(const Json& node) {
  if (auto e = node.find("enum"); e != node.end() && e->is_array()) {
    std::vector<std::string> items;
    for (const auto& v : *e) items.push_back(v.dump());
    return "one of " + JoinList(items, " or ");
  }
  if (auto c = node.find("const"); c != node.end()) return c->dump();
  std::vector<std::string> types;
  if (auto t = node.find("type"); t != node.end()) {
    if (t->is_string()) types.push_back(t->get<std::string>());
    if (t->is_array()) {
      for (const auto& x : *t) types.push_back(x.get<std::string>());
    }
  }
  if (types.empty()) return "";
  std::vector<std::string> words;
  for (const auto& t : types) {
    words.push_back(t == "integer" ? "an integer" : t == "number" ? "a number" : t == "boolean" ? "a boolean"
                    : t == "string" ? "a string" : t == "array" ? "a list" : t == "object" ? "an object" : t);
  }
  std::string out = JoinList(words, " or ");
  auto num = [](const Json& v) {
    double d = v.get<double>();
    return d == static_cast<double>(static_cast<long long>(d)) ? std::to_string(static_cast<long long>(d)) : v.dump();
  };
  bool has_min = node.contains("minimum") && node["minimum"].is_number();
  bool has_max = node.contains("maximum") && node["maximum"].is_number();
  if (has_min && has_max) {
    out += " between " + num(node["minimum"]) + " and " + num(node["maximum"]);
  } else if (has_min) {
    out += " >= " + num(node["minimum"]);
  } else if (has_max) {
    out += " <= " + num(node["maximum"]);
  }
  return out;
}

std::vector<std::string> PropertyNames(const Json& props) {
  std::vector<std::string> names;
  for (auto it = props.begin(); it != props.end(); ++it) names.push_back(it.key());
  return names;
}

std::string DescribeSection(const std::string& pointer) {
  return pointer.empty() ? std::string("the top level") : "\"" + pointer.substr(1) + "\"";
}

void WalkKeys(const JsonDocument& doc, const Json& root_schema, const Json& value,
              const Json* schema, const std::string& pointer, std::vector<Diagnostic>* out) {
  schema = Resolve(root_schema, schema);
  if (schema == nullptr || !schema->is_object()) return;
  if (value.is_array()) {
    auto items = schema->find("items");
    if (items == schema->end() || !items->is_object()) return;
    for (size_t i = 0; i < value.size(); ++i) {
      WalkKeys(doc, root_schema, value[i], &*items, PointerJoin(pointer, std::to_string(i)), out);
    }
    return;
  }
  if (!value.is_object()) return;
  auto props_it = schema->find("properties");
  bool open = schema->value("x-ds-open", false);
  auto additional = schema->find("additionalProperties");
  bool strict = additional != schema->end() && additional->is_boolean() && !additional->get<bool>();
  for (auto it = value.begin(); it != value.end(); ++it) {
    std::string child = PointerJoin(pointer, it.key());
    const Json* child_schema = nullptr;
    if (props_it != schema->end() && props_it->contains(it.key())) {
      child_schema = &(*props_it)[it.key()];
    }
    if (child_schema == nullptr) {
      if (open || props_it == schema->end()) continue;
      if (it.key().starts_with("_") || it.key().starts_with("//")) continue;  // comment-style keys
      // DeepSpeedConfigModel.__init__(self, strict=False, **data) binds a "strict" key itself
      // (runtime/config_utils.py), so pydantic never sees it as an extra input.
      if (strict && it.key() == "strict") continue;
      Diagnostic d;
      d.rule_id = "unknown-key";
      d.pointer = child;
      d.loc = doc.LocateKey(child);
      std::string suggestion = ClosestMatch(it.key(), PropertyNames(*props_it));
      if (strict) {
        d.severity = Severity::kError;
        d.message = "unknown key \"" + it.key() + "\" in " + DescribeSection(pointer) +
                    ": DeepSpeed validates this section strictly and refuses to start "
                    "(pydantic: extra inputs are not permitted)";
      } else {
        d.severity = Severity::kWarning;
        d.message = "unknown key \"" + it.key() + "\" in " + DescribeSection(pointer) +
                    ": DeepSpeed silently ignores it, so a typo here changes nothing";
      }
      d.hint = suggestion.empty() ? "remove the key, or check the DeepSpeed config documentation"
                                  : "did you mean \"" + suggestion + "\"?";
      out->push_back(std::move(d));
      continue;
    }
    const Json* resolved = Resolve(root_schema, child_schema);
    if (resolved != nullptr && resolved->value("deprecated", false)) {
      Diagnostic d;
      d.rule_id = "deprecated-key";
      d.severity = Severity::kWarning;
      d.pointer = child;
      d.loc = doc.LocateKey(child);
      d.message = "\"" + it.key() + "\" is deprecated";
      std::string replacement = resolved->value("x-ds-replacement", "");
      d.hint = replacement.empty() ? "remove it" : "use " + replacement + " instead";
      out->push_back(std::move(d));
    }
    WalkKeys(doc, root_schema, it.value(), child_schema, child, out);
  }
}

}  // namespace

const Json& DeepSpeedConfigSchema() { return Compiled().raw; }

Json StripAutoValues(const Json& root) {
  if (root.is_object()) {
    Json out = Json::object();
    for (auto it = root.begin(); it != root.end(); ++it) {
      if (it->is_string() && it->get_ref<const std::string&>() == "auto") continue;
      out[it.key()] = StripAutoValues(*it);
    }
    return out;
  }
  if (root.is_array()) {
    Json out = Json::array();
    for (const auto& v : root) out.push_back(StripAutoValues(v));
    return out;
  }
  return root;
}

namespace {

// Whether AutoEP may be on: `enabled` true, or a value pydantic's lax bool could read as true
// (its default is false: absent, false, 0 and "false"/"no"/"off"/"0" are off).
bool ExpertParallelEnabled(const Json& root) {
  if (!root.is_object() || !root.contains("expert_parallel") || !root["expert_parallel"].is_object()) return false;
  const Json& section = root["expert_parallel"];
  if (!section.contains("enabled")) return false;
  const Json& e = section["enabled"];
  if (e.is_boolean()) return e.get<bool>();
  if (e.is_number()) return e.get<double>() != 0;
  if (e.is_string()) {
    const std::string v = e.get<std::string>();
    return v != "false" && v != "no" && v != "off" && v != "0" && v != "f" && v != "n";
  }
  return true;  // anything else: let the errors stand
}

}  // namespace

namespace {

// A boolean field given a string that reads as false ("false", "no", "off", "0", any case), which
// Python's truthiness takes as true.
bool SaysFalseButIsTrue(const Json& node, const Json& value) {
  if (!value.is_string() || node.value("type", Json()) != Json("boolean")) return false;
  std::string text = value.get<std::string>();
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* no : {"false", "no", "off", "0", "f", "n"}) {
    if (text == no) return true;
  }
  return false;
}

}  // namespace

void CheckSchema(const JsonDocument& doc, std::vector<Diagnostic>* out) {
  const CompiledSchema& compiled = Compiled();
  Json target = StripAutoValues(doc.root);
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(target);
  validator.validate(compiled.schema, adapter, &results);

  std::set<std::pair<std::string, std::string>> seen;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    if (IsWrapperMessage(error.description)) continue;
    std::string pointer = ContextToPointer(error.context);
    std::string rule = ClassifySchemaError(error.description);
    // One finding per value and kind: anyOf branches repeat the same complaint.
    if (!seen.insert({pointer, rule}).second) continue;
    Diagnostic d;
    d.rule_id = rule;
    d.severity = Severity::kError;
    d.pointer = pointer;
    d.loc = doc.LocateValue(pointer);
    const Json* value = nullptr;
    if (Json::json_pointer jp(pointer); doc.root.contains(jp)) value = &doc.root.at(jp);
    const Json* node = SchemaAt(compiled.raw, pointer);
    std::string name = pointer.empty() ? std::string("the config") : DottedPointer(pointer);
    std::string shown = value != nullptr ? ShowJson(*value) : std::string("this value");
    std::string expected = node != nullptr ? Expectation(*node) : std::string();
    if (rule == "schema-invalid" && node != nullptr && node->contains("pattern")) {
      d.message = name + " is " + shown + ", which does not match the accepted form " +
                  (*node)["pattern"].get<std::string>();
    } else if (rule == "schema-invalid" && node != nullptr &&
               (node->contains("minLength") || node->contains("minItems"))) {
      d.message = name + " is " + shown + ": it must not be empty";
    } else if (!expected.empty() && rule != "schema-invalid") {
      d.message = name + " is " + shown + ", but DeepSpeed expects " + expected;
    } else {
      d.message = name + " is " + shown + ": " + error.description;
    }
    std::optional<Json> coerced = value != nullptr && node != nullptr
                                      ? PydanticLaxCoerce(compiled.raw, pointer, *node, *value)
                                      : std::nullopt;
    if (coerced && !CoercedFits(*node, *coerced)) coerced.reset();
    // The type finding (a warning below) already says it: pydantic's coercion lands on a member.
    if (coerced && rule == "schema-enum") continue;
    // 5e8 or 1e10 for an int field: the usual way to write a large count, and pydantic takes it.
    if (coerced && rule == "schema-type" && value->is_number_float()) continue;
    if (rule == "schema-type" && coerced) {
      // pydantic's lax mode (DeepSpeed's sections) coerces it, so DeepSpeed starts; other readers
      // of the same file (the Trainer's "auto" filling, this schema in an editor) do not.
      d.severity = Severity::kWarning;
      d.message = name + " is " + shown + ": DeepSpeed's pydantic coerces it to " + expected +
                  ", but it is not one; write it as " + expected;
    }
    if (node != nullptr && node->contains("enum") && value != nullptr && value->is_string()) {
      std::vector<std::string> choices;
      for (const auto& e : (*node)["enum"]) {
        if (e.is_string()) choices.push_back(e.get<std::string>());
      }
      std::string guess = ClosestMatch(value->get<std::string>(), choices);
      if (!guess.empty()) d.hint = "did you mean \"" + guess + "\"?";
    }
    if (d.hint.empty() && node != nullptr && node->contains("description")) {
      d.hint = node->value("description", "");
      if (node->contains("default")) d.hint += " Default: " + (*node)["default"].dump() + ".";
    }
    // A value DeepSpeed reads without checking (x-ds-unvalidated says what it does with it): it
    // starts, so a warning, unless a boolean is written as a string that says the opposite of its
    // Python truthiness ("false" is true).
    if (d.severity == Severity::kError && node != nullptr && value != nullptr && node->contains("x-ds-unvalidated")) {
      const std::string how = node->value("x-ds-unvalidated", "");
      if (SaysFalseButIsTrue(*node, *value)) {
        d.message = name + " is the string " + shown + ": DeepSpeed does not check it (" + how +
                    "), and a non-empty string is true, the opposite of what it says";
        d.hint = "write false";
      } else {
        d.severity = Severity::kWarning;
        d.message = name + " is " + shown + (expected.empty() ? std::string() : ", not " + expected) +
                    ": DeepSpeed does not check it (" + how + ")";
      }
    }
    // AutoEP's settings are read only when it is enabled (runtime/config.py reads the section's
    // fields after its `enabled` check): with it off, a value DeepSpeed would reject is ignored.
    if (d.severity == Severity::kError && pointer.starts_with("/expert_parallel/") &&
        pointer != "/expert_parallel/enabled" && !ExpertParallelEnabled(doc.root)) {
      d.severity = Severity::kWarning;
      d.message += " (ignored while expert_parallel.enabled is not true: DeepSpeed reads the section only when "
                   "AutoEP is on, and would reject it then)";
    }
    out->push_back(std::move(d));
  }
}

bool HasDeepSpeedKeys(const Json& json) {
  if (!json.is_object()) return false;
  const Json& properties = Compiled().raw["properties"];
  for (const auto& [key, value] : json.items()) {
    if (properties.contains(key)) return true;
  }
  return false;
}

Json PydanticLaxView(const Json& config) {
  Json out = config;
  if (!out.is_object()) return out;
  for (auto& [key, value] : out.items()) {
    // DeepSpeed checks the fp16 section's raw values before its model sees them
    // (runtime/precision_config.py: "fp16.loss_scale must be a number, not bool"), so no
    // coercion there: the precision rules judge the value as written.
    if (key == "fp16") continue;
    CoerceInPlace(Compiled().raw, value, PointerJoin("", key));
  }
  return out;
}

void CheckKeys(const JsonDocument& doc, std::vector<Diagnostic>* out) {
  const Json& schema = DeepSpeedConfigSchema();
  WalkKeys(doc, schema, doc.root, &schema, "", out);
}

}  // namespace dsp
