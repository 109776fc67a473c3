// Placeholder while this rule family is being written.
#include "core/rules/rule_sets.h"

namespace dsp {

RuleSet SequenceParallelRules() { return RuleSet{"sequence_parallel", {}, nullptr}; }

}  // namespace dsp
