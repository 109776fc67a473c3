// SPDX-License-Identifier: Apache-2.0
#include "core/schema/schema_check.h"

#include <algorithm>
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

// Values pydantic's lax mode converts: 0/1 and "true"/"false"/"yes"/"no"/"on"/"off"/"1"/"0" for
// booleans, integral floats and digit strings for integers. Only in the sections DeepSpeed parses
// with pydantic (additionalProperties: false in the schema); dict-parsed sections use the raw value.
bool PydanticLaxAccepts(const Json& root, const std::string& pointer, const Json& node, const Json& v) {
  const Json* parent = SchemaAt(root, PointerParent(pointer));
  if (parent == nullptr || !parent->contains("additionalProperties") ||
      (*parent)["additionalProperties"] != false) {
    return false;
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
    if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) return true;
    if (v.is_string()) {
      std::string s = v.get<std::string>();
      for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (const char* ok : {"true", "false", "yes", "no", "on", "off", "1", "0", "t", "f", "y", "n"}) {
        if (s == ok) return true;
      }
    }
  }
  if (wants("integer") || wants("number")) {
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) return true;
    }
    if (wants("integer") && v.is_number_float()) {
      double d = v.get<double>();
      if (d == static_cast<double>(static_cast<int64_t>(d))) return true;
    }
  }
  return false;
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
    if (rule == "schema-type" && value != nullptr && node != nullptr &&
        PydanticLaxAccepts(compiled.raw, pointer, *node, *value)) {
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
    out->push_back(std::move(d));
  }
}

void CheckKeys(const JsonDocument& doc, std::vector<Diagnostic>* out) {
  const Json& schema = DeepSpeedConfigSchema();
  WalkKeys(doc, schema, doc.root, &schema, "", out);
}

}  // namespace dsp
