#include "core/rules/python_regex.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <vector>

namespace dsp {
namespace {

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

std::string Hex2(unsigned value) {
  static const char* digits = "0123456789abcdef";
  std::string out = "\\x";
  out += digits[(value >> 4) & 0xf];
  out += digits[value & 0xf];
  return out;
}

class Translator {
 public:
  explicit Translator(std::string_view p) : p_(p) {}

  void Run(PythonRegex* out) {
    while (i_ < p_.size() && error_.empty() && unsupported_.empty()) {
      if (in_class_) {
        ClassChar();
      } else {
        Char();
      }
    }
    if (error_.empty() && unsupported_.empty() && in_class_) {
      Fail("unterminated character set", class_start_);
    }
    out->error = error_;
    out->unsupported = unsupported_;
    out->ecmascript = std::move(ecma_);
    out->icase = icase_;
  }

 private:
  void Fail(const std::string& what, size_t at) {
    if (error_.empty()) error_ = what + " at position " + std::to_string(at);
  }
  void Unsupported(const std::string& what) {
    if (unsupported_.empty()) unsupported_ = what;
  }
  char Peek(size_t ahead = 0) const { return i_ + ahead < p_.size() ? p_[i_ + ahead] : '\0'; }

  // An escape sequence; `in_class` changes what \b means and which punctuation needs escaping.
  void Escape(bool in_class) {
    size_t at = i_;
    ++i_;  // the backslash
    if (i_ >= p_.size()) return Fail("bad escape (end of pattern)", at);
    char c = p_[i_++];
    if (c == '0' || (in_class && IsDigit(c))) {
      // Octal: up to three digits (Python reads \0 plus two more, and any digits in a class).
      unsigned value = static_cast<unsigned>(c - '0');
      for (int n = 0; n < 2 && Peek() >= '0' && Peek() <= '7'; ++n)
        value = value * 8 + (p_[i_++] - '0');
      if (value > 0xff) return Fail("octal escape value outside of range 0-0o377", at);
      ecma_ += Hex2(value);
      return;
    }
    if (IsDigit(c)) {  // a group reference outside a class
      unsigned n = static_cast<unsigned>(c - '0');
      if (IsDigit(Peek())) n = n * 10 + static_cast<unsigned>(p_[i_++] - '0');
      if (n > open_groups_) return Fail("invalid group reference " + std::to_string(n), at + 1);
      if (!closed_.contains(n)) return Fail("cannot refer to an open group", at);
      ecma_ += "\\" + std::to_string(n);
      return;
    }
    if (!in_class && c == 'A') return void(ecma_ += "^");
    if (!in_class && c == 'Z') return void(ecma_ += "$");
    if (in_class && c == 'b') return void(ecma_ += "\\x08");
    if (c == 'a') return void(ecma_ += "\\x07");
    switch (c) {
      case 'd':
      case 'D':
      case 's':
      case 'S':
      case 'w':
      case 'W':
      case 'n':
      case 't':
      case 'r':
      case 'f':
      case 'v':
        ecma_ += '\\';
        ecma_ += c;
        return;
      case 'b':
      case 'B':
        ecma_ += '\\';
        ecma_ += c;
        return;
      case 'x':
        if (!IsHex(Peek()) || !IsHex(Peek(1))) return Fail("incomplete escape \\x", at);
        ecma_ += "\\x";
        ecma_ += p_.substr(i_, 2);
        i_ += 2;
        return;
      case 'u':
        for (size_t k = 0; k < 4; ++k) {
          if (!IsHex(Peek(k))) return Fail("incomplete escape \\u", at);
        }
        ecma_ += "\\u";
        ecma_ += p_.substr(i_, 4);
        i_ += 4;
        return;
      case 'U':
      case 'N':
        return Unsupported(std::string("the \\") + c + " escape");
      default:
        break;
    }
    if (IsAsciiLetter(c)) return Fail(std::string("bad escape \\") + c, at);
    // Python lets any other character be escaped to itself; ECMAScript only syntax characters.
    static const std::string kSyntax = in_class ? "]\\^-[" : "^$\\.*+?()[]{}|/";
    if (kSyntax.find(c) != std::string::npos) ecma_ += '\\';
    ecma_ += c;
  }

