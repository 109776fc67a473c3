// SPDX-License-Identifier: Apache-2.0
#include "core/json/hjson_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_set>

#include "core/util/text.h"

namespace dsp {
namespace {

// One of the hjson extensions a strict JSON loader rejects (comments and trailing commas have
// their own rules: they are the common ones).
enum class Extension {
  kQuotelessKey,
  kQuotelessValue,
  kSingleQuoted,
  kMissingComma,
  kMultilineString,
  kNoRootBraces,
};

struct ExtensionUse {
  size_t offset;
  std::string detail;  // the key or value as written, for the message
};

// Python's str.strip(): ASCII whitespace (and \x1c-\x1f) plus the Unicode spaces str.isspace()
// knows (U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
size_t SpaceAtFront(std::string_view s) {
  if (s.empty()) return 0;
  unsigned char c = static_cast<unsigned char>(s[0]);
  if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f)) return 1;
  if (s.size() >= 2 && c == 0xC2 && (static_cast<unsigned char>(s[1]) == 0x85 || static_cast<unsigned char>(s[1]) == 0xA0)) return 2;
  if (s.size() >= 3) {
    unsigned char c1 = static_cast<unsigned char>(s[1]), c2 = static_cast<unsigned char>(s[2]);
    if (c == 0xE1 && c1 == 0x9A && c2 == 0x80) return 3;                                       // U+1680
    if (c == 0xE2 && c1 == 0x80 && (c2 <= 0x8A || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF)) return 3;  // U+2000-200A, 2028, 2029, 202F
    if (c == 0xE2 && c1 == 0x81 && c2 == 0x9F) return 3;                                       // U+205F
    if (c == 0xE3 && c1 == 0x80 && c2 == 0x80) return 3;                                       // U+3000
  }
  return 0;
}

size_t SpaceAtBack(std::string_view s) {
  for (size_t n : {size_t{1}, size_t{2}, size_t{3}}) {
    if (s.size() >= n && SpaceAtFront(s.substr(s.size() - n)) == n) return n;
  }
  return 0;
}

std::string_view Strip(std::string_view s) {
  while (size_t n = SpaceAtFront(s)) s.remove_prefix(n);
  while (size_t n = SpaceAtBack(s)) s.remove_suffix(n);
  return s;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Offset of the first byte that is not well-formed UTF-8 (Python's strict decoder: no overlong
// forms, no encoded surrogates, nothing past U+10FFFF), or npos.
size_t FirstInvalidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return i;
    unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
        (c == 0xF4 && c1 > 0x8F)) {
      return i;
    }
    for (int k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return i;
    }
    i += len;
  }
  return std::string::npos;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Thrown (and caught in Parse) at the first syntax error, as hjson-py raises HjsonDecodeError.
struct SyntaxError {
  size_t offset;
  std::string message;
  std::string hint;
  bool too_deep = false;
};

class HjsonParser {
 public:
  HjsonParser(const std::string& s, JsonDocument* doc, std::vector<Diagnostic>* diags, int max_depth)
      : s_(s), doc_(doc), diags_(diags), max_depth_(max_depth) {}

  // hjson-py's decode(): the root, then nothing but whitespace and comments.
  void ParseDocument() {
    size_t idx = 0;
    if (s_.compare(0, 3, "\xEF\xBB\xBF") == 0) idx = 3;  // raw_decode strips a BOM
    auto [ch, at] = GetNext(idx);
    size_t end;
    if (ch == '{' || ch == '[') {
      end = ScanValue(at, "", &doc_->root);
    } else {
      // raw_decode: without a leading brace the text is an object without root braces.
      extensions_[Extension::kNoRootBraces].push_back({at, ""});
      doc_->value_offsets[""] = at;
      doc_->root = Json::object();
      end = ParseObjectBody(at, "", &doc_->root, /*without_braces=*/true, at);
    }
    auto [tail, tail_at] = GetNext(end);
    if (tail != '\0') {
      throw SyntaxError{tail_at, "unexpected text after the end of the configuration (hjson: \"Extra data\")",
                        "remove it, or check that the braces before it balance"};
    }
  }

  bool OnlyCommentsAndSpace() {
    size_t idx = s_.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
    return GetNext(idx).first == '\0';
  }

  const std::set<size_t>& comments() const { return comments_; }
  const std::vector<size_t>& trailing_commas() const { return trailing_commas_; }
  const std::map<Extension, std::vector<ExtensionUse>>& extensions() const { return extensions_; }

