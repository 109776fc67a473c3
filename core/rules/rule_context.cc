// SPDX-License-Identifier: Apache-2.0
#include "core/rules/rule_context.h"

#include <cstdio>
#include <cstdlib>

#include "core/rules/rule.h"
#include "core/util/text.h"

namespace dsp {

std::string DottedName(const std::string& pointer) {
  std::string out;
  for (const auto& t : PointerTokens(pointer)) {
    if (!out.empty()) out += '.';
    out += t;
  }
  return out;
}

void RuleContext::ReportAs(Severity severity, std::string_view rule_id, const std::string& pointer,
                           std::string message, std::string hint) {
  Diagnostic d;
  d.rule_id = std::string(rule_id);
  d.severity = severity;
  d.pointer = pointer;
  d.loc = doc_.LocateValue(pointer);
  d.message = std::move(message);
  d.hint = std::move(hint);
  diags_.push_back(std::move(d));
}

void RuleContext::Report(std::string_view rule_id, const std::string& pointer, std::string message,
                         std::string hint) {
  const RuleInfo* info = FindRule(rule_id);
  if (info == nullptr) {
    std::fprintf(stderr, "internal error: rule '%.*s' is not registered\n",
                 static_cast<int>(rule_id.size()), rule_id.data());
    std::abort();
  }
  ReportAs(info->severity, rule_id, pointer, std::move(message), std::move(hint));
}

void RuleContext::ReportIf(Condition condition, std::string_view rule_id, const std::string& pointer,
                           std::string message, std::string hint) {
  std::optional<bool> holds = Holds(condition, options_.consumer);
  if (holds == false) return;
  if (holds == true) {
    Report(rule_id, pointer, std::move(message), std::move(hint));
    return;
  }
  Report(rule_id, pointer, std::move(message) + "; raised only " +
                               std::string(ConditionText(condition)) +
                               ": pass --consumer to check it for your launcher",
         std::move(hint));
  Diagnostic& d = diags_.back();
  if (d.severity == Severity::kError) d.severity = Severity::kWarning;
}

void RuleContext::ReportKey(std::string_view rule_id, const std::string& pointer,
                            std::string message, std::string hint) {
  Report(rule_id, pointer, std::move(message), std::move(hint));
  diags_.back().loc = doc_.LocateKey(pointer);
}

}  // namespace dsp