  // {m}, {m,}, {,n}, {,}, {m,n} starting at i_; anything else is a literal brace in Python.
  bool Quantifier() {
    size_t j = i_ + 1;
    std::string lo, hi;
    while (j < p_.size() && IsDigit(p_[j])) lo += p_[j++];
    bool comma = j < p_.size() && p_[j] == ',';
    if (comma) {
      ++j;
      while (j < p_.size() && IsDigit(p_[j])) hi += p_[j++];
    }
    if (j >= p_.size() || p_[j] != '}' || (lo.empty() && !comma)) return false;
    if (!lo.empty() && !hi.empty() && std::stoull(hi) < std::stoull(lo)) {
      Fail("min repeat greater than max repeat", i_ + 1);
      return true;
    }
    ecma_ += "{" + (lo.empty() ? std::string("0") : lo) + (comma ? "," + hi : "") + "}";
    i_ = j + 1;
    AfterQuantifier();
    return true;
  }

  void AfterQuantifier() {
    if (Peek() == '+') Unsupported("a possessive quantifier (Python 3.11+)");
    if (Peek() == '?') {
      ecma_ += '?';
      ++i_;
    }
  }

  void Group() {
    size_t at = i_;
    if (Peek(1) != '?') {
      stack_.push_back(++open_groups_);
      ecma_ += '(';
      ++i_;
      return;
    }
    char k = Peek(2);
    if (k == ':' || k == '=' || k == '!') {
      ecma_ += std::string("(?") + k;
      i_ += 3;
      stack_.push_back(0);
      return;
    }
    if (k == 'P' && Peek(3) == '<') {
      size_t end = p_.find('>', i_ + 4);
      if (end == std::string_view::npos) return Fail("missing >, unterminated name", at + 4);
      std::string name(p_.substr(i_ + 4, end - i_ - 4));
      if (name.empty() || IsDigit(name[0]))
        return Fail("bad character in group name '" + name + "'", at + 4);
      for (char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
          return Fail("bad character in group name '" + name + "'", at + 4);
        }
      }
      if (names_.contains(name)) return Fail("redefinition of group name '" + name + "'", at + 4);
      names_[name] = ++open_groups_;  // numbered in order of their opening parenthesis
      stack_.push_back(open_groups_);
      ecma_ += '(';
      i_ = end + 1;
      return;
    }
    if (k == 'P' && Peek(3) == '=') {
      size_t end = p_.find(')', i_ + 4);
      if (end == std::string_view::npos) return Fail("missing ), unterminated name", at + 4);
      std::string name(p_.substr(i_ + 4, end - i_ - 4));
      auto it = names_.find(name);
      if (it == names_.end()) return Fail("unknown group name '" + name + "'", at + 4);
      if (!closed_.contains(it->second)) return Fail("cannot refer to an open group", at);
      ecma_ += "(?:\\" + std::to_string(it->second) + ")";
      i_ = end + 1;
      return;
    }
    if (k == '<' && (Peek(3) == '=' || Peek(3) == '!'))
      return Unsupported("a lookbehind assertion (?<= / (?<!");
    if (k == '<') return Fail(std::string("unknown extension ?<") + Peek(3), at + 1);
    if (k == '#') {
      size_t end = p_.find(')', i_);
      if (end == std::string_view::npos) return Fail("missing ), unterminated comment", at);
      i_ = end + 1;
      return;
    }
    if (k == '>') return Unsupported("an atomic group (?>...) (Python 3.11+)");
    if (k == '(') return Unsupported("a conditional group (?(...)...)");
    // Inline flags: (?aiLmsux) at the very start, or scoped (?flags-flags:...).
    size_t j = i_ + 2;
    std::string flags;
    while (j < p_.size() && std::string_view("aiLmsux-").find(p_[j]) != std::string_view::npos)
      flags += p_[j++];
    if (flags.empty() || j >= p_.size())
      return Fail(std::string("unknown extension ?") + k, at + 1);
    if (p_[j] == ')') {
      if (at != 0) return Fail("global flags not at the start of the expression", at);
      for (char f : flags) {
        if (f == 'i') {
          icase_ = true;
        } else if (f != 'a' && f != 'u') {
          return Unsupported(std::string("the inline flag (?") + f + ")");
        }
      }
      i_ = j + 1;
      return;
    }
    if (p_[j] == ':') return Unsupported("scoped inline flags (?" + flags + ":...)");
    Fail(std::string("unknown extension ?") + k, at + 1);
  }

