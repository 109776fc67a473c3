// SPDX-License-Identifier: Apache-2.0
// Python's `re` dialect on top of PCRE2 (see python_regex.h). CPython's sre_parse is the
// reference for every check and message here; tests/core/rules/python_regex_test.cc pins them
// against CPython. PCRE2 itself parses the structure (groups, classes, quantifiers, lookarounds)
// and reports the errors both dialects share; this pass only walks the pattern far enough to
//  * rewrite what the two spell alike but read differently: \Z (PCRE2: before a final newline),
//    \v (PCRE2: a class), \x/\u/\U/octal (PCRE2: other digit counts), \1 (PCRE2: octal for a
//    missing group), \B (PCRE2: matches ""), {,n} (literal in PCRE2 10.42), [:...:] (a POSIX
//    class in PCRE2), (?xx) and (?a);
//  * reject what only PCRE2 accepts: (?<name>, \k, \K, \Q, \p, \e, (?|, (?R), (*VERB), (?n)...,
//    and Python's own checks PCRE2 lacks (references to open or later groups, flag position);
//  * leave out comments, (?#...) and (?x)'s "# ...", which Python reads by tokens ("\)" and an
//    escaped newline do not end them) and whose text is not pattern.
#include "core/rules/python_regex_dialect.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace dsp::pyre {
namespace {

constexpr size_t npos = std::string_view::npos;

// What verbose mode skips; PCRE2's (?x) skips the same ASCII set.
bool IsPySpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

class Scanner {
 public:
  explicit Scanner(std::string_view p) : p_(p) {}

  Rewrite Run() {
    while (i_ < p_.size() && out_.error.empty()) Step();
    if (out_.error.empty() && !stack_.empty()) {
      Fail("missing ), unterminated subpattern", stack_.back().src);
    }
    for (auto [group, at] : cond_refs_) {  // sre_parse checks these once all groups are known
      if (group > groups_) Fail("invalid group reference " + std::to_string(group), at);
    }
    out_.origin.push_back(p_.size());
    return std::move(out_);
  }

 private:
  enum class Kind { kCapture, kGroup, kLookbehind };
  struct Open {
    Kind kind = Kind::kGroup;
    unsigned group = 0;             // capture number
    bool verbose = false;           // (?x) outside the group, restored at its ')'
    bool outer_lookbehind = false;  // the outermost lookbehind: ends Python's lookbehind scope
    size_t src = 0;                 // its '(' in the pattern
    size_t body = 0;                // where its body starts in the rewrite
    std::vector<size_t> bars;       // its top-level '|' in the rewrite (lookbehinds only)
  };

  char At(size_t k) const { return k < p_.size() ? p_[k] : '\0'; }
  void Fail(const std::string& what, size_t at) {
    if (out_.error.empty()) out_.error = what + AtPosition(p_, at);
  }
  // Python accepts it, PCRE2 cannot say what Python would: `placeholder` keeps the rest parseable
  // so that a real error later in the pattern is still reported.
  void Unsupported(const std::string& what, size_t from, std::string_view placeholder) {
    if (out_.unsupported.empty()) out_.unsupported = what;
    Emit(placeholder, from);
  }
  void Emit(std::string_view s, size_t from) {
    out_.pcre += s;
    out_.origin.insert(out_.origin.end(), s.size(), from);
  }
  void Copy(size_t n) {
    Emit(p_.substr(i_, n), i_);
    i_ += n;
  }
  // Something was added to the pattern: global flags may no longer follow (Python 3.11+).
  void Item(bool repeatable = true) {
    first_ = repeated_ = false;
    repeatable_ = repeatable;
  }
  // sre_parse wants an item before a quantifier that is neither an anchor nor a quantifier.
  // PCRE2 rejects the same, but only after this pass, which may report a later error first.
  bool Repeatable() {
    if (repeated_) Fail("multiple repeat", i_);
    if (!repeatable_) Fail("nothing to repeat", i_);
    return out_.error.empty();
  }

