// SPDX-License-Identifier: Apache-2.0
// Escape sequences and inline flags of a Python `re` pattern, in PCRE2 spelling (see
// python_regex_dialect.h). Escapes follow sre_parse's _escape and _class_escape: where PCRE2
// reads the same spelling differently (\Z, \v, \x, octal, \1) the rewrite is explicit, and every
// letter escape Python does not know is its "bad escape" error, PCRE2's \k \K \p \Q \e \h \R
// included. Flags follow _parse_flags: PCRE2 shares i, m, s and x, and reads (?xx) differently.
#include <string>

#include "core/rules/python_regex_dialect.h"

namespace dsp::pyre {
namespace {

bool IsOctal(char c) { return c >= '0' && c <= '7'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A code point as \x{...}: one spelling PCRE2 reads the same inside and outside classes.
std::string Hex(unsigned long value) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), digits[value & 0xf]);
    value >>= 4;
  } while (value != 0);
  return "\\x{" + out + "}";
}

Escape Error(size_t end, std::string what, size_t at) {
  Escape e;
  e.end = end;
  e.error = std::move(what);
  e.error_at = at;
  return e;
}

Escape Spelled(size_t end, std::string pcre) {
  Escape e;
  e.end = end;
  e.pcre = std::move(pcre);
  return e;
}

// Python reads octal escapes up to \377.
Escape Octal(std::string_view p, size_t at, size_t end, unsigned value) {
  if (value > 0377) {
    return Error(
        end,
        "octal escape value " + std::string(p.substr(at, end - at)) + " outside of range 0-0o377",
        at);
  }
  return Spelled(end, Hex(value));
}

}  // namespace

Escape ReadEscape(std::string_view p, size_t at, bool in_class) {
  auto next = [&](size_t k) { return k < p.size() ? p[k] : '\0'; };
  if (at + 1 >= p.size()) return Error(p.size(), "bad escape (end of pattern)", at);
  const char c = p[at + 1];
  size_t i = at + 2;
  const std::string escape = std::string("\\") + c;
  // \b is a word boundary outside a class and a backspace inside, in both dialects.
  if (std::string_view("dDsSwWafnrtb").find(c) != std::string_view::npos) return Spelled(i, escape);
  if (!in_class && c == 'A') return Spelled(i, escape);
  // CPython before 3.14 never matches \B in an empty string; PCRE2 does.
  if (!in_class && c == 'B') return Spelled(i, "(?!\\A\\z)\\B");
  if (!in_class && c == 'Z') return Spelled(i, "\\z");  // PCRE2's \Z also matches before a "\n"
  if (c == 'v') return Spelled(i, "\\x{b}");            // PCRE2's \v is vertical whitespace
  if (c == 'x' || c == 'u' || c == 'U') {               // exactly 2, 4 or 8 hex digits
    const size_t want = c == 'x' ? 2 : c == 'u' ? 4 : 8;
    size_t n = 0;
    while (n < want && IsHex(next(i + n))) ++n;
    const std::string digits(p.substr(i, n));
    if (n < want) return Error(i + n, "incomplete escape " + escape + digits, at);
    const unsigned long value = std::stoul(digits, nullptr, 16);
    if (value > 0x10ffff) return Error(i + n, "bad escape " + escape + digits, at);
    Escape e = Spelled(i + n, Hex(value));
    if (value >= 0xd800 && value <= 0xdfff) {  // a Python str may hold one, UTF-8 cannot
      e.unsupported = "a surrogate code point " + escape + digits;
      e.pcre = "\\x{fffd}";
    }
    return e;
  }
  if (c == 'N') {  // \N{NAME}; PCRE2 has no Unicode name table (its \N is "not a newline")
    if (next(i) != '{') return Error(i, "missing {", i);
    size_t end = i + 1;  // sre_parse reads the name by tokens: "\}" does not end it
    while (end < p.size() && p[end] != '}') end += p[end] == '\\' ? 2 : 1;
    if (end == i + 1) return Error(end, "missing character name", end);
    if (end >= p.size()) return Error(p.size(), "missing }, unterminated name", i + 1);
    Escape e = Spelled(end + 1, "\\x{fffd}");
    e.unsupported = "a named character \\N{...}";
    return e;
  }
  if (c == '0' || (in_class && IsOctal(c))) {  // octal: up to three digits
    unsigned value = static_cast<unsigned>(c - '0');
    for (int n = 0; n < 2 && IsOctal(next(i)); ++n) value = value * 8 + (p[i++] - '0');
    return Octal(p, at, i, value);
  }
  if (IsDigit(c) && !in_class) {  // a group reference, unless three octal digits
    unsigned group = static_cast<unsigned>(c - '0');
    if (IsDigit(next(i))) {
      if (IsOctal(c) && IsOctal(next(i)) && IsOctal(next(i + 1))) {
        return Octal(p, at, i + 2, group * 64 + (p[i] - '0') * 8 + (p[i + 1] - '0'));
      }
      group = group * 10 + static_cast<unsigned>(p[i++] - '0');
    }
    Escape e = Spelled(i, "\\g{" + std::to_string(group) + "}");  // never read as octal
    e.group = group;
    return e;
  }
  if (IsDigit(c) || IsAsciiLetter(c)) return Error(i, "bad escape " + escape, at);
  // Any other character stands for itself. A non-ASCII one is copied bare (its UTF-8 tail
  // follows as plain bytes); ASCII punctuation keeps its backslash, which PCRE2 reads the same.
  if (static_cast<unsigned char>(c) >= 0x80) return Spelled(i, std::string(1, c));
  return Spelled(i, escape);
}

