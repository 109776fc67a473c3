// Placeholder while this rule family is being written.
#include "core/rules/rule_sets.h"

namespace dsp {

RuleSet TensorParallelRules() { return RuleSet{"tensor_parallel", {}, nullptr}; }

}  // namespace dsp