  void Step() {
    const char c = p_[i_];
    const bool after_quantifier = after_quantifier_;
    after_quantifier_ = false;
    if (verbose_ && IsPySpace(c)) return Copy(1);
    if (verbose_ && c == '#') {  // a comment, left out: PCRE2 would end it at an escaped newline
      size_t j = i_ + 1;
      while (j < p_.size() && p_[j] != '\n') j += p_[j] == '\\' ? 2 : 1;  // "\x" is one token
      if (j > p_.size()) return Fail("bad escape (end of pattern)", p_.size() - 1);
      i_ = std::min(j + 1, p_.size());
      return;
    }
    if (c == '(') return OpenGroup();
    if (c == ')') return CloseGroup();
    if (c == '{') return Brace();
    if (c == '|') {
      repeated_ = repeatable_ = false;
      if (stack_.empty()) first_ = false;
      if (!stack_.empty() && stack_.back().kind == Kind::kLookbehind) {
        stack_.back().bars.push_back(out_.pcre.size());
      }
      return Copy(1);
    }
    if (c == '*' || c == '+' || c == '?') {
      // Right after a quantifier, ? makes it lazy and + possessive; a quantifier after those or
      // after verbose-mode space is Python's "multiple repeat" (PCRE2 reads "a* ?" as lazy).
      if (after_quantifier && c != '*') {
        if (c == '+' && out_.python311.empty()) {
          out_.python311 = "a possessive quantifier (*+, ++, ?+, {m,n}+)";
        }
        return Copy(1);
      }
      if (!Repeatable()) return;
      after_quantifier_ = repeated_ = true;
      return Copy(1);
    }
    Item(c != '^' && c != '$');
    if (c == '\\') return Escape(false);
    if (c == '[') return Class();
    Copy(1);
  }

  // {m}, {m,}, {,n}, {,}, {m,n}; anything else is a literal brace (sre_parse), also in PCRE2.
  void Brace() {
    size_t j = i_ + 1;
    while (IsDigit(At(j))) ++j;
    std::string_view lo = p_.substr(i_ + 1, j - i_ - 1), hi;
    const bool comma = At(j) == ',';
    if (comma) {
      size_t h = ++j;
      while (IsDigit(At(j))) ++j;
      hi = p_.substr(h, j - h);
    }
    if (At(j) != '}' || (lo.empty() && !comma)) {
      Item();
      Emit("\\{", i_++);
      return;
    }
    if (!Repeatable()) return;
    Emit("{" + std::string(lo.empty() ? "0" : lo) + (comma ? "," + std::string(hi) : "") + "}", i_);
    i_ = j + 1;
    after_quantifier_ = repeated_ = true;
  }

  void Escape(bool in_class) {
    const size_t at = i_;
    const pyre::Escape e = ReadEscape(p_, at, in_class);
    i_ = e.end;
    if (!e.error.empty()) return Fail(e.error, e.error_at);
    if (e.group > groups_)
      return Fail("invalid group reference " + std::to_string(e.group), at + 1);
    if (e.group != 0 && !Referable(e.group, at, e.end)) return;
    if (!e.unsupported.empty()) return Unsupported(e.unsupported, at, e.pcre);
    Emit(e.pcre, at);
    if (!in_class && std::string_view("AZbB").find(At(at + 1)) != npos) repeatable_ = false;
  }

  // A back-reference, (?P=name) or conditional to group `group`, which exists: sre_parse's
  // checkgroup and checklookbehindgroup (PCRE2 allows both).
  // `at` and `after` place the two errors where re.error does.
  bool Referable(unsigned group, size_t at, size_t after) {
    if (!closed_.contains(group)) {
      Fail("cannot refer to an open group", at);
      return false;
    }
    if (lookbehind_groups_ && group > *lookbehind_groups_) {
      Fail("cannot refer to group defined in the same lookbehind subpattern", after);
      return false;
    }
    return true;
  }

  void Class() {
    const size_t at = i_;
    Copy(1);
    if (At(i_) == '^') Copy(1);
    for (bool first = true; i_ < p_.size() && out_.error.empty(); first = false) {
      const char c = p_[i_];
      if (c == ']' && !first) return Copy(1);  // a ']' first is a literal, in both dialects
      if (c == '\\') {
        Escape(true);
      } else if (c == '[' || (first && (c == ':' || c == '.' || c == '='))) {
        // PCRE2 reads [:alpha:], [.a.] and [=a=] as POSIX classes; Python as plain characters.
        Emit("\\" + std::string(1, c), i_++);
      } else {
        Copy(1);
      }
    }
    Fail("unterminated character set", at);
  }

  std::string Unterminated(char terminator, size_t at) const {
    if (at >= p_.size()) return "missing group name";
    return std::string("missing ") + terminator + ", unterminated name";
  }

  // A group name after (?P< or (?P= or in (?(...)): a Python identifier. Non-ASCII letters are
  // left to PCRE2, which accepts them as Python does.
  bool ValidName(std::string_view name, size_t at) {
    const std::string error = GroupNameError(name);
    if (!error.empty()) Fail(error, at);
    return error.empty();
  }

