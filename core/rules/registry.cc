// SPDX-License-Identifier: Apache-2.0
#include <algorithm>

#include "core/rules/rule.h"
#include "core/rules/rule_sets.h"

namespace dsp {

const std::vector<RuleSet>& AllRuleSets() {
  static const std::vector<RuleSet> sets = {
      JsonRules(),           BatchRules(),          ZeroRules(),           ZeroVariantRules(),
      PrecisionRules(),      PrecisionMixRules(),   DictSectionRules(),    GradientRules(),       OptimizerRules(),      SchedulerRules(),      CompileRules(),
      TensorParallelRules(), ExpertParallelRules(), SequenceParallelRules(),
      CheckpointingRules(),  EnvironmentRules(),    ConsumerRules(),
  };
  return sets;
}

std::vector<const RuleInfo*> AllRules() {
  std::vector<const RuleInfo*> out;
  for (const auto& set : AllRuleSets()) {
    for (const auto& r : set.rules) out.push_back(&r);
  }
  std::sort(out.begin(), out.end(),
            [](const RuleInfo* a, const RuleInfo* b) { return a->id < b->id; });
  return out;
}

const RuleInfo* FindRule(std::string_view id) {
  for (const auto& set : AllRuleSets()) {
    for (const auto& r : set.rules) {
      if (r.id == id) return &r;
    }
  }
  return nullptr;
}

}  // namespace dsp
