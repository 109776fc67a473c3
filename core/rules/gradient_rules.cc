// Placeholder while this rule family is being written.
#include "core/rules/rule_sets.h"

namespace dsp {

RuleSet GradientRules() { return RuleSet{"gradient", {}, nullptr}; }

}  // namespace dsp
