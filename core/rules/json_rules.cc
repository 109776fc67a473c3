// SPDX-License-Identifier: Apache-2.0
// Findings of the parser (core/json) and the structure check (core/schema). They are registered
// here so `ds-plan rules` and `explain` cover them; nothing is checked in this file.
#include "core/rules/rule_sets.h"

namespace dsp {

RuleSet JsonRules() {
  RuleSet set;
  set.name = "json";
  set.rules = {
      {"json-syntax", Severity::kError, "json", "the file is not valid JSON",
       "The file could not be parsed, even with everything DeepSpeed's loader accepts: "
       "DeepSpeedConfig.__init__ (deepspeed/runtime/config.py, 0.19.6) reads a config path with "
       "hjson.load, and ds-plan follows hjson-py 3.1's decoder (comments, trailing commas, "
       "quoteless keys and values, optional commas, ''' strings, no root braces). The position "
       "is where the parser stopped. Empty files, truncated files, invalid UTF-8, a missing ':' "
       "and numbers too large for a double (hjson raises OverflowError) all end here.",
       ""},
      {"json-comment", Severity::kWarning, "json", "comments: DeepSpeed accepts them, strict loaders do not",
       "DeepSpeed loads config files with hjson, so #, // and /* */ comments work when DeepSpeed reads "
       "the file itself. The Hugging Face Trainer (TrainingArguments.deepspeed), Accelerate and "
       "json.load read the same file with strict JSON and fail. One warning per file, at the "
       "first comment.",
       ""},
      {"json-hjson-syntax", Severity::kWarning, "json",
       "Hjson-only syntax: DeepSpeed accepts it, strict loaders do not",
       "hjson.load, DeepSpeed's loader, also accepts unquoted keys, unquoted values (a value "
       "that is not exactly null, true, false or a number is a string that runs to the end of "
       "the line, so `\"stage\": ${ZERO_STAGE},` reads as the string \"${ZERO_STAGE},\"), members "
       "separated by line breaks instead of commas, ''' multi-line strings and a config without "
       "its outer braces (hjson/decoder.py: scanKeyName, scantfnns, JSONObject, raw_decode). "
       "json.load, the Hugging Face Trainer and Accelerate fail on the file. One warning per "
       "file, at the first use, naming each kind. hjson also reads a number written with a "
       "fraction or exponent as an integer when it is whole and below 1e10 (2.0 -> 2, 1e3 -> "
       "1000); json.load keeps a float.",
       ""},
      {"json-trailing-comma", Severity::kWarning, "json",
       "trailing commas: DeepSpeed accepts them, strict loaders do not",
       "A comma before a closing } or ]. Accepted by DeepSpeed's loader, rejected by strict JSON "
       "loaders (Hugging Face Trainer, Accelerate, json.load). One warning per file.",
       ""},
      {"json-duplicate-key", Severity::kError, "json", "a key appears twice in one object",
       "DeepSpeed loads config files with a hook that raises on duplicate keys "
       "(dict_raise_error_on_duplicate_keys). Other loaders keep the last value silently, which "
       "is how a stale setting survives an edit.",
       ""},
      {"json-too-deep", Severity::kError, "json", "nesting deeper than any real config",
       "ds-plan refuses documents nested more than 256 levels deep instead of risking a stack "
       "overflow; a DeepSpeed config is a few levels deep.",
       ""},
      {"schema-type", Severity::kError, "schema", "a value has the wrong JSON type",
       "Checked against schemas/ds_config.schema.json (JSON Schema draft 7) with valijson. In the "
       "sections DeepSpeed validates with pydantic, a wrong type stops DeepSpeed at start-up; in "
       "dict-parsed sections it fails later or is misread.",
       ""},
      {"schema-enum", Severity::kError, "schema", "a value is not one of the accepted choices",
       "The schema lists the accepted strings (offload devices, gradient_allreduce_op, compile "
       "passes, AutoEP presets...).",
       ""},
      {"schema-range", Severity::kError, "schema", "a number is outside its accepted range",
       "Minimums and maximums from DeepSpeed's pydantic fields (bucket sizes >= 0, offload ratio "
       "in [0, 1], ...).",
       ""},
      {"schema-invalid", Severity::kError, "schema", "a value does not match the schema",
       "Any other JSON Schema violation reported by the validator.", ""},
      {"unknown-key", Severity::kError, "schema", "a key DeepSpeed does not know",
       "Inside the sections DeepSpeed validates with pydantic (zero_optimization, bf16, fp16, "
       "compile, tensor_parallel, monitors, ...) an unknown key is an error: DeepSpeed refuses to "
       "start. At the top level and in dict-parsed sections (expert_parallel, torch_autocast, "
       "activation_checkpointing, optimizer, scheduler, ...) DeepSpeed silently ignores it, so a "
       "typo silently does nothing: reported as a warning. Both come with a 'did you mean' "
       "suggestion. Keys starting with '_' are treated as comments.",
       ""},
      {"deprecated-key", Severity::kWarning, "schema", "a deprecated key",
       "DeepSpeed still reads it (moving the value to its replacement, with a log warning), but "
       "it will go away. Giving both the deprecated key and its replacement is an error "
       "(zero-deprecated-and-new).",
       ""},
  };
  return set;
}

}  // namespace dsp
