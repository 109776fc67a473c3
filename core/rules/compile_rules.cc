// Placeholder while this rule family is being written.
#include "core/rules/rule_sets.h"

namespace dsp {

RuleSet CompileRules() { return RuleSet{"compile", {}, nullptr}; }

}  // namespace dsp
