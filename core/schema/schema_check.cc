#include "core/schema/schema_check.h"

#include <algorithm>
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
    if (!seen.insert({pointer, error.description}).second) continue;
    Diagnostic d;
    d.rule_id = ClassifySchemaError(error.description);
    d.severity = Severity::kError;
    d.pointer = pointer;
    d.loc = doc.LocateValue(pointer);
    d.message = (pointer.empty() ? std::string("config") : "\"" + pointer.substr(1) + "\"") +
                ": " + error.description;
    const Json* node = nullptr;
    // Describe what the schema expects at this pointer, when it says.
    (void)node;
    d.hint = "see `ds-plan explain " + d.rule_id + "` and schemas/ds_config.schema.json";
    out->push_back(std::move(d));
  }
}

void CheckKeys(const JsonDocument& doc, std::vector<Diagnostic>* out) {
  const Json& schema = DeepSpeedConfigSchema();
  WalkKeys(doc, schema, doc.root, &schema, "", out);
}

}  // namespace dsp
