// SPDX-License-Identifier: Apache-2.0
#include "sim/graph/symbolic.h"

#include <cmath>

#include <algorithm>
#include <cctype>
#include <numeric>

namespace dsp::sim::graph {

SymExpr::SymExpr(int64_t value) : num_(value) {}

SymExpr SymExpr::Symbol(std::string name) {
  SymExpr e;
  e.factors_.emplace_back(std::move(name), 1);
  return e;
}

void SymExpr::Multiply(const std::string& symbol, int exponent) {
  for (auto& [name, exp] : factors_) {
    if (name == symbol) {
      exp += exponent;
      return;
    }
  }
  factors_.emplace_back(symbol, exponent);
}

void SymExpr::Normalize() {
  // Cancelled symbols (S*P/P) leave exponent 0 behind; dropping them is the simplification.
  std::erase_if(factors_, [](const auto& f) { return f.second == 0; });
  if (num_ == 0) {
    // 0*S is 0 whatever S is.
    factors_.clear();
    den_ = den_ == 0 ? 0 : 1;
    return;
  }
  if (den_ == 0) return;  // kept as written so Evaluate can report it
  if (den_ < 0) {
    num_ = -num_;
    den_ = -den_;
  }
  const int64_t g = std::gcd(num_, den_);
  num_ /= g;
  den_ /= g;
}

SymExpr operator*(const SymExpr& a, const SymExpr& b) {
  SymExpr r = a;
  r.num_ *= b.num_;
  r.den_ *= b.den_;
  for (const auto& [name, exp] : b.factors_) r.Multiply(name, exp);
  r.Normalize();
  return r;
}

SymExpr operator/(const SymExpr& a, const SymExpr& b) {
  SymExpr r = a;
  r.num_ *= b.den_;
  r.den_ *= b.num_;
  for (const auto& [name, exp] : b.factors_) r.Multiply(name, -exp);
  r.Normalize();
  return r;
}

bool operator==(const SymExpr& a, const SymExpr& b) {
  if (a.num_ != b.num_ || a.den_ != b.den_ || a.factors_.size() != b.factors_.size()) return false;
  // Order of appearance is presentation only: H*2*N equals 2*N*H.
  auto sa = a.factors_;
  auto sb = b.factors_;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  return sa == sb;
}

bool SymExpr::IsInteger(int64_t* value) const {
  if (!factors_.empty() || den_ != 1) return false;
  if (value != nullptr) *value = num_;
  return true;
}

Result<int64_t> SymExpr::Evaluate(const SymbolValues& values) const {
  int64_t num = num_;
  int64_t den = den_;
  for (const auto& [name, exp] : factors_) {
    auto it = values.find(name);
    if (it == values.end()) return Error{"symbol " + name + " has no value in " + ToString()};
    for (int i = 0; i < std::abs(exp); ++i) (exp > 0 ? num : den) *= it->second;
  }
  if (den == 0) return Error{"division by zero in " + ToString()};
  if (num % den != 0) {
    return Error{ToString() + " is not a whole number (" + std::to_string(num) + "/" +
                 std::to_string(den) + ")"};
  }
  return num / den;
}

Result<double> SymExpr::EvaluateReal(const SymbolValues& values) const {
  double v = static_cast<double>(num_) / static_cast<double>(den_ == 0 ? 1 : den_);
  if (den_ == 0) return Error{"division by zero in " + ToString()};
  for (const auto& [name, exp] : factors_) {
    auto it = values.find(name);
    if (it == values.end()) return Error{"symbol " + name + " has no value in " + ToString()};
    if (it->second == 0 && exp < 0) return Error{"division by zero in " + ToString()};
    v *= std::pow(static_cast<double>(it->second), exp);
  }
  return v;
}

std::string SymExpr::ToString() const {
  std::string out;
  auto append = [&out](const std::string& part) {
    if (!out.empty()) out += '*';
    out += part;
  };
  bool has_numerator_symbol = std::any_of(factors_.begin(), factors_.end(),
                                          [](const auto& f) { return f.second > 0; });
  if (num_ != 1 || !has_numerator_symbol) append(std::to_string(num_));
  for (const auto& [name, exp] : factors_) {
    for (int i = 0; i < exp; ++i) append(name);
  }
  // Appending piecewise (not "/" + x) also avoids GCC 12's false -Wrestrict on operator+.
  if (den_ != 1) (out += '/') += std::to_string(den_);
  for (const auto& [name, exp] : factors_) {
    for (int i = 0; i < -exp; ++i) (out += '/') += name;
  }
  return out;
}

namespace {

// Recursive descent over expr := term (('*' | '/') term)*,
// term := int | ident | '(' expr ')' | '-' term.
class SymParser {
 public:
  SymParser(std::string_view text, size_t& pos) : text_(text), pos_(pos) {}

  Result<SymExpr> Expr() {
    Result<SymExpr> left = Term();
    if (!left.ok()) return left;
    SymExpr value = *left;
    while (true) {
      SkipSpaces();
      if (pos_ >= text_.size() || (text_[pos_] != '*' && text_[pos_] != '/')) return value;
      const char op = text_[pos_++];
      const size_t operand_at = (SkipSpaces(), pos_);
      Result<SymExpr> right = Term();
      if (!right.ok()) return right;
      if (op == '/' && right->IsInteger() && *right == SymExpr(0)) {
        pos_ = operand_at;
        return Error{"division by zero"};
      }
      value = op == '*' ? value * *right : value / *right;
    }
  }

 private:
  void SkipSpaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }

  Result<SymExpr> Term() {
    SkipSpaces();
    if (pos_ >= text_.size()) return Error{"expected a number, a symbol or '('"};
    const char c = text_[pos_];
    if (c == '-') {
      // Only so that a negative coefficient ("-1*S") reads back; shapes never need one.
      ++pos_;
      Result<SymExpr> operand = Term();
      if (!operand.ok()) return operand;
      return SymExpr(-1) * *operand;
    }
    if (c == '(') {
      ++pos_;
      Result<SymExpr> inner = Expr();
      if (!inner.ok()) return inner;
      SkipSpaces();
      if (pos_ >= text_.size() || text_[pos_] != ')') return Error{"expected ')'"};
      ++pos_;
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t value = 0;
      const size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (value > (INT64_MAX - 9) / 10) {
          pos_ = start;
          return Error{"integer too large"};
        }
        value = value * 10 + (text_[pos_++] - '0');
      }
      return SymExpr(value);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
        ++pos_;
      }
      return SymExpr::Symbol(std::string(text_.substr(start, pos_ - start)));
    }
    return Error{std::string("unexpected '") + c + "' in a dimension"};
  }

  std::string_view text_;
  size_t& pos_;
};

}  // namespace

Result<SymExpr> ParseSymExprAt(std::string_view text, size_t& pos) {
  return SymParser(text, pos).Expr();
}

Result<SymExpr> ParseSymExpr(std::string_view text) {
  size_t pos = 0;
  Result<SymExpr> e = ParseSymExprAt(text, pos);
  if (e.ok()) {
    while (pos < text.size() && text[pos] == ' ') ++pos;
    if (pos < text.size()) e = Error{std::string("unexpected '") + text[pos] + "'"};
  }
  if (!e.ok()) return Error{"column " + std::to_string(pos + 1) + ": " + e.error().message};
  return e;
}

std::string ShapeToString(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += shape[i].ToString();
  }
  return out + "]";
}

}  // namespace dsp::sim::graph