  void OpenGroup() {
    const size_t at = i_;
    Open open{.verbose = verbose_, .src = at, .bars = {}};
    const char k = At(at + 1) == '?' ? At(at + 2) : '\0';
    if (At(at + 1) != '?') {
      open.kind = Kind::kCapture;
      open.group = ++groups_;
      Copy(1);
    } else if (at + 2 >= p_.size()) {
      return Fail("unexpected end of pattern", at + 2);
    } else if (k == ':' || k == '=' || k == '!' || k == '>') {
      if (k == '>' && out_.python311.empty()) out_.python311 = "an atomic group (?>...)";
      Copy(3);
    } else if (k == '<' && (At(at + 3) == '=' || At(at + 3) == '!')) {
      open.kind = Kind::kLookbehind;
      open.outer_lookbehind = !lookbehind_groups_;
      if (!lookbehind_groups_) lookbehind_groups_ = groups_;
      Copy(4);
    } else if (k == 'P' && At(at + 3) == '<') {
      const size_t end = p_.find('>', at + 4);
      if (end == npos) return Fail(Unterminated('>', at + 4), at + 4);
      const std::string name(p_.substr(at + 4, end - at - 4));
      if (!ValidName(name, at + 4)) return;
      if (names_.contains(name)) {
        return Fail("redefinition of group name " + PyRepr(name) + " as group " +
                        std::to_string(groups_ + 1) + "; was group " + std::to_string(names_[name]),
                    at + 4);
      }
      open.kind = Kind::kCapture;
      open.group = names_[name] = ++groups_;
      Copy(end + 1 - at);
    } else if (k == 'P' && At(at + 3) == '=') {
      const size_t end = p_.find(')', at + 4);
      if (end == npos) return Fail(Unterminated(')', at + 4), at + 4);
      const std::string name(p_.substr(at + 4, end - at - 4));
      if (!ValidName(name, at + 4)) return;
      auto it = names_.find(name);
      if (it == names_.end()) return Fail("unknown group name " + PyRepr(name), at + 4);
      if (!Referable(it->second, at + 4, end + 1)) return;
      Item();
      return Copy(end + 1 - at);  // a reference, not a group: nothing to close
    } else if (k == '#') {        // left out: PCRE2 would end it at an escaped ')', Python does not
      size_t j = at + 3;
      while (j < p_.size() && p_[j] != ')') j += p_[j] == '\\' ? 2 : 1;
      if (j >= p_.size()) return Fail("missing ), unterminated comment", at);
      i_ = j + 1;
      return;
    } else if (k == '(') {
      if (!Conditional()) return;
    } else if (IsFlag(k) || k == '-') {
      return InlineFlags();
    } else {
      // (?<name>, (?'name', (?|, (?R), (?1), (?&name), (?P>name), (?C), (?^), (?n), (?J), (?U)...
      size_t bad = k == '<' || k == 'P' ? 3 : 2;
      if (at + bad >= p_.size()) return Fail("unexpected end of pattern", at + bad);
      if (At(at + bad) == '\\') ++bad;  // sre_parse reads an escape as one token
      while ((static_cast<unsigned char>(At(at + bad + 1)) & 0xc0) == 0x80) ++bad;  // whole char
      return Fail("unknown extension " + std::string(p_.substr(at + 1, bad)), at + 1);
    }
    Item(false);  // nothing to repeat yet inside the group
    open.body = out_.pcre.size();
    stack_.push_back(std::move(open));
  }

