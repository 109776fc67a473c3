// SPDX-License-Identifier: Apache-2.0
// The config parser reads what hjson-py 3.1.0 (DeepSpeed's loader, deepspeed/runtime/config.py
// DeepSpeedConfig.__init__) reads: each case below is hjson/decoder.py behaviour.
#include "core/json/hjson_parser.h"

#include <gtest/gtest.h>

namespace dsp {
namespace {

const Diagnostic* FindId(const ParsedJson& p, const std::string& id) {
  for (const auto& d : p.diagnostics) {
    if (d.rule_id == id) return &d;
  }
  return nullptr;
}

ParsedJson Parse(const std::string& text) { return ParseDeepSpeedConfig("ds.json", text); }

TEST(HjsonParserTest, PlainJsonHasNoFindings) {
  auto p = Parse("{\"a\": {\"b\": [1, \"two\", null, true]}, \"c\": -0.5}");
  ASSERT_TRUE(p.ok);
  EXPECT_TRUE(p.diagnostics.empty());
  EXPECT_EQ(p.doc.root["a"]["b"][1], "two");
  EXPECT_EQ(p.doc.root["c"], -0.5);
  EXPECT_EQ(p.doc.LocateValue("/a/b/2").column, 24);
  EXPECT_EQ(p.doc.LocateKey("/c").column, 38);
}

TEST(HjsonParserTest, HashCommentsAreComments) {
  auto p = Parse("{\n  # zero stage\n  \"stage\": 2 # after a number\n}\n");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.doc.root["stage"], 2);
  const Diagnostic* c = FindId(p, "json-comment");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->loc.line, 2);
  EXPECT_NE(c->message.find("1 more"), std::string::npos);
  EXPECT_EQ(FindId(p, "json-hjson-syntax"), nullptr);
}

TEST(HjsonParserTest, IntegralFloatsBecomeIntegersBelowTenBillion) {
  // decoder.py scantfnns: `if int(res) == res and abs(res) < 1e10: res = int(res)`.
  auto p = Parse("{\"a\": 2.0, \"b\": 1e3, \"c\": 0.25, \"d\": 1e10, \"e\": -0.0, \"f\": 5e8}");
  ASSERT_TRUE(p.ok);
  EXPECT_TRUE(p.doc.root["a"].is_number_integer());
  EXPECT_EQ(p.doc.root["b"], 1000);
  EXPECT_TRUE(p.doc.root["b"].is_number_integer());
  EXPECT_TRUE(p.doc.root["c"].is_number_float());
  EXPECT_TRUE(p.doc.root["d"].is_number_float());
  EXPECT_EQ(p.doc.root["e"], 0);
  EXPECT_EQ(p.doc.root["f"], 500000000);
  EXPECT_EQ(p.doc.float_literals.count("/b"), 1u);
  EXPECT_EQ(p.doc.float_literals.count("/c"), 0u);
  EXPECT_EQ(p.doc.float_literals.count("/d"), 0u);
}

TEST(HjsonParserTest, QuotelessValueRunsToTheEndOfTheLine) {
  auto p = Parse("{\n  \"train_batch_size\": global_batch_size,\n  \"s\": hello # not a comment\n  \"t\": True,\n}\n");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.doc.root["train_batch_size"], "global_batch_size,");
  EXPECT_EQ(p.doc.root["s"], "hello # not a comment");
  EXPECT_EQ(p.doc.root["t"], "True,");
  const Diagnostic* h = FindId(p, "json-hjson-syntax");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->severity, Severity::kWarning);
  EXPECT_EQ(h->loc.line, 2);
  EXPECT_NE(h->message.find("\"global_batch_size,\""), std::string::npos) << h->message;
}

TEST(HjsonParserTest, QuotelessValuesAreStrippedAsPythonStrips) {
  // str.strip() also removes Unicode spaces such as U+00A0 (no-break space) and U+3000.
  auto p = Parse("{\n  \"a\": cpu\xC2\xA0\n  \"b\": \xE3\x80\x80nvme \n}\n");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.doc.root["a"], "cpu");
  EXPECT_EQ(p.doc.root["b"], "nvme");
}

TEST(HjsonParserTest, UnquotedKeysOptionalCommasAndNoRootBraces) {
  auto p = Parse("// a config without braces\ntrain_batch_size: 16\nzero_optimization: {\n  stage: 3\n  overlap_comm: true\n}\n");
  ASSERT_TRUE(p.ok) << (p.diagnostics.empty() ? "" : p.diagnostics.back().message);
  EXPECT_EQ(p.doc.root["train_batch_size"], 16);
  EXPECT_EQ(p.doc.root["zero_optimization"]["stage"], 3);
  EXPECT_EQ(p.doc.root["zero_optimization"]["overlap_comm"], true);
  EXPECT_EQ(p.doc.LocateKey("/zero_optimization/stage").line, 4);
  EXPECT_EQ(p.doc.LocateValue("/zero_optimization/stage").column, 10);
  const Diagnostic* h = FindId(p, "json-hjson-syntax");
  ASSERT_NE(h, nullptr);
  EXPECT_NE(h->message.find("no braces"), std::string::npos);
  EXPECT_NE(h->message.find("unquoted key"), std::string::npos);
  EXPECT_NE(h->message.find("line break"), std::string::npos);
}

