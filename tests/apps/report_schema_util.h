// SPDX-License-Identifier: Apache-2.0
// Checks a report ds-plan printed against one of its embedded JSON Schemas (valijson).
#pragma once

#include <string>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "core/json/document.h"
#include "core/schema/embedded.h"

namespace dsp::testing {

// "" when `doc` matches the schema, else one line per violation.
inline std::string SchemaErrors(const char* schema_text, const Json& doc) {
  Json schema_json = Json::parse(schema_text);
  valijson::Schema schema;
  valijson::SchemaParser parser;
  valijson::adapters::NlohmannJsonAdapter schema_adapter(schema_json);
  parser.populateSchema(schema_adapter, schema);
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(doc);
  validator.validate(schema, target, &results);
  std::string out;
  valijson::ValidationResults::Error e;
  while (results.popError(e)) {
    for (const auto& c : e.context) out += c;
    out += ": " + e.description + "\n";
  }
  return out;
}

}  // namespace dsp::testing
