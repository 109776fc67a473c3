// SPDX-License-Identifier: Apache-2.0
// Python `re` patterns evaluated with PCRE2. DeepSpeed matches AutoTP layer_specs patterns and
// AutoEP's moe_layer_pattern with re.match. PCRE2 already speaks most of Python's dialect
// ((?P<name>...), (?P=name), lookbehind, inline flags, conditionals); python_regex_dialect.cc
// rewrites the few spellings whose meaning differs (\Z, \v, \x/\u/\U, octal escapes, {,n}) and
// rejects, with re's own wording, what PCRE2 would accept but Python raises re.error for.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace dsp {

struct PythonRegexCode;  // the compiled PCRE2 pattern (python_regex.cc)

struct PythonRegex {
  std::string source;  // the Python pattern as written
  // Set when Python's re would raise re.error for the pattern ("bad escape \q at position 3").
  std::string error;
  // Set when Python accepts the pattern but ds-plan cannot evaluate it as Python would (a named
  // character \N{...}, a scoped (?a:...), a PCRE2 size limit Python does not have); names it.
  std::string unsupported;
  // Set when only Python 3.11 and later accept the pattern (atomic groups, possessive
  // quantifiers): older Pythons raise re.error. The pattern is still usable.
  std::string python311;
  std::shared_ptr<const PythonRegexCode> compiled;  // null unless usable

  bool usable() const { return compiled != nullptr; }
  // re.match semantics: anchored at the start of `text`, not at its end.
  bool MatchPrefix(std::string_view text) const;
  // re.search semantics: a match starting anywhere in `text`.
  bool Search(std::string_view text) const;
};

// Checks and compiles once; never throws.
PythonRegex CompilePythonRegex(std::string_view pattern);

// Parameter names with every all-digit dot-separated component (layer and expert indices) replaced
// by zeros of the same length: "model.layers.17.mlp.experts.3.w2.weight" ->
// "model.layers.00.mlp.experts.0.w2.weight".
std::string CanonicalIndexName(std::string_view name);

// True when the pattern cannot tell apart two names with the same CanonicalIndexName, so a
// model's ~18k parameter names can be matched through a few hundred canonical ones. That holds
// when every digit the pattern contains is a literal right after an unescaped letter or '_'
// outside a character class ("w2", "fc1"): such a digit can only match inside a component that
// also has letters, never an index.
bool IsIndexBlind(std::string_view pattern);

}  // namespace dsp