TEST(HjsonParserTest, MissingCommaBetweenLinesIsAccepted) {
  // The sample that used to be a syntax error: DeepSpeed reads it.
  auto p = Parse("{\n  \"zero_optimization\": {\n    \"stage\": 2\n    \"overlap_comm\": true\n  }\n}\n");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.doc.root["zero_optimization"]["overlap_comm"], true);
  EXPECT_NE(FindId(p, "json-hjson-syntax"), nullptr);
}

TEST(HjsonParserTest, SingleQuotesAndMultilineStrings) {
  auto p = Parse("{\n  'a': 'it\"s',\n  b: '''\n    line one\n    line two\n    '''\n}\n");
  ASSERT_TRUE(p.ok) << p.diagnostics.back().message;
  EXPECT_EQ(p.doc.root["a"], "it\"s");
  EXPECT_EQ(p.doc.root["b"], "line one\nline two");
}

TEST(HjsonParserTest, MultilineStringNeedsALineBreakSomewhere) {
  // mlscanstring's indentation walk runs off the text (IndexError) when there is no line break.
  EXPECT_FALSE(Parse("{a: '''x''', b: 1}").ok);
  EXPECT_TRUE(Parse("{\n  a: '''x'''\n}\n").ok);
}

TEST(HjsonParserTest, DuplicateKeysAreErrorsAtAnyDepth) {
  auto p = Parse("a: {x: 1\n x: 2}\n");
  ASSERT_TRUE(p.ok);
  const Diagnostic* d = FindId(p, "json-duplicate-key");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->pointer, "/a/x");
  EXPECT_EQ(d->loc.line, 2);
}

struct Rejected {
  const char* name;
  std::string text;
  int line;
  int column;
};

class HjsonRejectsTest : public ::testing::TestWithParam<Rejected> {};

TEST_P(HjsonRejectsTest, AtTheRightPlace) {
  auto p = Parse(GetParam().text);
  EXPECT_FALSE(p.ok);
  ASSERT_FALSE(p.diagnostics.empty());
  const Diagnostic& d = p.diagnostics.back();
  EXPECT_EQ(d.rule_id, "json-syntax");
  EXPECT_EQ(d.loc.line, GetParam().line) << d.message;
  EXPECT_EQ(d.loc.column, GetParam().column) << d.message;
}

INSTANTIATE_TEST_SUITE_P(
    Decoder, HjsonRejectsTest,
    ::testing::Values(
        // A quoteless value on one line swallows the closing brace ("Bad key name (eof)").
        Rejected{"nan_on_one_line", "{\"a\": NaN}", 1, 11},
        Rejected{"missing_value", "{\"a\": }", 1, 7},
        Rejected{"double_comma", "{\"a\": 1,, \"b\": 2}", 1, 9},
        Rejected{"space_in_key", "{\n  zero stage: 2\n}", 2, 7},
        Rejected{"missing_colon", "{\"a\" 1}", 1, 6},
        Rejected{"stray_brace", "a: 1\n}\n", 2, 1},
        Rejected{"overflow", "{\"a\": 1e400}", 1, 7},
        Rejected{"control_char", "{\"a\": \"x\ty\"}", 1, 9},
        Rejected{"bad_escape", "{\"a\": \"\\q\"}", 1, 8},
        Rejected{"truncated", "{\"a\": {\"b\": 1}", 1, 15},
        Rejected{"unterminated_multiline", "{a: '''abc", 1, 5}),
    [](const auto& info) { return info.param.name; });

TEST(HjsonParserTest, TruncatedObjectNamesWhereItOpened) {
  auto p = Parse("{\n  \"zero_optimization\": {\n    \"stage\": 2\n");
  ASSERT_FALSE(p.ok);
  EXPECT_NE(p.diagnostics.back().message.find("line 2, column 24"), std::string::npos) << p.diagnostics.back().message;
}

TEST(HjsonParserTest, BomAndEmptyFiles) {
  EXPECT_TRUE(Parse("\xEF\xBB\xBF{\"a\": 1}").ok);
  auto empty = Parse("  # only a comment\n");
  EXPECT_FALSE(empty.ok);
  EXPECT_NE(empty.diagnostics.back().message.find("empty"), std::string::npos);
  auto bad = Parse(std::string("{\"a\": \"\xff\"}"));
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.diagnostics.back().message.find("UTF-8"), std::string::npos);
}

TEST(HjsonParserTest, DepthIsBounded) {
  auto p = Parse(std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_FALSE(p.ok);
  EXPECT_NE(FindId(p, "json-too-deep"), nullptr);
}

}  // namespace
}  // namespace dsp
