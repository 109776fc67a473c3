// SPDX-License-Identifier: Apache-2.0
// One function per rules file; registry.cc lists them in the order they run.
#pragma once

#include "core/rules/rule.h"

namespace dsp {

RuleSet JsonRules();               // json_rules.cc: parser and schema findings (emitted elsewhere)
RuleSet BatchRules();              // batch_rules.cc
RuleSet ZeroRules();               // zero_rules.cc
RuleSet ZeroVariantRules();        // zero_variant_rules.cc (ZenFlow, hpZ, MiCS)
RuleSet PrecisionRules();          // precision_rules.cc (fp16/bf16, torch_autocast, comm dtypes)
RuleSet PrecisionMixRules();       // precision_mix_rules.cc (grad_accum_dtype per ZeRO stage)
RuleSet DictSectionRules();        // dict_section_rules.cc (amp, progressive_layer_drop, curriculum_learning)
RuleSet GradientRules();           // gradient_rules.cc
RuleSet OptimizerRules();          // optimizer_rules.cc (+ optimizer_catalog.cc)
RuleSet SchedulerRules();          // scheduler_rules.cc
RuleSet CompileRules();            // compile_rules.cc
RuleSet TensorParallelRules();     // tensor_parallel_rules.cc (+ layer_specs_rules.cc)
RuleSet ExpertParallelRules();     // expert_parallel_rules.cc (+ folding_rules.cc)
RuleSet SequenceParallelRules();   // sequence_parallel_rules.cc
RuleSet CheckpointingRules();      // activation_checkpointing_rules.cc
RuleSet EnvironmentRules();        // environment_rules.cc (--torch-version, --transformers-version)
RuleSet ConsumerRules();           // consumer_rules.cc (--consumer: "auto" filling, ignored sections)

}  // namespace dsp
