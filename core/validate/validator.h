// SPDX-License-Identifier: Apache-2.0
// validate: parse (leniently, with locations) -> apply --set -> schema and keys -> rules.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/diag/diagnostic.h"
#include "core/json/document.h"
#include "core/rules/rule_context.h"
#include "core/util/result.h"
#include "core/validate/layout_summary.h"

namespace dsp {

// One --set KEY=VALUE. KEY is a JSON pointer ("/zero_optimization/stage") or a dotted key
// ("zero_optimization.stage"); VALUE is JSON, or a bare string when it does not parse as JSON.
struct Override {
  std::string pointer;
  Json value;
};
Result<Override> ParseOverride(const std::string& text);
// The JSON pointer of an override's KEY: a pointer as is, a dotted key joined component by component.
Result<std::string> OverridePointer(const std::string& key);

// Sets the value at the override's pointer, creating objects on the way; a value in the way that is
// not an object (the legacy `"zero_optimization": true`) is replaced by one, so
// zero_optimization.stage=2 means the section {"stage": 2}. Every command applies --set this way.
void ApplyOverride(Json& root, const Override& o);

struct FileReport {
  std::string path;
  SourceText source;                    // for caret rendering
  std::vector<Diagnostic> diagnostics;  // sorted by position
  LayoutSummary layout;
  bool valid() const;                   // no errors
};

FileReport ValidateText(std::string path, std::string text, const ValidateOptions& options,
                        const std::vector<Override>& overrides = {});

// The verdict of ValidateText for a config built in memory (tune's candidates): the same schema,
// key and rule checks on the document itself, without printing and re-parsing it and without
// source locations. True when nothing is an error.
bool ConfigPassesValidation(const Json& config, const ValidateOptions& options);

}  // namespace dsp
