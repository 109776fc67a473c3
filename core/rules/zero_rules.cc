// Placeholder while this rule family is being written.
#include "core/rules/rule_sets.h"

namespace dsp {

RuleSet ZeroRules() { return RuleSet{"zero", {}, nullptr}; }

}  // namespace dsp
