// SPDX-License-Identifier: Apache-2.0
#include "core/json/document.h"

#include <gtest/gtest.h>

namespace dsp {
namespace {

const Diagnostic* FindId(const ParsedJson& p, const std::string& id) {
  for (const auto& d : p.diagnostics) {
    if (d.rule_id == id) return &d;
  }
  return nullptr;
}

TEST(JsonDocumentTest, RecordsValueAndKeyLocations) {
  auto p = ParseJsonLenient("x.json", "{\n  \"a\": {\"b\": 12,\n    \"c\": [1, \"two\", null]},\n  \"d\": true\n}\n");
  ASSERT_TRUE(p.ok);
  auto loc = p.doc.LocateValue("/a/b");
  EXPECT_EQ(loc.line, 2);
  EXPECT_EQ(loc.column, 14);
  EXPECT_EQ(p.doc.LocateKey("/a/b").column, 9);
  EXPECT_EQ(p.doc.LocateValue("/a/c/1").line, 3);
  EXPECT_EQ(p.doc.LocateValue("/a/c/1").column, 14);
  EXPECT_EQ(p.doc.LocateValue("/a/c/2").column, 21);
  EXPECT_EQ(p.doc.LocateValue("/d").line, 4);
  EXPECT_EQ(p.doc.LocateValue("/d").column, 8);
  // A missing key is located at the nearest existing parent.
  EXPECT_EQ(p.doc.LocateValue("/a/missing").column, 8);
}

TEST(JsonDocumentTest, CommentsAndTrailingCommasAreWarnings) {
  auto p = ParseJsonLenient("x.json", "{\n  // note\n  \"a\": [1, 2,],\n  /* block */ \"b\": 1,\n}\n");
  ASSERT_TRUE(p.ok);
  const Diagnostic* c = FindId(p, "json-comment");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->severity, Severity::kWarning);
  EXPECT_EQ(c->loc.line, 2);
  EXPECT_NE(c->message.find("1 more"), std::string::npos);
  const Diagnostic* t = FindId(p, "json-trailing-comma");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->loc.line, 3);
  EXPECT_EQ(t->loc.column, 13);
  EXPECT_EQ(p.doc.root["a"].size(), 2u);
  EXPECT_EQ(p.doc.LocateValue("/b").line, 4);
  EXPECT_EQ(p.doc.LocateValue("/b").column, 20);
}

TEST(JsonDocumentTest, CommentMarkersInsideStringsAreText) {
  auto p = ParseJsonLenient("x.json", R"({"url": "http://x/*y*/", "s": "a,]"})");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.doc.root["url"], "http://x/*y*/");
  EXPECT_EQ(p.doc.root["s"], "a,]");
  EXPECT_TRUE(p.diagnostics.empty());
}

TEST(JsonDocumentTest, DuplicateKeyIsAnError) {
  auto p = ParseJsonLenient("x.json", "{\"a\": 1,\n \"a\": 2}");
  ASSERT_TRUE(p.ok);
  const Diagnostic* d = FindId(p, "json-duplicate-key");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_EQ(d->pointer, "/a");
  EXPECT_EQ(d->loc.line, 2);
  EXPECT_EQ(d->loc.column, 2);
}

TEST(JsonDocumentTest, SyntaxErrorHasPosition) {
  auto p = ParseJsonLenient("x.json", "{\n  \"a\": 1\n  \"b\": 2\n}");
  EXPECT_FALSE(p.ok);
  const Diagnostic* d = FindId(p, "json-syntax");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->loc.line, 3);
  EXPECT_EQ(d->loc.column, 3);
}

struct BadInput {
  const char* name;
  std::string text;
};

class JsonBadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(JsonBadInputTest, EndsInAClearError) {
  auto p = ParseJsonLenient("x.json", GetParam().text);
  EXPECT_FALSE(p.ok);
  ASSERT_FALSE(p.diagnostics.empty());
  EXPECT_EQ(p.diagnostics.back().severity, Severity::kError);
  EXPECT_FALSE(p.diagnostics.back().message.empty());
  EXPECT_TRUE(p.diagnostics.back().loc.known());
}

INSTANTIATE_TEST_SUITE_P(
    EdgeCases, JsonBadInputTest,
    ::testing::Values(BadInput{"empty", ""}, BadInput{"whitespace", "  \n\t "},
                      BadInput{"truncated", "{\"zero_optimization\": {\"stage\": 2"},
                      BadInput{"truncated_string", "{\"a\": \"abc"},
                      BadInput{"unterminated_comment", "{\"a\": 1 /* never closed"},
                      BadInput{"deep_nesting", std::string(100000, '[') + std::string(100000, ']')},
                      BadInput{"deep_objects", [] {
                                 std::string s;
                                 for (int i = 0; i < 100000; ++i) s += "{\"a\":";
                                 return s + "1" + std::string(100000, '}');
                               }()},
                      BadInput{"float_overflow", "{\"a\": 1e400}"},
                      BadInput{"invalid_utf8_in_string", std::string("{\"a\": \"\xff\xfe\"}")},
                      BadInput{"invalid_utf8_outside", std::string("{\xc3\x28: 1}")},
                      BadInput{"nul_byte", std::string("{\"a\": 1}\0", 9)},
                      BadInput{"trailing_garbage", "{\"a\": 1} x"}),
    [](const auto& info) { return info.param.name; });

TEST(JsonDocumentTest, IntegerBeyond64BitsBecomesDouble) {
  auto p = ParseJsonLenient("x.json", "{\"a\": 123456789012345678901234567890, \"b\": -99999999999999999999}");
  ASSERT_TRUE(p.ok);
  EXPECT_TRUE(p.doc.root["a"].is_number_float());
  EXPECT_TRUE(p.doc.root["b"].is_number_float());
}

TEST(JsonDocumentTest, TenMegabyteFileParses) {
  std::string text = "{\"train_batch_size\": 8, \"padding\": [";
  while (text.size() < 10u << 20) text += "123456789, ";
  text += "0]}";
  auto p = ParseJsonLenient("big.json", text);
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.doc.root["train_batch_size"], 8);
}

TEST(JsonDocumentTest, DepthLimitIsConfigurable) {
  ParseOptions o;
  o.max_depth = 3;
  EXPECT_TRUE(ParseJsonLenient("x.json", "[[[1]]]", o).ok);
  auto p = ParseJsonLenient("x.json", "[[[[1]]]]", o);
  EXPECT_FALSE(p.ok);
  EXPECT_NE(FindId(p, "json-too-deep"), nullptr);
}

}  // namespace
}  // namespace dsp
