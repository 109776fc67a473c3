// SPDX-License-Identifier: Apache-2.0
// SymExpr: the normal form simplifies, prints as the design documents write shapes, parses back.
#include "sim/graph/symbolic.h"

#include <gtest/gtest.h>

namespace dsp::sim::graph {
namespace {

const SymExpr S = SymExpr::Symbol("S");
const SymExpr P = SymExpr::Symbol("P");
const SymExpr H = SymExpr::Symbol("H");
const SymExpr N = SymExpr::Symbol("N");

std::string Reprint(std::string_view text) {
  Result<SymExpr> e = ParseSymExpr(text);
  if (!e.ok()) return "error: " + e.error().message;
  return e->ToString();
}

TEST(SymbolicTest, PrintsLikeTheDesignDocuments) {
  EXPECT_EQ((S / P).ToString(), "S/P");
  EXPECT_EQ((N / P).ToString(), "N/P");
  EXPECT_EQ((SymExpr(2) * H).ToString(), "2*H");
  EXPECT_EQ((H * 2).ToString(), "2*H");
  EXPECT_EQ((N * SymExpr::Symbol("D") / P).ToString(), "N*D/P");
  EXPECT_EQ((S / P / 2).ToString(), "S/2/P");
  EXPECT_EQ((SymExpr(1) / P).ToString(), "1/P");
  EXPECT_EQ(SymExpr(7).ToString(), "7");
  EXPECT_EQ(SymExpr().ToString(), "1");
}

TEST(SymbolicTest, SimplifiesObviousCases) {
  EXPECT_EQ((S * 1).ToString(), "S");
  EXPECT_EQ((S / 1).ToString(), "S");
  EXPECT_EQ((SymExpr(8) / 2).ToString(), "4");
  EXPECT_EQ((SymExpr(7) / 2).ToString(), "7/2");
  EXPECT_EQ((SymExpr(6) / 4 * 2).ToString(), "3");
  EXPECT_EQ((S * P / P).ToString(), "S");
  EXPECT_EQ((S * 0).ToString(), "0");
  EXPECT_EQ((S * S / S).ToString(), "S");
  EXPECT_EQ((S * S).ToString(), "S*S");
  EXPECT_EQ(S * P / P, S);
  EXPECT_EQ(H * 2 * N, SymExpr(2) * N * H);
  EXPECT_FALSE(S / P == S);
  int64_t v = 0;
  EXPECT_TRUE((SymExpr(12) / 3).IsInteger(&v));
  EXPECT_EQ(v, 4);
  EXPECT_FALSE((SymExpr(7) / 2).IsInteger());
  EXPECT_FALSE(S.IsInteger());
}

TEST(SymbolicTest, ParsesAndReprints) {
  EXPECT_EQ(Reprint("S/P"), "S/P");
  EXPECT_EQ(Reprint("2*H"), "2*H");
  EXPECT_EQ(Reprint("H * 2"), "2*H");
  EXPECT_EQ(Reprint("S*P/P"), "S");
  EXPECT_EQ(Reprint("S/(P*Q)"), "S/P/Q");
  EXPECT_EQ(Reprint("S/P/Q"), "S/P/Q");
  EXPECT_EQ(Reprint("(N*D)/P"), "N*D/P");
  EXPECT_EQ(Reprint("8/2"), "4");
  EXPECT_EQ(Reprint("B*S"), "B*S");
  EXPECT_EQ(Reprint("FE_2"), "FE_2");
  EXPECT_EQ((SymExpr(-2) * S).ToString(), "-2*S");
  EXPECT_EQ((S / -2).ToString(), "-1*S/2");
  for (std::string_view printed :
       {"S/2/P", "1/P", "7/2", "N*D/P/P", "0", "-2*S", "-1*S/2", "-3"}) {
    EXPECT_EQ(Reprint(printed), printed);
  }
}

TEST(SymbolicTest, ParseErrorsGiveTheColumn) {
  EXPECT_EQ(Reprint("S+P"), "error: column 2: unexpected '+'");
  EXPECT_EQ(Reprint("S/"), "error: column 3: expected a number, a symbol or '('");
  EXPECT_EQ(Reprint("(S"), "error: column 3: expected ')'");
  EXPECT_EQ(Reprint("S/0"), "error: column 3: division by zero");
  EXPECT_EQ(Reprint(""), "error: column 1: expected a number, a symbol or '('");
  EXPECT_EQ(Reprint("99999999999999999999"), "error: column 1: integer too large");
}

TEST(SymbolicTest, EvaluatesWithSymbolValues) {
  const SymbolValues values{{"S", 4096}, {"P", 8}, {"H", 8192}, {"N", 64}};
  EXPECT_EQ((S / P).Evaluate(values).value(), 512);
  EXPECT_EQ((SymExpr(2) * H).Evaluate(values).value(), 16384);
  EXPECT_EQ((S * S / P).Evaluate(values).value(), 4096 * 512);
  Result<int64_t> uneven = (N / SymExpr(3)).Evaluate(values);
  ASSERT_FALSE(uneven.ok());
  EXPECT_EQ(uneven.error().message, "N/3 is not a whole number (64/3)");
  Result<int64_t> unbound = (S / SymExpr::Symbol("Q")).Evaluate(values);
  ASSERT_FALSE(unbound.ok());
  EXPECT_EQ(unbound.error().message, "symbol Q has no value in S/Q");
  Result<int64_t> zero = (S / P).Evaluate({{"S", 8}, {"P", 0}});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().message, "division by zero in S/P");
}

TEST(SymbolicTest, ShapesPrintInBrackets) {
  EXPECT_EQ(ShapeToString({SymExpr::Symbol("B"), N / P, S, SymExpr::Symbol("D")}),
            "[B, N/P, S, D]");
  EXPECT_EQ(ShapeToString({}), "[]");
}

TEST(SymExprTest, EvaluateRealAllowsExpectedFractions) {
  auto rows = ParseSymExpr("B*S*K*EP/E");
  ASSERT_TRUE(rows.ok());
  const SymbolValues v = {{"B", 1}, {"S", 4096}, {"K", 4}, {"EP", 4}, {"E", 60}};
  EXPECT_FALSE(rows->Evaluate(v).ok());  // 65536/60 is not whole
  auto real = rows->EvaluateReal(v);
  ASSERT_TRUE(real.ok());
  EXPECT_DOUBLE_EQ(*real, 65536.0 / 60);
  EXPECT_FALSE(rows->EvaluateReal({{"B", 1}}).ok());  // unbound symbols
  EXPECT_FALSE(rows->EvaluateReal({{"B", 1}, {"S", 1}, {"K", 1}, {"EP", 1}, {"E", 0}}).ok());
}

}  // namespace
}  // namespace dsp::sim::graph