 private:
  char At(size_t i) const { return i < s_.size() ? s_[i] : '\0'; }

  // getNext: skips whitespace and comments; returns the next character ('\0' at the end) and
  // its offset.
  std::pair<char, size_t> GetNext(size_t end) {
    while (true) {
      char ch = At(end);
      while (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') ch = At(++end);
      char ch2 = At(end + 1);
      if (ch == '#' || (ch == '/' && ch2 == '/')) {
        comments_.insert(end);
        while (At(end) != '\0' && At(end) != '\n' && At(end) != '\r') ++end;
      } else if (ch == '/' && ch2 == '*') {
        comments_.insert(end);
        size_t close = s_.find("*/", end + 2);
        if (close == std::string::npos) {
          // hjson-py indexes past the end here (IndexError), so DeepSpeed fails on the file.
          throw SyntaxError{end, "unterminated /* comment", "close the comment with */"};
        }
        end = close + 2;
      } else {
        return {ch, end};
      }
    }
  }

  // scan_once: the value starting at `at` (a non-space character), stored in *slot.
  size_t ScanValue(size_t at, const std::string& pointer, Json* slot) {
    doc_->value_offsets[pointer] = at;
    char ch = At(at);
    if (ch == '\0') throw SyntaxError{at, "the file ends where a value was expected", "complete the value"};
    if (s_.compare(at, 3, "'''") == 0) {
      std::string v;
      size_t end = ScanMultiline(at, &v);
      extensions_[Extension::kMultilineString].push_back({at, ""});
      *slot = std::move(v);
      return end;
    }
    if (ch == '"' || ch == '\'') {
      std::string v;
      size_t end = ScanString(at, &v);
      if (ch == '\'') extensions_[Extension::kSingleQuoted].push_back({at, v});
      *slot = std::move(v);
      return end;
    }
    if (ch == '{' || ch == '[') {
      if (depth_ >= max_depth_) throw SyntaxError{at, "", "", true};
      ++depth_;
      size_t end;
      if (ch == '{') {
        *slot = Json::object();
        end = ParseObjectBody(at + 1, pointer, slot, false, at);
      } else {
        *slot = Json::array();
        end = ParseArrayBody(at + 1, pointer, slot, at);
      }
      --depth_;
      return end;
    }
    return ScanQuoteless(at, pointer, slot);
  }

  // JSONObject. `open` is the offset of the '{' (or of the first key without root braces).
  size_t ParseObjectBody(size_t end, const std::string& pointer, Json* obj, bool without_braces, size_t open) {
    std::unordered_set<std::string> keys;
    auto [ch, at] = GetNext(end);
    end = at;
    if (!without_braces && ch == '}') return end + 1;
    bool separated = true;  // the first member needs no comma before it
    while (true) {
      auto [kch, key_at] = GetNext(end);
      if (kch == '\0') {
        throw SyntaxError{key_at, without_braces ? "the file ends where a key was expected"
                                                 : "the file ends inside the object opened at " + Where(open) + " (a '}' is missing)",
                          without_braces ? "remove the trailing comma" : "close the object with }"};
      }
      if (!separated) extensions_[Extension::kMissingComma].push_back({key_at, ""});
      std::string key;
      end = ScanKey(key_at, &key);
      std::string member = PointerJoin(pointer, key);
      doc_->key_offsets[member] = key_at;
      if (!keys.insert(key).second) ReportDuplicate(key, member, key_at);
      auto [colon, colon_at] = GetNext(end);
      if (colon != ':') {
        throw SyntaxError{colon_at, "expected ':' after the key \"" + ClipForDisplay(key, 80) + "\"",
                          "write the key as \"key\": value"};
      }
      auto [vch, value_at] = GetNext(colon_at + 1);
      (void)vch;
      Json value;
      end = ScanValue(value_at, member, &value);
      (*obj)[key] = std::move(value);
      auto [next, next_at] = GetNext(end);
      end = next_at;
      separated = false;
      if (next == ',') {
        size_t comma = next_at;
        std::tie(next, next_at) = GetNext(next_at + 1);
        end = next_at;
        separated = true;
        if ((without_braces && next == '\0') || (!without_braces && next == '}')) trailing_commas_.push_back(comma);
      }
      if (without_braces) {
        if (next == '\0') return end;
      } else if (next == '}') {
        return end + 1;
      }
    }
  }

  // JSONArray. `open` is the offset of the '['.
  size_t ParseArrayBody(size_t end, const std::string& pointer, Json* arr, size_t open) {
    auto [ch, at] = GetNext(end);
    if (ch == ']') return at + 1;
    if (ch == '\0') {
      throw SyntaxError{at, "the file ends inside the list opened at " + Where(open) + " (a ']' is missing)",
                        "close the list with ]"};
    }
    end = at;
    size_t index = 0;
    bool separated = true;
    while (true) {
      auto [vch, value_at] = GetNext(end);
      if (vch == '\0') {
        throw SyntaxError{value_at, "the file ends inside the list opened at " + Where(open) + " (a ']' is missing)",
                          "close the list with ]"};
      }
      if (!separated) extensions_[Extension::kMissingComma].push_back({value_at, ""});
      Json value;
      end = ScanValue(value_at, PointerJoin(pointer, std::to_string(index++)), &value);
      arr->push_back(std::move(value));
      auto [next, next_at] = GetNext(end);
      end = next_at;
      separated = false;
      if (next == ',') {
        size_t comma = next_at;
        std::tie(next, next_at) = GetNext(next_at + 1);
        end = next_at;
        separated = true;
        if (next == ']') trailing_commas_.push_back(comma);
      }
      if (next == ']') return end + 1;
    }
  }

  // scanKeyName: a quoted string, or the characters up to ':' (no whitespace inside, none of {}[],).
  size_t ScanKey(size_t at, std::string* key) {
    if (At(at) == '"' || At(at) == '\'') {
      size_t end = ScanString(at, key);
      if (At(at) == '\'') extensions_[Extension::kSingleQuoted].push_back({at, *key});
      return end;
    }
    size_t end = at;
    std::optional<size_t> space;
    while (true) {
      char ch = At(end);
      if (ch == '\0') throw SyntaxError{at, "the file ends inside a key name", "finish the key with a ':' and a value"};
      if (ch == ':') {
        if (end == at) {
          throw SyntaxError{at, "found ':' but no key name", "for an empty key name use quotes: \"\""};
        }
        if (space && *space != end - 1) {
          throw SyntaxError{*space, "whitespace inside an unquoted key name", "put the key in double quotes"};
        }
        *key = std::string(space ? Strip(std::string_view(s_).substr(at, end - at))
                                 : std::string_view(s_).substr(at, end - at));
        extensions_[Extension::kQuotelessKey].push_back({at, *key});
        return end;
      }
      if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
        if (!space || *space == end - 1) space = end;
      } else if (ch == '{' || ch == '}' || ch == '[' || ch == ']' || ch == ',') {
        throw SyntaxError{at, std::string("found '") + ch + "' where a key name was expected",
                          "check the syntax here, or quote the key if it contains {}[],: or spaces"};
      }
      ++end;
    }
  }

