// SPDX-License-Identifier: Apache-2.0
#include "core/json/document.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <unordered_set>

#include "core/json/lenient_scan.h"
#include "core/util/text.h"

namespace dsp {
namespace {

// An input iterator over the text that publishes how many bytes the parser has pulled, so the SAX
// handler knows where each token ends.
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* p, const char* base, size_t* consumed)
      : p_(p), base_(base), consumed_(consumed) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    ++p_;
    *consumed_ = static_cast<size_t>(p_ - base_);
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator copy = *this;
    ++*this;
    return copy;
  }
  bool operator==(const CountingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const CountingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char* base_;
  size_t* consumed_;
};

// Builds the DOM from SAX events while recording the start offset of every key and value,
// rejecting duplicate keys and bounding the nesting depth.
class LocatingSax : public nlohmann::json_sax<Json> {
 public:
  LocatingSax(const std::string& text, const size_t* consumed, JsonDocument* doc,
              std::vector<Diagnostic>* diags, int max_depth)
      : text_(text), consumed_(consumed), doc_(doc), diags_(diags), max_depth_(max_depth) {}

  bool null() override { return Value(Json(nullptr)); }
  bool boolean(bool v) override { return Value(Json(v)); }
  bool number_integer(number_integer_t v) override { return Value(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Value(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return Value(Json(v)); }
  bool string(string_t& v) override { return Value(Json(std::move(v))); }
  bool binary(binary_t&) override { return Value(Json(nullptr)); }

  bool start_object(std::size_t) override { return Open(Json::object()); }
  bool start_array(std::size_t) override { return Open(Json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool key(string_t& k) override {
    size_t start = TokenStart();
    Frame& f = frames_.back();
    std::string pointer = PointerJoin(f.pointer, k);
    doc_->key_offsets[pointer] = start;
    if (!f.keys.insert(k).second) {
      Diagnostic d;
      d.rule_id = "json-duplicate-key";
      d.severity = Severity::kError;
      d.message = "duplicate key \"" + k + "\": DeepSpeed rejects configs with repeated keys, and "
                  "other JSON loaders silently keep only the last value";
      d.hint = "remove one of the two \"" + k + "\" entries";
      d.pointer = pointer;
      d.loc = doc_->source.LocAt(start);
      diags_->push_back(std::move(d));
    }
    f.current_key = k;
    return true;
  }

  bool parse_error(std::size_t, const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    error_message_ = ex.what();
    const auto* pe = dynamic_cast<const nlohmann::detail::parse_error*>(&ex);
    error_offset_ = pe != nullptr && pe->byte > 0 ? pe->byte - 1 : *consumed_;
    // nlohmann points at the last byte of the offending token; point at its first byte, as
    // compilers and Python's json do, when the token text can be matched in the input.
    bool whole_string = last_token.size() >= 2 && last_token.front() == '"' && last_token.back() == '"';
    if (whole_string && error_offset_ + 1 >= last_token.size()) {
      size_t start = error_offset_ + 1 - last_token.size();
      if (text_.compare(start, last_token.size(), last_token) == 0) error_offset_ = start;
    } else if (error_offset_ <= text_.size()) {
      // A bad literal or number: back up to the first byte of the word (past the lookahead byte).
      auto is_word = [&](size_t i) {
        unsigned char c = static_cast<unsigned char>(text_[i]);
        return std::isalnum(c) || c == '.' || c == '+' || c == '-';
      };
      size_t i = std::min(error_offset_, text_.size());
      if ((i == text_.size() || !is_word(i)) && i > 0 && is_word(i - 1)) --i;
      if (i < text_.size() && is_word(i)) {
        while (i > 0 && is_word(i - 1)) --i;
        error_offset_ = i;
      }
    }
    return false;
  }

  bool too_deep() const { return too_deep_; }
  size_t too_deep_offset() const { return too_deep_offset_; }
  const std::string& error_message() const { return error_message_; }
  size_t error_offset() const { return error_offset_; }

 private:
  struct Frame {
    Json* value;
    std::string pointer;
    std::unordered_set<std::string> keys;
    std::string current_key;
    size_t next_index = 0;
  };

  // The current token started at the first byte after the previous token that is not whitespace
  // or a separator. (Numbers end one byte early because of the lexer's lookahead; the skip covers it.)
  size_t TokenStart() {
    size_t i = scan_from_;
    while (i < text_.size()) {
      char c = text_[i];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':') {
        ++i;
      } else {
        break;
      }
    }
    scan_from_ = *consumed_;
    return i;
  }

  // Places `v` in the current container; returns where it lives and its pointer.
  Json* Place(Json v, std::string* pointer) {
    if (frames_.empty()) {
      doc_->root = std::move(v);
      *pointer = "";
      return &doc_->root;
    }
    Frame& f = frames_.back();
    if (f.value->is_array()) {
      *pointer = PointerJoin(f.pointer, std::to_string(f.next_index++));
      f.value->push_back(std::move(v));
      return &f.value->back();
    }
    *pointer = PointerJoin(f.pointer, f.current_key);
    Json& slot = (*f.value)[f.current_key];
    slot = std::move(v);
    return &slot;
  }

  bool Value(Json v) {
    size_t start = TokenStart();
    std::string pointer;
    Place(std::move(v), &pointer);
    doc_->value_offsets[pointer] = start;
    return true;
  }

  bool Open(Json v) {
    size_t start = TokenStart();
    if (static_cast<int>(frames_.size()) >= max_depth_) {
      too_deep_ = true;
      too_deep_offset_ = start;
      return false;
    }
    std::string pointer;
    Json* slot = Place(std::move(v), &pointer);
    doc_->value_offsets[pointer] = start;
    frames_.push_back(Frame{slot, pointer, {}, {}, 0});
    return true;
  }

  bool Close() {
    scan_from_ = *consumed_;
    frames_.pop_back();
    return true;
  }

  const std::string& text_;
  const size_t* consumed_;
  JsonDocument* doc_;
  std::vector<Diagnostic>* diags_;
  int max_depth_;
  std::vector<Frame> frames_;
  size_t scan_from_ = 0;
  bool too_deep_ = false;
  size_t too_deep_offset_ = 0;
  std::string error_message_;
  size_t error_offset_ = 0;
};

// nlohmann's message is "[json.exception.parse_error.101] parse error at line 1, column 5: syntax
// error while parsing ..."; the location is printed separately, so keep the part after it.
std::string CleanParseMessage(const std::string& what) {
  std::string msg = what;
  if (auto pos = msg.find("column "); pos != std::string::npos) {
    if (auto colon = msg.find(": ", pos); colon != std::string::npos) msg = msg.substr(colon + 2);
  } else if (msg.starts_with("[json.exception.")) {
    if (auto close = msg.find("] "); close != std::string::npos) msg = msg.substr(close + 2);
  }
  return msg;
}

}  // namespace

Diagnostic MakeDiag(const SourceText& src, std::string id, Severity sev, size_t offset,
                    std::string message, std::string hint) {
  Diagnostic d;
  d.rule_id = std::move(id);
  d.severity = sev;
  d.message = std::move(message);
  d.hint = std::move(hint);
  d.loc = src.LocAt(offset);
  return d;
}

SourceLoc JsonDocument::LocateValue(const std::string& pointer) const {
  std::string p = pointer;
  while (true) {
    auto it = value_offsets.find(p);
    if (it != value_offsets.end()) return source.LocAt(it->second);
    if (p.empty()) return {};
    p = PointerParent(p);
  }
}

SourceLoc JsonDocument::LocateKey(const std::string& pointer) const {
  auto it = key_offsets.find(pointer);
  if (it != key_offsets.end()) return source.LocAt(it->second);
  return LocateValue(pointer);
}

ParsedJson ParseJsonLenient(std::string path, std::string text, const ParseOptions& options) {
  ParsedJson out;
  std::string cleaned = text;
  out.doc.source = SourceText(std::move(path), std::move(text));
  const SourceText& src = out.doc.source;

  // nlohmann/json stops at a NUL byte as if the input ended there, which would silently accept
  // whatever follows; JSON text never contains one.
  if (size_t nul = cleaned.find('\0'); nul != std::string::npos) {
    out.diagnostics.push_back(MakeDiag(src, "json-syntax", Severity::kError, nul,
                                       "NUL byte in the file: this is not a JSON text file",
                                       "check that this is the right file and that it is not corrupted"));
    return out;
  }
  LenientScan scan = BlankLenientSyntax(cleaned);
  if (scan.unterminated_comment) {
    out.diagnostics.push_back(MakeDiag(src, "json-syntax", Severity::kError,
                                       *scan.unterminated_comment,
                                       "unterminated /* comment", "close the comment with */"));
    return out;
  }
  if (!scan.comment_offsets.empty()) {
    size_t n = scan.comment_offsets.size();
    out.diagnostics.push_back(MakeDiag(
        src, "json-comment", Severity::kWarning, scan.comment_offsets.front(),
        "comment in JSON" + (n > 1 ? " (and " + std::to_string(n - 1) + " more)" : std::string()) +
            ": DeepSpeed accepts it, but strict JSON loaders (Hugging Face Trainer, Accelerate, "
            "json.load) fail on this file",
        "remove the comments, or move them into a \"_comment\" key"));
  }
  if (!scan.trailing_comma_offsets.empty()) {
    size_t n = scan.trailing_comma_offsets.size();
    out.diagnostics.push_back(MakeDiag(
        src, "json-trailing-comma", Severity::kWarning, scan.trailing_comma_offsets.front(),
        "trailing comma" + (n > 1 ? " (and " + std::to_string(n - 1) + " more)" : std::string()) +
            ": DeepSpeed accepts it, but strict JSON loaders (Hugging Face Trainer, Accelerate, "
            "json.load) fail on this file",
        "delete the comma before the closing bracket"));
  }

  if (cleaned.find_first_not_of(" \t\r\n") == std::string::npos) {
    out.diagnostics.push_back(MakeDiag(src, "json-syntax", Severity::kError, 0,
                                       "the file is empty (or holds only comments)",
                                       "a DeepSpeed config is a JSON object: { ... }"));
    return out;
  }
  size_t consumed = 0;
  LocatingSax sax(cleaned, &consumed, &out.doc, &out.diagnostics, options.max_depth);
  const char* base = cleaned.data();
  CountingIterator first(base, base, &consumed);
  CountingIterator last(base + cleaned.size(), base, &consumed);
  bool parsed = Json::sax_parse(first, last, &sax);
  if (!parsed) {
    if (sax.too_deep()) {
      out.diagnostics.push_back(MakeDiag(
          src, "json-too-deep", Severity::kError, sax.too_deep_offset(),
          "JSON nesting is deeper than " + std::to_string(options.max_depth) + " levels",
          "a DeepSpeed config is a few levels deep; check that this is the right file"));
    } else {
      std::string msg = sax.error_message().empty() ? "not a JSON document"
                                                    : CleanParseMessage(sax.error_message());
      out.diagnostics.push_back(MakeDiag(src, "json-syntax", Severity::kError, sax.error_offset(),
                                         msg, "fix the JSON syntax at this position"));
    }
    return out;
  }
  out.ok = true;
  return out;
}

}  // namespace dsp
