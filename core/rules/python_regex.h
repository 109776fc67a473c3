// Python `re` patterns evaluated with std::regex. DeepSpeed matches AutoTP layer_specs patterns
// with re.match; std::regex's ECMAScript grammar is close but not equal, so patterns are first
// rewritten: Python-only spellings that have an ECMAScript equivalent are translated
// ((?P<name>...),
// (?P=name), \A, \Z, a leading (?i), literal braces, identity escapes); constructs std::regex
// cannot express are reported as unsupported, and what Python itself rejects is reported as an
// error with re's own wording.
#pragma once

#include <memory>
#include <regex>
#include <string>
#include <string_view>

namespace dsp {

struct PythonRegex {
  std::string source;  // the Python pattern as written
  // Set when Python's re would raise re.error for the pattern ("bad escape \q at position 3").
  std::string error;
  // Set when Python accepts the pattern but std::regex cannot evaluate it (lookbehind, possessive
  // quantifiers, inline flags other than a leading (?i)); names the construct.
  std::string unsupported;
  std::string ecmascript;  // the translation; meaningful only when both of the above are empty
  bool icase = false;
  std::shared_ptr<const std::regex> compiled;  // null unless usable

  bool usable() const { return compiled != nullptr; }
  // re.match semantics: anchored at the start of `text`, not at its end.
  bool MatchPrefix(std::string_view text) const;
};

// Translates and compiles once; never throws.
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