  // scanstring (strict): a string in double or single quotes starting at `at`; the other quote
  // character stands for itself inside it.
  size_t ScanString(size_t at, std::string* out) {
    const char quote = s_[at];
    size_t end = at + 1;
    while (true) {
      char ch = At(end);
      if (end >= s_.size()) throw SyntaxError{at, "unterminated string", std::string("close the string with ") + quote};
      if (ch == quote) return end + 1;
      if (static_cast<unsigned char>(ch) < 0x20) {
        throw SyntaxError{end, "control character (byte " + std::to_string(static_cast<int>(ch)) +
                                   ") inside a string",
                          ch == '\n' ? "close the string on the line it opens, or use ''' for a multi-line string"
                                     : "write it as an escape sequence such as \\t"};
      }
      if (ch != '\\') {
        *out += ch;
        ++end;
        continue;
      }
      char esc = At(end + 1);
      switch (esc) {
        case '"': *out += '"'; break;
        case '\'': *out += '\''; break;
        case '\\': *out += '\\'; break;
        case '/': *out += '/'; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'n': *out += '\n'; break;
        case 'r': *out += '\r'; break;
        case 't': *out += '\t'; break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(end + 2, &cp)) {
            throw SyntaxError{end, "invalid \\uXXXX escape", "write four hex digits after \\u"};
          }
          end += 6;
          if ((cp & 0xFC00) == 0xD800 && s_.compare(end, 2, "\\u") == 0) {
            uint32_t low = 0;
            if (Hex4(end + 2, &low) && (low & 0xFC00) == 0xDC00) {
              cp = 0x10000 + (((cp - 0xD800) << 10) | (low - 0xDC00));
              end += 6;
            }
          }
          // Python keeps a lone surrogate; it has no UTF-8 form, so it becomes U+FFFD here.
          if ((cp & 0xF800) == 0xD800) cp = 0xFFFD;
          AppendUtf8(*out, cp);
          continue;
        }
        default:
          if (end + 1 >= s_.size()) throw SyntaxError{at, "unterminated string", std::string("close the string with ") + quote};
          throw SyntaxError{end, std::string("invalid escape \\") + esc, "escape a backslash as \\\\"};
      }
      end += 2;
    }
  }

  bool Hex4(size_t at, uint32_t* value) const {
    if (at + 4 > s_.size()) return false;
    uint32_t v = 0;
    for (size_t i = at; i < at + 4; ++i) {
      char c = s_[i];
      int d = IsDigit(c) ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return false;
      v = v * 16 + static_cast<uint32_t>(d);
    }
    *value = v;
    return true;
  }

  // mlscanstring: '''...''' with the indentation of the opening line removed from each line.
  size_t ScanMultiline(size_t at, std::string* out) {
    // decoder.py walks back from the ''' to the previous line break. Python's negative indexing
    // wraps a walk past the start of the text around to its end, and with no line break at all it
    // raises IndexError.
    size_t indent = 0;
    size_t before = at == 0 ? std::string::npos : s_.rfind('\n', at - 1);
    if (before != std::string::npos) {
      indent = at - before - 1;
    } else {
      size_t last = s_.rfind('\n');
      if (last == std::string::npos) {
        throw SyntaxError{at, "a ''' string in a file without a line break: hjson fails on it (IndexError)",
                          "put the string on its own line, or use a quoted string"};
      }
      indent = s_.size() + at - 1 - last;
    }
    size_t end = SkipIndent(at + 3, SIZE_MAX);
    if (At(end) == '\n') end = SkipIndent(end + 1, indent);
    int triple = 0;
    while (true) {
      if (end >= s_.size()) throw SyntaxError{at, "unterminated ''' string", "close it with '''"};
      char ch = s_[end];
      if (ch == '\'') {
        ++triple;
        ++end;
        if (triple == 3) {
          if (!out->empty() && out->back() == '\n') out->pop_back();
          return end;
        }
        continue;
      }
      out->append(static_cast<size_t>(triple), '\'');
      triple = 0;
      if (ch == '\n') {
        *out += ch;
        end = SkipIndent(end + 1, indent);
      } else {
        if (ch != '\r') *out += ch;
        ++end;
      }
    }
  }

  size_t SkipIndent(size_t end, size_t n) const {
    while (n > 0 && (At(end) == ' ' || At(end) == '\t' || At(end) == '\r')) {
      ++end;
      --n;
    }
    return end;
  }

  // scantfnns: a quoteless value runs to the end of the line; at each `,` `}` `]` `#` `//` `/*`
  // (and at the line end) it ends there if everything so far is null, true, false or a number.
  size_t ScanQuoteless(size_t begin, const std::string& pointer, Json* slot) {
    char first = At(begin);
    if (first == ',' || first == ':' || first == '}' || first == ']') {
      throw SyntaxError{begin, std::string("found '") + first + "' where a value was expected",
                        "write a value here, or remove the extra punctuation"};
    }
    for (size_t end = begin;; ++end) {
      char ch = At(end);
      bool eol = ch == '\r' || ch == '\n' || ch == '\0';
      bool stop = eol || ch == ',' || ch == '}' || ch == ']' || ch == '#' ||
                  (ch == '/' && (At(end + 1) == '/' || At(end + 1) == '*'));
      if (!stop) continue;
      std::string_view text = std::string_view(s_).substr(begin, end - begin);
      std::string_view word = Strip(text);
      if (first == 'n' && word == "null") return (*slot = nullptr, end);
      if (first == 't' && word == "true") return (*slot = true, end);
      if (first == 'f' && word == "false") return (*slot = false, end);
      if ((first == '-' || IsDigit(first)) && NumberSpansTo(begin, end)) {
        *slot = ReadNumber(begin, Strip(text), pointer);
        return end;
      }
      if (eol) {
        extensions_[Extension::kQuotelessValue].push_back({begin, std::string(word)});
        *slot = std::string(word);
        return end;
      }
    }
  }

  // NUMBER_RE = [\t ]*(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?[\t ]* matched at `begin` ends at `end`.
  bool NumberSpansTo(size_t begin, size_t end) const {
    size_t i = begin;
    if (At(i) == '-') ++i;
    if (At(i) == '0') {
      ++i;
    } else if (IsDigit(At(i))) {
      while (IsDigit(At(i))) ++i;
    } else {
      return false;
    }
    if (At(i) == '.' && IsDigit(At(i + 1))) {
      ++i;
      while (IsDigit(At(i))) ++i;
    }
    if (At(i) == 'e' || At(i) == 'E') {
      size_t j = i + 1;
      if (At(j) == '+' || At(j) == '-') ++j;
      if (IsDigit(At(j))) {
        while (IsDigit(At(j))) ++j;
        i = j;
      }
    }
    while (At(i) == ' ' || At(i) == '\t') ++i;
    return i == end;
  }

  Json ReadNumber(size_t at, std::string_view token, const std::string& pointer) {
    bool real = token.find_first_of(".eE") != std::string_view::npos;
    const char* first = token.data();
    const char* last = token.data() + token.size();
    if (!real) {
      int64_t i = 0;
      if (auto r = std::from_chars(first, last, i); r.ec == std::errc() && r.ptr == last) return Json(i);
      uint64_t u = 0;
      if (auto r = std::from_chars(first, last, u); r.ec == std::errc() && r.ptr == last) return Json(u);
      // Python's int has no limit; a double is the nearest this document can hold.
    }
    double d = 0;
    auto r = std::from_chars(first, last, d);
    if (r.ec == std::errc::result_out_of_range && real && std::string_view(token).find_first_of("eE") != std::string_view::npos &&
        token.find("e-") == std::string_view::npos && token.find("E-") == std::string_view::npos) {
      // 1e400: float() gives inf, and hjson's int(res) == res then raises OverflowError.
      throw SyntaxError{at, "number " + std::string(token) + " is out of range: hjson, DeepSpeed's loader, fails on it",
                        "use a finite number"};
    }
    if (r.ec != std::errc()) d = token.front() == '-' ? -0.0 : 0.0;  // underflow to zero, as float() does
    if (!real) return Json(d);
    if (std::isinf(d)) {
      throw SyntaxError{at, "number " + std::string(token) + " is out of range: hjson, DeepSpeed's loader, fails on it",
                        "use a finite number"};
    }
    // decoder.py scantfnns: `if int(res) == res and abs(res) < 1e10: res = int(res)`.
    if (std::trunc(d) == d && std::fabs(d) < 1e10) {
      doc_->float_literals.insert(pointer);
      return Json(static_cast<int64_t>(d));
    }
    return Json(d);
  }

  void ReportDuplicate(const std::string& key, const std::string& pointer, size_t at) {
    Diagnostic d;
    d.rule_id = "json-duplicate-key";
    d.severity = Severity::kError;
    d.message = "duplicate key \"" + ClipForDisplay(key, 200) +
                "\": DeepSpeed rejects configs with repeated keys, and other JSON loaders silently keep "
                "only the last value";
    d.hint = "remove one of the two \"" + ClipForDisplay(key, 200) + "\" entries";
    d.pointer = pointer;
    d.loc = doc_->source.LocAt(at);
    diags_->push_back(std::move(d));
  }

  std::string Where(size_t offset) const {
    SourceLoc loc = doc_->source.LocAt(offset);
    return "line " + std::to_string(loc.line) + ", column " + std::to_string(loc.column);
  }

  const std::string& s_;
  JsonDocument* doc_;
  std::vector<Diagnostic>* diags_;
  int max_depth_;
  int depth_ = 0;
  std::set<size_t> comments_;
  std::vector<size_t> trailing_commas_;
  std::map<Extension, std::vector<ExtensionUse>> extensions_;
};

