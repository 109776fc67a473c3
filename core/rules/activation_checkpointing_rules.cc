// Placeholder while this rule family is being written.
#include "core/rules/rule_sets.h"

namespace dsp {

RuleSet CheckpointingRules() { return RuleSet{"activation_checkpointing", {}, nullptr}; }

}  // namespace dsp
