// SPDX-License-Identifier: Apache-2.0
#include "sim/graph/text_format.h"

#include <cctype>
#include <optional>
#include <utility>
#include <vector>

namespace dsp::sim::graph {

namespace {

std::string Quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

// Parses one line; `pos` walks it and is what error columns report.
class LineParser {
 public:
  LineParser(std::string_view line, int line_no, Graph& graph)
      : line_(line), line_no_(line_no), graph_(graph) {}

  Status Parse() {
    NodeSpec spec;
    if (Status st = Expect('%'); !st.ok()) return st;
    const size_t name_at = pos_;
    spec.name = Word(IsNameChar);
    if (spec.name.empty()) return Fail("expected a node name after '%'");
    if (graph_.Find(spec.name) != nullptr) {
      pos_ = name_at;
      return Fail("duplicate node name %" + spec.name);
    }
    if (Status st = Expect('='); !st.ok()) return st;
    SkipSpaces();
    spec.op = Word([](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (spec.op.empty()) return Fail("expected an op name");
    if (Status st = Expect('('); !st.ok()) return st;
    if (Status st = Args(spec.args); !st.ok()) return st;
    SkipSpaces();
    if (pos_ < line_.size() && line_[pos_] == '{') {
      if (Status st = Attributes(spec); !st.ok()) return st;
    }
    SkipSpaces();
    if (pos_ < line_.size()) return Fail("unexpected text after the node");
    graph_.Append(std::move(spec));
    return Status::Ok();
  }

 private:
  Error Fail(const std::string& message) const {
    return Error{std::to_string(line_no_) + ":" + std::to_string(pos_ + 1) + ": " + message};
  }

  void SkipSpaces() {
    while (pos_ < line_.size() && (line_[pos_] == ' ' || line_[pos_] == '\t')) ++pos_;
  }

  bool Consume(char c) {
    SkipSpaces();
    if (pos_ < line_.size() && line_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  Status Expect(char c) {
    if (Consume(c)) return Status::Ok();
    return Fail(std::string("expected '") + c + "'");
  }

  template <class Pred>
  std::string Word(Pred pred) {
    const size_t start = pos_;
    while (pos_ < line_.size() && pred(line_[pos_])) ++pos_;
    return std::string(line_.substr(start, pos_ - start));
  }

  Status Args(std::vector<Node*>& args) {
    if (Consume(')')) return Status::Ok();
    do {
      if (Status st = Expect('%'); !st.ok()) return st;
      const size_t at = pos_;
      std::string name = Word(IsNameChar);
      Node* arg = graph_.Find(name);
      if (arg == nullptr) {
        pos_ = at;
        return Fail(name.empty() ? "expected an argument name after '%'"
                                 : "%" + name + " is not defined on an earlier line");
      }
      args.push_back(arg);
    } while (Consume(','));
    return Expect(')');
  }

  Status Attributes(NodeSpec& spec) {
    ++pos_;  // '{'
    if (Consume('}')) return Status::Ok();
    std::vector<std::string> seen;
    do {
      SkipSpaces();
      const size_t key_at = pos_;
      std::string key =
          Word([](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; });
      for (const std::string& s : seen) {
        if (s == key) {
          pos_ = key_at;
          return Fail("attribute " + key + " given twice");
        }
      }
      seen.push_back(key);
      if (Status st = Expect('='); !st.ok()) return st;
      Status st = Status::Ok();
      if (key == "module") {
        st = String(spec.module);
      } else if (key == "param") {
        st = String(spec.param);
      } else if (key == "group") {
        st = String(spec.group);
      } else if (key == "shape") {
        st = ShapeValue(spec.shape);
      } else if (key == "param_shape") {
        st = ShapeValue(spec.param_shape);
      } else if (key == "window") {
        st = Count(spec.window);
      } else if (key == "chunk") {
        st = Count(spec.chunk);
      } else {
        pos_ = key_at;
        return Fail("unknown attribute '" + key +
                    "' (expected module, param, param_shape, shape, group, window or chunk)");
      }
      if (!st.ok()) return st;
    } while (Consume(','));
    return Expect('}');
  }

  Status String(std::string& out) {
    if (Status st = Expect('"'); !st.ok()) return st;
    while (pos_ < line_.size() && line_[pos_] != '"') {
      char c = line_[pos_++];
      if (c == '\\') {
        if (pos_ >= line_.size()) break;
        c = line_[pos_++];
        if (c == 'n') {
          c = '\n';
        } else if (c != '"' && c != '\\') {
          pos_ -= 2;
          return Fail(std::string("unknown escape \\") + c);
        }
      }
      out += c;
    }
    if (pos_ >= line_.size()) return Fail("unterminated string");
    ++pos_;
    return Status::Ok();
  }

  // A positive token count (window=, chunk=).
  Status Count(int64_t& out) {
    SkipSpaces();
    const size_t start = pos_;
    int64_t value = 0;
    while (pos_ < line_.size() && line_[pos_] >= '0' && line_[pos_] <= '9') {
      if (value > (int64_t{1} << 50)) return Fail("count too large");
      value = value * 10 + (line_[pos_++] - '0');
    }
    if (pos_ == start || value <= 0) {
      pos_ = start;
      return Fail("expected a positive integer");
    }
    out = value;
    return Status::Ok();
  }

  Status ShapeValue(std::optional<Shape>& shape) {
    if (Status st = Expect('['); !st.ok()) return st;
    shape.emplace();
    if (Consume(']')) return Status::Ok();
    do {
      Result<SymExpr> dim = ParseSymExprAt(line_, pos_);
      if (!dim.ok()) return Fail(dim.error().message);
      shape->push_back(*std::move(dim));
    } while (Consume(','));
    return Expect(']');
  }

  std::string_view line_;
  int line_no_;
  Graph& graph_;
  size_t pos_ = 0;
};

}  // namespace

std::string PrintNode(const Node& node) {
  std::string out = "%" + node.name + " = " + node.op + "(";
  for (size_t i = 0; i < node.args.size(); ++i) {
    if (i > 0) out += ", ";
    out += "%" + node.args[i]->name;
  }
  out += ") {module=" + Quoted(node.module) + ", param=" + Quoted(node.param);
  if (node.param_shape) out += ", param_shape=" + ShapeToString(*node.param_shape);
  if (node.shape) out += ", shape=" + ShapeToString(*node.shape);
  out += ", group=" + Quoted(node.group);
  if (node.window > 0) out += ", window=" + std::to_string(node.window);
  if (node.chunk > 0) out += ", chunk=" + std::to_string(node.chunk);
  out += "}";
  return out;
}

std::string PrintGraph(const Graph& graph) {
  std::string out;
  for (const Node* node : graph) {
    out += PrintNode(*node);
    out += '\n';
  }
  return out;
}

Result<Graph> ParseGraph(std::string_view text) {
  Graph graph;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    if (Status st = LineParser(line, line_no, graph).Parse(); !st.ok()) return st.error();
  }
  return graph;
}

}  // namespace dsp::sim::graph