std::string AndMore(size_t n) { return n > 1 ? " (and " + std::to_string(n - 1) + " more)" : std::string(); }

// One warning for the hjson-only syntax, at its first use, naming each kind with an example.
void ReportExtensions(const SourceText& src, const std::map<Extension, std::vector<ExtensionUse>>& uses,
                      std::vector<Diagnostic>* out) {
  if (uses.empty()) return;
  size_t first = SIZE_MAX;
  std::vector<std::string> kinds;
  for (const auto& [kind, list] : uses) {
    first = std::min(first, list.front().offset);
    SourceLoc loc = src.LocAt(list.front().offset);
    std::string at = " (line " + std::to_string(loc.line) +
                     (list.size() > 1 ? ", and " + std::to_string(list.size() - 1) + " more" : std::string()) + ")";
    switch (kind) {
      case Extension::kQuotelessKey:
        kinds.push_back("an unquoted key `" + ClipForDisplay(list.front().detail, 60) + "`" + at);
        break;
      case Extension::kQuotelessValue:
        kinds.push_back("an unquoted value read as the string \"" + ClipForDisplay(list.front().detail, 60) +
                        "\" (hjson takes the rest of the line, commas and comments included)" + at);
        break;
      case Extension::kSingleQuoted:
        kinds.push_back("a string in single quotes '" + ClipForDisplay(list.front().detail, 60) + "'" + at);
        break;
      case Extension::kMissingComma:
        kinds.push_back("members separated by a line break instead of a comma" + at);
        break;
      case Extension::kMultilineString:
        kinds.push_back("a ''' multi-line string" + at);
        break;
      case Extension::kNoRootBraces:
        kinds.push_back("no braces around the whole config" + at);
        break;
    }
  }
  out->push_back(MakeDiag(src, "json-hjson-syntax", Severity::kWarning, first,
                          "Hjson syntax: " + JoinList(kinds) +
                              ". DeepSpeed reads config files with hjson and accepts it, but strict JSON "
                              "loaders (Hugging Face Trainer, Accelerate, json.load) fail on this file",
                          "write plain JSON: quote keys and string values, separate members with commas"));
}

}  // namespace

