// SPDX-License-Identifier: Apache-2.0
// Rule registry: every diagnostic ds-plan can emit has one entry here, so `ds-plan rules`,
// `ds-plan explain` and docs/rules.md all come from the same table.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diag/diagnostic.h"

namespace dsp {

class RuleContext;

struct RuleInfo {
  std::string_view id;        // stable kebab-case id, e.g. "batch-mismatch"
  Severity severity;          // default severity
  std::string_view category;  // "json", "schema", "batch", "zero", ...
  std::string_view summary;   // one line for `ds-plan rules`
  std::string_view details;   // what DeepSpeed does and where, for `ds-plan explain`
  std::string_view history;   // how the behaviour changed across DeepSpeed releases ("" = unchanged)
};

// A group of related rules and the function that checks them.
struct RuleSet {
  std::string_view name;
  std::vector<RuleInfo> rules;
  std::function<void(RuleContext&)> check;  // null for rules emitted elsewhere (json, schema)
};

const std::vector<RuleSet>& AllRuleSets();
// Every rule, sorted by id.
std::vector<const RuleInfo*> AllRules();
const RuleInfo* FindRule(std::string_view id);

}  // namespace dsp
