// Placeholder while this rule family is being written.
#include "core/rules/rule_sets.h"

namespace dsp {

RuleSet PrecisionRules() { return RuleSet{"precision", {}, nullptr}; }

}  // namespace dsp
