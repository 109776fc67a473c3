// SPDX-License-Identifier: Apache-2.0
// Symbol substitution on shapes shared by the passes: "S -> S/P" in every dimension that mentions
// S. SymExpr is a monomial, so substituting a symbol by a quotient is a multiplication.
#pragma once

#include <string_view>

#include "sim/graph/symbolic.h"

namespace dsp::sim::passes {

// The exponent of `symbol` in `e` (0 when absent).
inline int SymbolExponent(const graph::SymExpr& e, std::string_view symbol) {
  for (const auto& [name, exp] : e.factors()) {
    if (name == symbol) return exp;
  }
  return 0;
}

// `e` with `symbol` replaced by symbol/by: S*H -> S*H/P, S -> S/P; unchanged without the symbol.
inline graph::SymExpr DivideSymbol(const graph::SymExpr& e, std::string_view symbol,
                                   const graph::SymExpr& by) {
  graph::SymExpr out = e;
  for (int i = SymbolExponent(e, symbol); i > 0; --i) out = out / by;
  for (int i = SymbolExponent(e, symbol); i < 0; ++i) out = out * by;
  return out;
}

// `e` with every power of `from` replaced by the same power of `to`, in its place, so "N*D"
// becomes "N0*D" (not "D*N0"): the coefficient, then the factors in their printed order.
inline graph::SymExpr ReplaceSymbol(const graph::SymExpr& e, std::string_view from, std::string_view to) {
  graph::SymExpr symbols(1);
  for (const auto& [name, exp] : e.factors()) {
    for (int i = 0; i < exp; ++i) symbols = symbols * graph::SymExpr::Symbol(name);
    for (int i = 0; i > exp; --i) symbols = symbols / graph::SymExpr::Symbol(name);
  }
  graph::SymExpr out = e / symbols;  // the coefficient alone
  for (const auto& [name, exp] : e.factors()) {
    const graph::SymExpr factor = graph::SymExpr::Symbol(name == from ? std::string(to) : name);
    for (int i = 0; i < exp; ++i) out = out * factor;
    for (int i = 0; i > exp; --i) out = out / factor;
  }
  return out;
}

}  // namespace dsp::sim::passes