  void Char() {
    char c = p_[i_];
    switch (c) {
      case '\\':
        return Escape(false);
      case '[':
        ecma_ += '[';
        class_start_ = i_++;
        in_class_ = true;
        if (Peek() == '^') {
          ecma_ += '^';
          ++i_;
        }
        if (Peek() == ']') {  // a leading ] is a literal in Python
          ecma_ += "\\]";
          ++i_;
        }
        return;
      case '(':
        return Group();
      case ')':
        if (!stack_.empty()) {
          if (stack_.back() != 0) closed_.insert(stack_.back());
          stack_.pop_back();
        }
        ecma_ += ')';
        ++i_;
        return;
      case '{':
        if (!Quantifier()) {
          ecma_ += "\\{";
          ++i_;
        }
        return;
      case '}':
      case ']':
        ecma_ += '\\';
        ecma_ += c;
        ++i_;
        return;
      case '*':
      case '+':
      case '?':
        ecma_ += c;
        ++i_;
        return AfterQuantifier();
      default:
        ecma_ += c;
        ++i_;
        return;
    }
  }

  void ClassChar() {
    char c = p_[i_];
    if (c == '\\') return Escape(true);
    if (c == ']') {
      in_class_ = false;
    } else if (c == '[') {
      ecma_ += '\\';
    }
    ecma_ += c;
    ++i_;
  }

  std::string_view p_;
  size_t i_ = 0;
  std::string ecma_;
  std::string error_;
  std::string unsupported_;
  bool icase_ = false;
  bool in_class_ = false;
  size_t class_start_ = 0;
  unsigned open_groups_ = 0;     // capturing groups opened so far (the last number given)
  std::set<unsigned> closed_;    // capturing groups already closed (valid back-references)
  std::vector<unsigned> stack_;  // open parentheses: group number, 0 when not capturing
  std::map<std::string, unsigned> names_;
};

}  // namespace

bool PythonRegex::MatchPrefix(std::string_view text) const {
  if (!compiled) return false;
  return std::regex_search(text.begin(), text.end(), *compiled,
                           std::regex_constants::match_continuous);
}

PythonRegex CompilePythonRegex(std::string_view pattern) {
  PythonRegex out;
  out.source = std::string(pattern);
  Translator(pattern).Run(&out);
  if (!out.error.empty() || !out.unsupported.empty()) return out;
  auto flags = std::regex::ECMAScript | std::regex::optimize;
  if (out.icase) flags |= std::regex::icase;
  try {
    out.compiled = std::make_shared<const std::regex>(out.ecmascript, flags);
  } catch (const std::regex_error& e) {
    out.error = e.what();
  }
  return out;
}

std::string CanonicalIndexName(std::string_view name) {
  std::string out(name);
  size_t start = 0;
  while (start <= out.size()) {
    size_t end = out.find('.', start);
    if (end == std::string::npos) end = out.size();
    bool digits = end > start;
    for (size_t i = start; i < end && digits; ++i) digits = IsDigit(out[i]);
    if (digits)
      std::fill(out.begin() + static_cast<std::ptrdiff_t>(start),
                out.begin() + static_cast<std::ptrdiff_t>(end), '0');
    start = end + 1;
  }
  return out;
}

bool IsIndexBlind(std::string_view p) {
  bool in_class = false;
  bool prev_plain_letter = false;  // the previous pattern character is an unescaped letter or '_'
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\') {
      if (i + 1 < p.size() && (IsDigit(p[i + 1]) ||
                               std::string_view("xuUN").find(p[i + 1]) != std::string_view::npos)) {
        return false;  // an escape that names a character code or a group: may match a digit
      }
      ++i;
      prev_plain_letter = false;
      continue;
    }
    if (IsDigit(c) && (in_class || !prev_plain_letter)) return false;
    if (c == '[') in_class = true;
    if (c == ']') in_class = false;
    prev_plain_letter =
        !in_class && (IsAsciiLetter(c) || c == '_' || (IsDigit(c) && prev_plain_letter));
  }
  return true;
}

}  // namespace dsp