Flags ReadFlags(std::string_view p, size_t at) {
  auto next = [&](size_t k) { return k < p.size() ? p[k] : '\0'; };
  Flags f;
  auto fail = [&](std::string what, size_t where) {
    f.error = std::move(what);
    f.error_at = where;
    return f;
  };
  size_t j = at + 2;
  for (; IsFlag(next(j)); ++j) {
    const char c = p[j];
    if (c == 'L') return fail("bad inline flags: cannot use 'L' flag with a str pattern", j + 1);
    f.ascii = f.ascii || c == 'a';
    f.unicode = f.unicode || c == 'u';
    f.templ = f.templ || c == 't';
    if (f.ascii && f.unicode) {
      return fail("bad inline flags: flags 'a', 'u' and 'L' are incompatible", j + 1);
    }
    if (std::string_view("imsx").find(c) != std::string_view::npos &&
        f.on.find(c) == std::string::npos) {
      f.on += c;
    }
  }
  if (next(j) == '-') {
    ++j;
    if (!IsFlag(next(j))) return fail(IsAsciiLetter(next(j)) ? "unknown flag" : "missing flag", j);
    for (; IsFlag(next(j)); ++j) {
      const char c = p[j];
      if (c == 'a' || c == 'u' || c == 'L') {
        return fail("bad inline flags: cannot turn off flags 'a', 'u' and 'L'", j + 1);
      }
      if (c != 't' && f.off.find(c) == std::string::npos) f.off += c;
    }
    if (next(j) != ':') return fail(IsAsciiLetter(next(j)) ? "unknown flag" : "missing :", j);
  } else if (next(j) != ')' && next(j) != ':') {
    return fail(IsAsciiLetter(next(j)) ? "unknown flag" : "missing -, : or )", j);
  }
  for (char c : f.off) {
    if (f.on.find(c) != std::string::npos) {
      return fail("bad inline flags: flag turned on and off", j);
    }
  }
  f.global = next(j) == ')';
  f.end = j + 1;
  return f;
}

std::string AtPosition(std::string_view pattern, size_t byte) {
  size_t chars = 0, line = 1, line_start = 0;  // line_start: chars before the current line
  for (size_t k = 0; k < byte && k < pattern.size(); ++k) {
    if ((static_cast<unsigned char>(pattern[k]) & 0xc0) != 0x80) ++chars;
    if (pattern[k] == '\n') {
      ++line;
      line_start = chars;
    }
  }
  std::string out = " at position " + std::to_string(chars);
  if (pattern.find('\n') == std::string_view::npos)
    return out;  // re.error adds this for multi-line patterns
  return out + " (line " + std::to_string(line) + ", column " +
         std::to_string(chars - line_start + 1) + ")";
}

std::string PyRepr(std::string_view s) {
  const char quote =
      s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == '\\' || c == quote) {
      out += '\\';
      out += c;
    } else if (c == '\n' || c == '\t' || c == '\r') {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += std::string("\\x") + hex[(c >> 4) & 0xf] + hex[c & 0xf];
    } else {
      out += c;
    }
  }
  return out + quote;
}

std::string GroupNameError(std::string_view name) {
  if (name.empty()) return "missing group name";
  bool ok = !IsDigit(name[0]);
  for (char c : name) {  // non-ASCII letters are left to PCRE2, which accepts them as Python does
    ok =
        ok && (IsAsciiLetter(c) || IsDigit(c) || c == '_' || static_cast<unsigned char>(c) >= 0x80);
  }
  return ok ? "" : "bad character in group name " + PyRepr(name);
}

}  // namespace dsp::pyre
