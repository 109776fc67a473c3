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

}  // namespace dsp::sim::passes