ParsedJson ParseDeepSpeedConfig(std::string path, std::string text, const ParseOptions& options) {
  ParsedJson out;
  out.doc.source = SourceText(std::move(path), std::move(text));
  const SourceText& src = out.doc.source;
  const std::string& s = src.text();
  if (size_t nul = s.find('\0'); nul != std::string::npos) {
    out.diagnostics.push_back(MakeDiag(src, "json-syntax", Severity::kError, nul,
                                       "NUL byte in the file: this is not a JSON text file",
                                       "check that this is the right file and that it is not corrupted"));
    return out;
  }
  if (size_t bad = FirstInvalidUtf8(s); bad != std::string::npos) {
    out.diagnostics.push_back(MakeDiag(src, "json-syntax", Severity::kError, bad,
                                       "the file is not UTF-8 text (Python's open() fails to decode this byte)",
                                       "save the file as UTF-8"));
    return out;
  }
  HjsonParser parser(s, &out.doc, &out.diagnostics, options.max_depth);
  // A file of nothing but whitespace and comments: say so rather than "a key was expected".
  bool blank = true;
  try {
    blank = parser.OnlyCommentsAndSpace();
  } catch (const SyntaxError&) {
    blank = false;
  }
  if (blank) {
    out.diagnostics.push_back(MakeDiag(src, "json-syntax", Severity::kError, 0,
                                       "the file is empty (or holds only comments)",
                                       "a DeepSpeed config is a JSON object: { ... }"));
    return out;
  }
  try {
    parser.ParseDocument();
  } catch (const SyntaxError& e) {
    out.diagnostics.push_back(e.too_deep
                                  ? MakeDiag(src, "json-too-deep", Severity::kError, e.offset,
                                             "JSON nesting is deeper than " + std::to_string(options.max_depth) + " levels",
                                             "a DeepSpeed config is a few levels deep; check that this is the right file")
                                  : MakeDiag(src, "json-syntax", Severity::kError, e.offset, e.message, e.hint));
    return out;
  }
  if (!parser.comments().empty()) {
    out.diagnostics.push_back(MakeDiag(
        src, "json-comment", Severity::kWarning, *parser.comments().begin(),
        "comment in JSON" + AndMore(parser.comments().size()) +
            ": DeepSpeed accepts it, but strict JSON loaders (Hugging Face Trainer, Accelerate, "
            "json.load) fail on this file",
        "remove the comments, or move them into a \"_comment\" key"));
  }
  if (!parser.trailing_commas().empty()) {
    out.diagnostics.push_back(MakeDiag(
        src, "json-trailing-comma", Severity::kWarning, parser.trailing_commas().front(),
        "trailing comma" + AndMore(parser.trailing_commas().size()) +
            ": DeepSpeed accepts it, but strict JSON loaders (Hugging Face Trainer, Accelerate, "
            "json.load) fail on this file",
        "delete the comma before the closing bracket"));
  }
  ReportExtensions(src, parser.extensions(), &out.diagnostics);
  out.ok = true;
  return out;
}

}  // namespace dsp
