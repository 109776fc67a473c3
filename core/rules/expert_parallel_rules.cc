// Placeholder while this rule family is being written.
#include "core/rules/rule_sets.h"

namespace dsp {

RuleSet ExpertParallelRules() { return RuleSet{"expert_parallel", {}, nullptr}; }

}  // namespace dsp
