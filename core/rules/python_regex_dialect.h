// SPDX-License-Identifier: Apache-2.0
// Internal to python_regex.cc: a Python `re` pattern rewritten into PCRE2 syntax. Only the
// spellings whose meaning differs are rewritten; everything else is copied for PCRE2 to parse.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsp::pyre {

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
// The letters Python's `re` reads as inline flags after "(?" (sre_parse.py FLAGS).
inline bool IsFlag(char c) {
  return c != '\0' && std::string_view("aiLmsxtu").find(c) != std::string_view::npos;
}

// A lookbehind with top-level alternatives: Python requires one width for all of them, PCRE2 10.42
// accepts alternatives of different fixed widths, so python_regex.cc measures each.
struct Lookbehind {
  size_t source_at = 0;                             // where "(?<" is in the Python pattern
  bool verbose = false;                             // (?x) in effect there
  std::vector<std::pair<size_t, size_t>> branches;  // [begin, end) in Rewrite::pcre
};

struct Rewrite {
  std::string pcre;            // the pattern in PCRE2 syntax
  std::vector<size_t> origin;  // origin[k]: byte in the Python pattern that pcre[k] came from
  bool ascii = false;          // a leading (?a): \w, \d, \s and \b are ASCII-only
  std::vector<Lookbehind> lookbehinds;
  std::string error, unsupported, python311;  // as in PythonRegex
};

Rewrite RewritePythonPattern(std::string_view pattern);

// The two self-contained tokens, read as sre_parse reads them (python_regex_tokens.cc).

// One escape sequence, `at` at its backslash.
struct Escape {
  size_t end = 0;           // just past it
  std::string pcre;         // its PCRE2 spelling (a stand-in when unsupported)
  unsigned group = 0;       // a back-reference \N outside a class: the group, for the caller
  std::string error;        // the re.error Python raises, without its position
  size_t error_at = 0;      // that position, a byte offset
  std::string unsupported;  // what Python accepts that PCRE2 cannot express
};
Escape ReadEscape(std::string_view pattern, size_t at, bool in_class);

// Python's repr() of a str, as re.error quotes group names: 'a\\b', "it's".
std::string PyRepr(std::string_view s);

// "" for a valid group name (a Python identifier), else the re.error text.
std::string GroupNameError(std::string_view name);

// " at position N" with N counted in characters, as re.error reports it, for a byte offset.
std::string AtPosition(std::string_view pattern, size_t byte);

// Inline flags, `at` at the "(?": (?aiLmsux) or the opening of a scoped (?flags-flags:...).
struct Flags {
  size_t end = 0;        // just past its ')' or ':'
  bool global = false;   // (?flags): for the whole pattern
  std::string on, off;   // the flags PCRE2 shares (i, m, s, x), each once
  bool ascii = false;    // a: \w, \d, \s, \b ASCII-only
  bool unicode = false;  // u: the default for str patterns, dropped
  bool templ = false;    // t: the deprecated TEMPLATE flag
  std::string error;     // as in Escape
  size_t error_at = 0;
};
Flags ReadFlags(std::string_view pattern, size_t at);

}  // namespace dsp::pyre
