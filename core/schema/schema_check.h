// SPDX-License-Identifier: Apache-2.0
// Structure checks against schemas/ds_config.schema.json: types, enums and ranges through valijson
// (a maintained JSON Schema validator), then unknown and deprecated keys with "did you mean"
// suggestions, which JSON Schema cannot grade by severity.
#pragma once

#include <vector>

#include "core/diag/diagnostic.h"
#include "core/json/document.h"

namespace dsp {

// The parsed DeepSpeed config schema (built once; thread-safe after first use).
const Json& DeepSpeedConfigSchema();

// A copy of `root` without the Hugging Face placeholder "auto" values, which the schema would
// otherwise reject as wrong types (the rules report what they defer instead).
Json StripAutoValues(const Json& root);

// The config as DeepSpeed's pydantic sections read it: every value of a pydantic field that is not
// of the field's type but that pydantic v2's lax mode coerces (and that then passes the field's
// enum and bounds) replaced by the coerced value: "stage": "3" is ZeRO stage 3, "autotp_size": "2"
// is 2. CheckSchema warns about each; everything that plans from the config (the rules, groups,
// simulate, plan, explore) reads this view so it plans what DeepSpeed runs.
Json PydanticLaxView(const Json& config);

// Whether `json` is an object with at least one key DeepSpeed reads at the top level (the
// schema's properties): what `check` requires before it shows a changed config's keys and values,
// so a snapshot pointing at some other file never prints that file's contents.
bool HasDeepSpeedKeys(const Json& json);

// Type, enum and range errors (rule schema-type / schema-enum / schema-range / schema-invalid).
void CheckSchema(const JsonDocument& doc, std::vector<Diagnostic>* out);

// unknown-key (error in sections DeepSpeed validates strictly, warning where it silently ignores
// the key) and deprecated-key.
void CheckKeys(const JsonDocument& doc, std::vector<Diagnostic>* out);

}  // namespace dsp
