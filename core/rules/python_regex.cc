// SPDX-License-Identifier: Apache-2.0
#include "core/rules/python_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <optional>

#include "core/rules/python_regex_dialect.h"

namespace dsp {
// Outside the anonymous namespace because PythonRegexCode (declared in python_regex.h) holds one.
namespace pyre {
struct CodeFree {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
using Code = std::unique_ptr<pcre2_code, CodeFree>;
}  // namespace pyre

namespace {

using pyre::Code;
struct ContextFree {
  void operator()(pcre2_compile_context* context) const { pcre2_compile_context_free(context); }
};
struct MatchDataFree {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
// Python str patterns: UTF-8 text, Unicode \w \d \s \b unless (?a), '.' and '$' around "\n"
// only. Not PCRE2_MATCH_INVALID_UTF: with JIT, 10.42 then misses non-ASCII \W and \D matches
// (PCRE2 issue #224); a subject that is not UTF-8 (no JSON string is) just never matches.
// ALT_CIRCUMFLEX: a (?m) ^ also matches after a final newline, as in Python.
uint32_t Options(bool ascii) {
  return PCRE2_UTF | PCRE2_NEVER_BACKSLASH_C | PCRE2_ALT_CIRCUMFLEX | (ascii ? 0 : PCRE2_UCP);
}

Code Compile(std::string_view pattern, uint32_t options, int* error, size_t* offset) {
  static const std::unique_ptr<pcre2_compile_context, ContextFree> context = [] {
    std::unique_ptr<pcre2_compile_context, ContextFree> c(pcre2_compile_context_create(nullptr));
    pcre2_set_newline(c.get(), PCRE2_NEWLINE_LF);  // not the build's default: Python's newline
    return c;
  }();
  PCRE2_SIZE at = 0;
  Code code(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                          error, &at, context.get()));
  *offset = at;
  return code;
}

std::string ErrorText(int error) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(error, buffer, sizeof buffer) < 0) return "PCRE2 error";
  return reinterpret_cast<const char*>(buffer);
}

// PCRE2 compile errors for sizes Python has no limit on (repeat counts above 65535, group names
// over 32 bytes, nesting deeper than 250...): Python accepts such patterns.
bool IsPcreLimit(int error) {
  switch (error) {
    case PCRE2_ERROR_QUANTIFIER_TOO_BIG:
    case PCRE2_ERROR_SUBPATTERN_NAME_TOO_LONG:
    case PCRE2_ERROR_PARENTHESES_NEST_TOO_DEEP:
    case PCRE2_ERROR_PATTERN_TOO_LARGE:
    case PCRE2_ERROR_PATTERN_TOO_COMPLICATED:
    case PCRE2_ERROR_HEAP_FAILED:
    case PCRE2_ERROR_LOOKBEHIND_TOO_COMPLICATED:
    case PCRE2_ERROR_LOOKBEHIND_TOO_LONG:
    case PCRE2_ERROR_TOO_MANY_NAMED_SUBPATTERNS:
    case PCRE2_ERROR_TOO_MANY_CAPTURES:
      return true;
    default:
      return false;
  }
}

// Python wants every alternative of a lookbehind to have the same width; PCRE2 10.42 only that
// each has a fixed one. Each alternative is compiled on its own for its (exact) minimum length.
// An alternative that does not compile alone (a reference to an outer group) is not judged.
bool LookbehindWidthsDiffer(const pyre::Rewrite& rw, const pyre::Lookbehind& lb) {
  std::optional<uint32_t> width;
  for (auto [begin, end] : lb.branches) {
    int error = 0;
    size_t offset = 0;
    Code branch = Compile(std::string_view(rw.pcre).substr(begin, end - begin),
                          Options(rw.ascii) | (lb.verbose ? PCRE2_EXTENDED : 0), &error, &offset);
    uint32_t length = 0;
    if (!branch || pcre2_pattern_info(branch.get(), PCRE2_INFO_MINLENGTH, &length) != 0) {
      return false;
    }
    if (width && *width != length) return true;
    width = length;
  }
  return false;
}

// One match-data block per thread, reused: ovector room for the whole match is all re.match
// needs (back-references work without capture slots).
bool MatchAt(const pcre2_code* code, std::string_view text, size_t start) {
  thread_local const std::unique_ptr<pcre2_match_data, MatchDataFree> data(
      pcre2_match_data_create(1, nullptr));
  static const char kEmpty[] = "";
  const char* subject = text.data() != nullptr ? text.data() : kEmpty;
  // A match-limit error (catastrophic backtracking; Python would just run on) or a subject that
  // is not UTF-8 reads as no match.
  return pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject), text.size(), start, 0, data.get(),
                     nullptr) >= 0;
}

}  // namespace