  // (?(1)yes|no) or (?(name)yes|no); i_ is at the '('. PCRE2 also reads (?(R), (?(DEFINE),
  // (?(<name>) and (?(?=...) conditions, which Python rejects or reads as group names.
  bool Conditional() {
    const size_t at = i_ + 3;
    const size_t end = p_.find(')', at);
    if (end == npos) {
      Fail(Unterminated(')', at), at);
      return false;
    }
    const std::string name(p_.substr(at, end - at));
    unsigned group = 0;
    if (AllDigits(name)) {
      group = name.size() > 9 ? 1000000000u : static_cast<unsigned>(std::stoul(name));
      if (group == 0) {
        Fail("bad group number", at);
        return false;
      }
      cond_refs_.emplace_back(group, at);  // may name a later group, except in a lookbehind
      if (lookbehind_groups_ && !Referable(group, end + 1, end + 1)) return false;
      Emit("(?(" + std::to_string(group) + ")", i_);
    } else if (name.find_first_of("0123456789") != std::string::npos &&
               name.find_first_not_of("0123456789+- \t_") == std::string::npos) {
      // sre_parse reads the condition with int(), which also takes "+1", " 1", "1_0".
      Unsupported("the conditional group reference (?(" + name + ")", i_, "(?:");
    } else {
      if (!ValidName(name, at)) return false;
      auto it = names_.find(name);
      if (it == names_.end()) {
        Fail("unknown group name " + PyRepr(name), at);
        return false;
      }
      if (lookbehind_groups_ && !Referable(it->second, end + 1, end + 1)) return false;
      const bool reserved =
          name == "DEFINE" || (name[0] == 'R' && AllDigits(name.substr(1))) || name == "R";
      if (reserved) {  // PCRE2 reads these as recursion tests, whatever groups exist
        Unsupported("a conditional on a group named " + name, i_, "(?:");
      } else {
        Emit("(?(" + name + ")", i_);
      }
    }
    i_ = end + 1;
    return out_.error.empty();
  }

  // (?flags) for the whole pattern, or the opening of a scoped (?flags-flags:...).
  void InlineFlags() {
    const size_t at = i_;
    const pyre::Flags f = ReadFlags(p_, at);
    if (!f.error.empty()) return Fail(f.error, f.error_at);
    i_ = f.end;
    if (f.global) {
      if (!first_) return Fail("global flags not at the start of the expression", at);
      out_.ascii = out_.ascii || f.ascii;
      unicode_ = unicode_ || f.unicode;
      if (out_.ascii && unicode_) {  // sre_parse.fix_flags raises ValueError, not re.error
        out_.error = "ASCII and UNICODE flags are incompatible";
        return;
      }
      verbose_ = verbose_ || f.on.find('x') != npos;
      if (!f.on.empty()) Emit("(?" + f.on + ")", at);
      if (f.templ) Unsupported("the TEMPLATE flag (?t)", at, "");
      return;
    }
    Item(false);
    stack_.push_back(Open{.verbose = verbose_, .src = at, .bars = {}});
    if (f.on.find('x') != npos) verbose_ = true;
    if (f.off.find('x') != npos) verbose_ = false;
    if (f.ascii) return Unsupported("a scoped ASCII flag (?a:...)", at, "(?:");
    if (f.templ) return Unsupported("the TEMPLATE flag (?t:...)", at, "(?:");
    Emit("(?" + f.on + (f.off.empty() ? "" : "-" + f.off) + ":", at);
  }

  void CloseGroup() {
    if (stack_.empty()) return Fail("unbalanced parenthesis", i_);
    Copy(1);
    repeated_ = false;
    repeatable_ = true;  // the group, lookarounds included
    Open open = std::move(stack_.back());
    stack_.pop_back();
    verbose_ = open.verbose;
    if (open.kind == Kind::kCapture) closed_.insert(open.group);
    if (open.kind != Kind::kLookbehind) return;
    if (open.outer_lookbehind) lookbehind_groups_.reset();
    if (open.bars.empty()) return;
    Lookbehind lb{.source_at = open.src, .verbose = open.verbose, .branches = {}};
    size_t begin = open.body;
    for (size_t bar : open.bars) {
      lb.branches.emplace_back(begin, bar);
      begin = bar + 1;
    }
    lb.branches.emplace_back(begin, out_.pcre.size() - 1);
    out_.lookbehinds.push_back(std::move(lb));
  }

  std::string_view p_;
  size_t i_ = 0;
  Rewrite out_;
  bool verbose_ = false;
  bool unicode_ = false;  // a global (?u)
  bool first_ = true;     // nothing but flags and comments so far, in the first top-level branch
  bool after_quantifier_ = false;  // the previous character ended a quantifier
  bool repeated_ = false;          // the last token, verbose-mode space aside, is a quantifier
  bool repeatable_ = false;        // the last token is an item a quantifier may follow
  unsigned groups_ = 0;            // capturing groups opened so far
  std::set<unsigned> closed_;      // capturing groups already closed
  std::map<std::string, unsigned> names_;      // named groups so far
  std::optional<unsigned> lookbehind_groups_;  // groups_ when the outermost lookbehind opened
  std::vector<std::pair<unsigned, size_t>> cond_refs_;  // (?(N)...): N and where
  std::vector<Open> stack_;
};

}  // namespace

Rewrite RewritePythonPattern(std::string_view pattern) { return Scanner(pattern).Run(); }

}  // namespace dsp::pyre
