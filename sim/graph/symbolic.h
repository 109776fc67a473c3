// SPDX-License-Identifier: Apache-2.0
// Symbolic tensor dimensions for the graph IR: integers, symbols (B, S, H, P, ...), products and
// quotients, so shapes print the way the design documents write them ("S/P", "N/P", "2*H") and a
// pass can divide a dimension by a group size without knowing either number.
//
// Every expression is kept as one rational monomial, coefficient num/den times symbols with
// integer exponents. That normal form is what makes the simplifications free: x*1 -> x, x/1 -> x,
// 8/2 -> 4, S*P/P -> S; two expressions are equal when their monomials are. Sums are not needed
// by any shape the passes produce and are not representable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/util/result.h"

namespace dsp::sim::graph {

// Values for the symbols of a shape, e.g. {"B", 1}, {"S", 4096}, {"P", 8}.
using SymbolValues = std::map<std::string, int64_t, std::less<>>;

class SymExpr {
 public:
  SymExpr() = default;  // the constant 1
  SymExpr(int64_t value);  // NOLINT: implicit so that shapes can mix integers and symbols
  static SymExpr Symbol(std::string name);

  friend SymExpr operator*(const SymExpr& a, const SymExpr& b);
  friend SymExpr operator/(const SymExpr& a, const SymExpr& b);
  // Structural equality of the normal form: S*P/P == S, H*2 == 2*H.
  friend bool operator==(const SymExpr& a, const SymExpr& b);

  bool IsConstant() const { return factors_.empty(); }
  // True for a constant integer (den 1); `value` receives it.
  bool IsInteger(int64_t* value = nullptr) const;
  // Symbols with their exponents, in order of first appearance (that order is what prints).
  const std::vector<std::pair<std::string, int>>& factors() const { return factors_; }

  // The integer value with every symbol bound; an error when a symbol is unbound, the division
  // is not exact (S/P with S=10, P=4) or divides by zero.
  Result<int64_t> Evaluate(const SymbolValues& values) const;
  // The value as a real number: expected sizes such as B*S*K*EP/E rows per expert (uniform
  // routing) need not be whole. Errors: an unbound symbol, a division by zero.
  Result<double> EvaluateReal(const SymbolValues& values) const;

  // Numerator factors joined by '*' (coefficient first unless it is 1), then "/d" for every
  // denominator factor: "2*H", "S/P", "N*D/P/2", "7/2". ParseSymExpr reads it back to an equal
  // expression that prints the same.
  std::string ToString() const;

 private:
  void Multiply(const std::string& symbol, int exponent);
  void Normalize();

  int64_t num_ = 1;
  int64_t den_ = 1;  // > 0 after Normalize, except for a division by zero (den_ == 0)
  std::vector<std::pair<std::string, int>> factors_;
};

// Reads an expression: integers, identifiers ([A-Za-z_][A-Za-z0-9_]*), '*', '/' (left
// associative, so "S/P/Q" is S/(P*Q)) and parentheses; spaces are allowed between tokens. Parses
// from `pos` and stops before the first character that cannot continue the expression (',' or
// ']' inside a shape); on error `pos` points at the offending character.
Result<SymExpr> ParseSymExprAt(std::string_view text, size_t& pos);
// The whole text must be one expression; errors say "column N: ...".
Result<SymExpr> ParseSymExpr(std::string_view text);

using Shape = std::vector<SymExpr>;
std::string ShapeToString(const Shape& shape);  // "[B, S, H]", "[]" for a scalar

}  // namespace dsp::sim::graph