struct PythonRegexCode {
  pyre::Code code;  // compiled with PCRE2_ANCHORED: re.match from the start offset
};

bool PythonRegex::MatchPrefix(std::string_view text) const {
  return compiled != nullptr && MatchAt(compiled->code.get(), text, 0);
}

bool PythonRegex::Search(std::string_view text) const {
  if (compiled == nullptr) return false;
  // An anchored match at every character start is re.search: lookbehinds still see the text
  // before the start offset, and \A / ^ only match at offset 0.
  for (size_t start = 0; start <= text.size(); ++start) {
    if (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xc0) == 0x80) continue;
    if (MatchAt(compiled->code.get(), text, start)) return true;
  }
  return false;
}

PythonRegex CompilePythonRegex(std::string_view pattern) {
  PythonRegex out;
  out.source = std::string(pattern);
  const pyre::Rewrite rw = pyre::RewritePythonPattern(pattern);
  if (!rw.error.empty()) {
    out.error = rw.error;
    return out;
  }
  int error = 0;
  size_t offset = 0;
  Code code = Compile(rw.pcre, Options(rw.ascii) | PCRE2_ANCHORED, &error, &offset);
  if (!code) {
    if (IsPcreLimit(error)) {
      out.unsupported = "a size PCRE2 cannot handle (" + ErrorText(error) + ")";
    } else {
      out.error = ErrorText(error) +
                  pyre::AtPosition(pattern, rw.origin[std::min(offset, rw.origin.size() - 1)]);
    }
    return out;
  }
  for (const auto& lb : rw.lookbehinds) {
    if (LookbehindWidthsDiffer(rw, lb)) {
      out.error = "look-behind requires fixed-width pattern (its alternatives differ in width)" +
                  pyre::AtPosition(pattern, lb.source_at);
      return out;
    }
  }
  if (!rw.unsupported.empty()) {
    out.unsupported = rw.unsupported;
    return out;
  }
  out.python311 = rw.python311;
  pcre2_jit_compile(code.get(), PCRE2_JIT_COMPLETE);  // when JIT is unavailable, interpreted
  auto compiled = std::make_shared<PythonRegexCode>();
  compiled->code = std::move(code);
  out.compiled = std::move(compiled);
  return out;
}

std::string CanonicalIndexName(std::string_view name) {
  std::string out(name);
  size_t start = 0;
  while (start <= out.size()) {
    size_t end = out.find('.', start);
    if (end == std::string::npos) end = out.size();
    bool digits = end > start;
    for (size_t i = start; i < end && digits; ++i) digits = out[i] >= '0' && out[i] <= '9';
    if (digits)
      std::fill(out.begin() + static_cast<std::ptrdiff_t>(start),
                out.begin() + static_cast<std::ptrdiff_t>(end), '0');
    start = end + 1;
  }
  return out;
}

bool IsIndexBlind(std::string_view p) {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  auto is_letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  bool in_class = false;
  bool prev_plain_letter = false;  // the previous pattern character is an unescaped letter or '_'
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (p.substr(i).starts_with("(?P=")) return false;  // a named back-reference: "(\d)\.\1"
    if (c == '\\') {
      if (i + 1 < p.size() && (is_digit(p[i + 1]) ||
                               std::string_view("xuUN").find(p[i + 1]) != std::string_view::npos)) {
        return false;  // an escape that names a character code or a group: may match a digit
      }
      ++i;
      prev_plain_letter = false;
      continue;
    }
    if (is_digit(c) && (in_class || !prev_plain_letter)) return false;
    if (c == '[') in_class = true;
    if (c == ']') in_class = false;
    prev_plain_letter =
        !in_class && (is_letter(c) || c == '_' || (is_digit(c) && prev_plain_letter));
  }
  return true;
}

}  // namespace dsp
