// SPDX-License-Identifier: Apache-2.0
// The Python `re` dialect ds-plan evaluates AutoTP layer_specs and AutoEP moe_layer_pattern in
// (PCRE2 underneath). Every expectation in the tables below was computed with CPython 3.11's re:
// re.compile accepts or raises re.error (the message is re.error's own unless a comment gives
// it), re.match / re.search find a match or not. Python 3.9/3.10 differ only in kPython311.
#include "core/rules/python_regex.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dsp {
namespace {

struct MatchCase {
  const char* pattern;
  std::vector<std::pair<std::string, bool>> subjects;  // subject, whether Python finds a match
};
struct ErrorCase {
  const char* pattern;
  const char* error;  // ds-plan's message
};

const MatchCase kAccepted[] = {
    {R"re(.*\.o_proj)re", {{"model.layers.0.self_attn.o_proj.weight", true}, {"o_proj", false}}},
    {R"re(self_attn\.o_proj)re",
     {{"model.layers.0.self_attn.o_proj.weight", false}, {"self_attn.o_proj.weight", true}}},
    {R"re(.*\.(?P<proj>[qk])_proj\.weight$)re",
     {{"model.layers.1.self_attn.k_proj.weight", true},
      {"model.layers.1.self_attn.v_proj.weight", false}}},
    {R"re(.*\.experts\.\d+\.(gate|up)_proj\.weight$)re",
     {{"model.layers.3.mlp.experts.17.up_proj.weight", true},
      {"model.layers.3.mlp.experts.17.down_proj.weight", false}}},
    {R"re((?P<x>a)b(?P=x))re", {{"aba", true}, {"abb", false}}},
    {R"re((a)\1)re", {{"aa", true}, {"ab", false}}},
    {R"re(((a)|b)\2)re", {{"aa", true}, {"bb", false}}},
    {R"re((a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\10)re", {{"abcdefghijj", true}, {"abcdefghija0", false}}},
    {R"re(\Amodel\.norm\.weight\Z)re",
     {{"model.norm.weight", true}, {"model.norm.weight\n", false}, {"model.norm.weight2", false}}},
    {R"re(model\.norm\.weight$)re", {{"model.norm.weight", true}, {"model.norm.weight\n", true}}},
    {R"re(a$\nb)re", {{"a\nb", false}}},
    {R"re((?m)a$\nb)re", {{"a\nb", true}}},
    {R"re(.*x)re", {{"\nx", false}, {"ax", true}}},
    {R"re((?s).*x)re", {{"\nx", true}}},
    {R"re(.)re", {{"\r", true}, {"\n", false}}},
    {R"re((?i)LM_HEAD)re", {{"lm_head.weight", true}}},
    {R"re((?i:a)b)re", {{"Ab", true}, {"AB", false}}},
    {R"re((?i)(?-i:a)b)re", {{"aB", true}, {"AB", false}}},
    {R"re((?i)k)re", {{"K", true}}},
    {R"re(a{,2}b)re", {{"aab", true}, {"aaab", false}, {"b", true}}},
    {R"re(a{,}b)re", {{"aaaab", true}}},
    {R"re(a{})re", {{"a{}", true}}},
    {R"re(a{1,2)re", {{"a{1,2", true}}},
    {R"re(a{1, 2})re", {{"a{1, 2}", true}, {"aa", false}}},
    {R"re({)re", {{"{", true}}},
    {R"re(x{a})re", {{"x{a}", true}}},
    {R"re([]a]+)re", {{"]a]", true}}},
    {R"re([^]a])re", {{"b", true}, {"]", false}}},
    {R"re([a-])re", {{"-", true}}},
    {R"re([\]])re", {{"]", true}}},
    {R"re([[:alpha:]])re", {{"a]", true}, {"a", false}, {"[]", true}}},
    {R"re([:alpha:])re", {{":", true}, {"b", false}}},
    {R"re([.a.])re", {{".", true}}},
    {R"re([=a=])re", {{"=", true}}},
    {R"re(\v)re",
     {{"\x0b"
       "",
       true},
      {"\n", false}}},
    {R"re([\v])re",
     {{"\x0b"
       "",
       true}}},
    {R"re(\x41\u0042\U00000043)re", {{"ABC", true}}},
    {R"re([\x41-\x43]+)re", {{"ABCD", true}, {"D", false}}},
    {R"re(\101)re", {{"A", true}}},
    {R"re(\01)re",
     {{"\x01"
       "",
       true}}},
    {R"re([\1])re",
     {{"\x01"
       "",
       true},
      {"1", false}}},
    {R"re([\b])re",
     {{"\x08"
       "",
       true},
      {"b", false}}},
    {R"re(x\_y)re", {{"x_y", true}}},
    {R"re(\#\ \:)re", {{"# :", true}}},
    {R"re(\é)re", {{"é", true}}},
    {R"re(\w)re", {{"é", true}, {"_", true}}},
    {R"re((?a)\w)re", {{"é", false}, {"a", true}}},
    {R"re((?u)\w)re", {{"é", true}}},
    {R"re(\d)re", {{"٣", true}}},
    {R"re((?a)\d)re", {{"٣", false}}},
    {R"re(^.$)re", {{"é", true}}},
    {R"re(é+)re", {{"éé", true}}},
    {R"re((?x) a b # comment (?<n>\k)re", {{"ab", true}, {"a b", false}}},
    {"(?x)a#b\nc", {{"ac", true}}},
    {R"re((?x)[ ])re", {{" ", true}}},
    {R"re((?x)a\ b)re", {{"a b", true}}},
    {R"re((?x:a b)c d)re", {{"abc d", true}, {"abcd", false}}},
    {R"re((?xx)[a b])re", {{" ", true}}},
    {R"re((a)(?<=\1))re", {{"a", true}}},
    {R"re((?<=ab|cd))re", {{"", false}}},
    {R"re((?=a)*b)re", {{"b", true}}},
    {R"re((?!x)\w)re", {{"a", true}, {"x", false}}},
    {R"re((x)?(?(1)a|b))re", {{"xa", true}, {"b", true}, {"xb", false}}},
    {R"re((?P<n>x)?(?(n)a|b))re", {{"xa", true}, {"b", true}}},
    {R"re((?(1)a|b)(x))re", {{"bx", true}}},
    {R"re((?#comment)(?i)a)re", {{"A", true}}},
    {R"re((?i)(?s)a.)re", {{"A\n", true}}},
    {R"re(a|)re", {{"b", true}}},
    {R"re((?#a\)b)c)re", {{"c", true}}},
    {"(?x)a#b\\\nc\nd", {{"ad", true}, {"acd", false}}},
    {R"re(\B)re", {{"", false}}},
    {R"re(a?\B)re", {{"", false}, {"ab", true}}},
    {R"re((?m)\n^)re", {{"\n", true}}},
    {R"re((?a)\W)re", {{"é", true}, {"😀", true}, {"a", false}}},
    {R"re((?a)\D\S)re", {{"éé", true}}},
};
const MatchCase kSearched[] = {
    {R"re(self_attn\.o_proj)re",
     {{"model.layers.0.self_attn.o_proj.weight", true}, {"mlp.down_proj.weight", false}}},
    {R"re((?<=a)b)re", {{"ab", true}, {"b", false}}},
    {R"re(^b)re", {{"ab", false}}},
    {R"re(\Ab)re", {{"ab", false}}},
    {R"re((?m)^b)re", {{"a\nb", true}}},
    {R"re(\bo_proj)re", {{"self_attn.o_proj", true}, {"self_attno_proj", false}}},
    {R"re(é\b)re", {{"aé.", true}, {"éa", false}}},
};
const ErrorCase kRejected[] = {
    {R"re((?<name>x))re", "unknown extension ?<n at position 1"},
    {R"re((?'name'x))re", "unknown extension ?' at position 1"},
    {R"re((?P>n))re", "unknown extension ?P> at position 1"},
    {R"re((?|a|b))re", "unknown extension ?| at position 1"},
    {R"re((?R))re", "unknown extension ?R at position 1"},
    {R"re((?1))re", "unknown extension ?1 at position 1"},
    {R"re((?&n))re", "unknown extension ?& at position 1"},
    {R"re((?C1))re", "unknown extension ?C at position 1"},
    {R"re((?^)a)re", "unknown extension ?^ at position 1"},
    {R"re((?n)a)re", "unknown extension ?n at position 1"},
    {R"re((?U)a)re", "unknown extension ?U at position 1"},
    {R"re((*FAIL))re", "nothing to repeat at position 1"},
    {R"re((*UTF)a)re", "nothing to repeat at position 1"},
    {R"re(\k<n>)re", "bad escape \\k at position 0"},
    {R"re((?P<n>a)|\k<n>)re", "bad escape \\k at position 9"},
    {R"re(\g<1>)re", "bad escape \\g at position 0"},
    {R"re(\K)re", "bad escape \\K at position 0"},
    {R"re(\R)re", "bad escape \\R at position 0"},
    {R"re(\X)re", "bad escape \\X at position 0"},
    {R"re(\h)re", "bad escape \\h at position 0"},
    {R"re(\e)re", "bad escape \\e at position 0"},
    {R"re(\cA)re", "bad escape \\c at position 0"},
    {R"re(\G)re", "bad escape \\G at position 0"},
    {R"re(\z)re", "bad escape \\z at position 0"},
    {R"re(\C)re", "bad escape \\C at position 0"},
    {R"re(\Qa\E)re", "bad escape \\Q at position 0"},
    {R"re(\o{101})re", "bad escape \\o at position 0"},
    {R"re(\p{L})re", "bad escape \\p at position 0"},
    {R"re([\p])re", "bad escape \\p at position 1"},
    {R"re([\A])re", "bad escape \\A at position 1"},
    {R"re([\Z])re", "bad escape \\Z at position 1"},
    {R"re(\x{41})re", "incomplete escape \\x at position 0"},
    {R"re(\x4)re", "incomplete escape \\x4 at position 0"},
    {R"re(\u004)re", "incomplete escape \\u004 at position 0"},
    {R"re(\U0000004)re", "incomplete escape \\U0000004 at position 0"},
    {R"re(\U00110000)re", "bad escape \\U00110000 at position 0"},
    {R"re(\N)re", "missing { at position 2"},
    {R"re([\8])re", "bad escape \\8 at position 1"},
    {R"re([\400])re", "octal escape value \\400 outside of range 0-0o377 at position 1"},
    {R"re(\400)re", "octal escape value \\400 outside of range 0-0o377 at position 0"},
    {R"re(\8)re", "invalid group reference 8 at position 1"},
    {R"re(\1(a))re", "invalid group reference 1 at position 1"},
    {R"re((a)\2)re", "invalid group reference 2 at position 4"},
    {R"re((a\1))re", "cannot refer to an open group at position 2"},
    {R"re((a)\10)re", "invalid group reference 10 at position 4"},
    {R"re((?P=x)(?P<x>a))re", "unknown group name 'x' at position 4"},
    {R"re((?P<x>a)(?P<x>b))re",
     "redefinition of group name 'x' as group 2; was group 1 at position 12"},
    {R"re((?P<1x>a))re", "bad character in group name '1x' at position 4"},
    {R"re((?P<)re", "missing group name at position 4"},
    {R"re((?<=(a)\1))re",
     "cannot refer to group defined in the same lookbehind subpattern at position 9"},
    {R"re(a**)re", "multiple repeat at position 2"},
    {R"re(a*?+)re", "multiple repeat at position 3"},
    {R"re(a{2}{3})re", "multiple repeat at position 4"},
    {R"re(a*{2})re", "multiple repeat at position 2"},
    {R"re((?x)a* ?)re", "multiple repeat at position 7"},
    {R"re(a(?i)b)re", "global flags not at the start of the expression at position 1"},
    {R"re(a|(?i)b)re", "global flags not at the start of the expression at position 2"},
    {R"re(((?i)a))re", "global flags not at the start of the expression at position 1"},
    {R"re( (?i)a)re", "global flags not at the start of the expression at position 1"},
    {R"re((?-i)a)re", "missing : at position 4"},
    {R"re((?L)a)re", "bad inline flags: cannot use 'L' flag with a str pattern at position 3"},
    {R"re((?au)a)re", "bad inline flags: flags 'a', 'u' and 'L' are incompatible at position 4"},
    {R"re((?-a:x))re", "bad inline flags: cannot turn off flags 'a', 'u' and 'L' at position 4"},
    {R"re((?i-i:x))re", "bad inline flags: flag turned on and off at position 5"},
    {R"re((?i)re", "missing -, : or ) at position 3"},
    {R"re((?(2)a|b)(x))re", "invalid group reference 2 at position 3"},
    {R"re((?(n)a|b))re", "unknown group name 'n' at position 3"},
    {R"re((?(R)a|b))re", "unknown group name 'R' at position 3"},
    {R"re((?(DEFINE)a))re", "unknown group name 'DEFINE' at position 3"},
    {R"re((?(?=a)a|b))re", "bad character in group name '?=a' at position 3"},
    {R"re((x)(?(0)a))re", "bad group number at position 6"},
    {R"re([])re", "unterminated character set at position 0"},
    {R"re((a)re", "missing ), unterminated subpattern at position 0"},
    {R"re(a))re", "unbalanced parenthesis at position 1"},
    {R"re((?)re", "unexpected end of pattern at position 2"},
    {R"re((?#abc)re", "missing ), unterminated comment at position 0"},
    {R"re(a\)re", "bad escape (end of pattern) at position 1"},
    {R"re(\N{FULL STOP}()re", "missing ), unterminated subpattern at position 13"},
    {R"re(\N{})re", "missing character name at position 3"},
    {R"re((?#\))re", "missing ), unterminated comment at position 0"},
    {R"re((?x)a#\)re", "bad escape (end of pattern) at position 6"},
    {R"re((?a)(?u))re", "ASCII and UNICODE flags are incompatible"},
    {R"re((?P<a b>x))re", "bad character in group name 'a b' at position 4"},
    {R"re((?P<it's>x))re", "bad character in group name \"it's\" at position 4"},
    {"a\n(", "missing ), unterminated subpattern at position 2 (line 2, column 1)"},
    {"a\n\\q", "bad escape \\q at position 2 (line 2, column 1)"},
    {R"re(\b*)re", "nothing to repeat at position 2"},
    {R"re({1}a)re", "nothing to repeat at position 0"},
    {R"re((?:*a))re", "nothing to repeat at position 3"},
    {R"re(a|?)re", "nothing to repeat at position 2"},
    {R"re((?i)+)re", "nothing to repeat at position 4"},
    // re.error: min repeat greater than max repeat at position 2
    {R"re(a{3,1})re", "numbers out of order in {} quantifier at position 1"},
    // re.error: bad character range z-a at position 1
    {R"re([z-a])re", "range out of order in character class at position 3"},
    // re.error: bad character range z-a at position 5
    {R"re(\x41[z-a])re", "range out of order in character class at position 7"},
    // re.error: bad character range a-\d at position 1
    {R"re([a-\d])re", "invalid range in character class at position 5"},
    // re.error: conditional backref with more than two branches at position 11
    {R"re((x)(?(1)a|b|c))re",
     "conditional subpattern contains more than two branches at position 3"},
    // re.error: look-behind requires fixed-width pattern
    {R"re((?<=a+))re", "lookbehind assertion is not fixed length at position 0"},
    // re.error: look-behind requires fixed-width pattern
    {R"re((?<=a|bc))re",
     "look-behind requires fixed-width pattern (its alternatives differ in width) at position 0"},
    // re.error: look-behind requires fixed-width pattern
    {R"re((?<=\b|a))re",
     "look-behind requires fixed-width pattern (its alternatives differ in width) at position 0"},
    {R"re(x(?i)(?<!ab|c))re", "global flags not at the start of the expression at position 1"},
    {R"re(é\q)re", "bad escape \\q at position 1"},
};
const char* const kUnsupported[] = {
    R"re(\N{LATIN SMALL LETTER A})re",
    R"re([\N{LATIN SMALL LETTER A}])re",
    R"re(a{70000})re",
    R"re((?P<aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa>x))re",
    R"re((?a:x))re",
    R"re((?t)a)re",
    R"re((x)(?(+1)a|b))re",
    R"re((?P<R>x)(?(R)a|b))re",
    R"re(\ud800)re",
};
const MatchCase kPython311[] = {
    {R"re((?>a+)b)re", {{"aab", true}}},  {R"re(a*+a)re", {{"aaa", false}}},
    {R"re(a++b)re", {{"aab", true}}},     {R"re(a?+)re", {{"a", true}}},
    {R"re(a{1,2}+b)re", {{"aab", true}}},
};

TEST(PythonRegexTest, MatchesLikeReMatch) {
  for (const auto& c : kAccepted) {
    PythonRegex re = CompilePythonRegex(c.pattern);
    ASSERT_TRUE(re.usable()) << c.pattern << ": " << re.error << re.unsupported;
    EXPECT_EQ(re.python311, "") << c.pattern;
    for (const auto& [subject, match] : c.subjects) {
      EXPECT_EQ(re.MatchPrefix(subject), match) << c.pattern << " on \"" << subject << "\"";
    }
  }
}

TEST(PythonRegexTest, SearchesLikeReSearch) {
  for (const auto& c : kSearched) {
    PythonRegex re = CompilePythonRegex(c.pattern);
    ASSERT_TRUE(re.usable()) << c.pattern << ": " << re.error;
    for (const auto& [subject, found] : c.subjects) {
      EXPECT_EQ(re.Search(subject), found) << c.pattern << " in \"" << subject << "\"";
    }
  }
}

TEST(PythonRegexTest, RejectsWhatReRejects) {
  for (const auto& c : kRejected) {
    PythonRegex re = CompilePythonRegex(c.pattern);
    EXPECT_FALSE(re.usable()) << c.pattern;
    EXPECT_EQ(re.error, c.error) << c.pattern;
    EXPECT_FALSE(re.MatchPrefix("a")) << c.pattern;
  }
}

// Valid Python that PCRE2 cannot evaluate as Python would: named, never matched, never an error.
TEST(PythonRegexTest, NamesWhatItCannotEvaluate) {
  for (const char* pattern : kUnsupported) {
    PythonRegex re = CompilePythonRegex(pattern);
    EXPECT_EQ(re.error, "") << pattern;
    EXPECT_NE(re.unsupported, "") << pattern;
    EXPECT_FALSE(re.usable()) << pattern;
  }
  EXPECT_NE(CompilePythonRegex(R"(\N{DIGIT ONE})").unsupported.find("\\N{...}"), std::string::npos);
}

// Atomic groups and possessive quantifiers: evaluated, and flagged for Python 3.9/3.10.
TEST(PythonRegexTest, FlagsPython311Syntax) {
  for (const auto& c : kPython311) {
    PythonRegex re = CompilePythonRegex(c.pattern);
    ASSERT_TRUE(re.usable()) << c.pattern << ": " << re.error;
    EXPECT_NE(re.python311, "") << c.pattern;
    for (const auto& [subject, match] : c.subjects) {
      EXPECT_EQ(re.MatchPrefix(subject), match) << c.pattern << " on \"" << subject << "\"";
    }
  }
  EXPECT_NE(CompilePythonRegex("a*+").python311.find("possessive"), std::string::npos);
  EXPECT_NE(CompilePythonRegex("(?>a)").python311.find("atomic"), std::string::npos);
  EXPECT_EQ(CompilePythonRegex(R"(a*?\+)").python311, "");  // lazy, then a literal +
}

TEST(PythonRegexTest, EmptyAndNonUtf8Subjects) {
  PythonRegex any = CompilePythonRegex(".*");
  EXPECT_TRUE(any.MatchPrefix(std::string_view()));
  EXPECT_TRUE(any.Search(""));
  PythonRegex bytes = CompilePythonRegex("a.c");
  EXPECT_FALSE(bytes.MatchPrefix("a\xff\xfe"));  // not UTF-8 (no JSON string is): no match
  EXPECT_FALSE(PythonRegex().MatchPrefix("a"));  // never compiled
}

// One compiled pattern shared by threads, each with its own match data.
TEST(PythonRegexTest, MatchesFromSeveralThreads) {
  const PythonRegex re = CompilePythonRegex(R"(.*\.experts\.\d+\.w[13]\.weight$)");
  ASSERT_TRUE(re.usable());
  std::vector<std::thread> threads;
  std::vector<int> hits(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&re, &hits, t] {
      for (int i = 0; i < 1000; ++i) {
        std::string name = "model.layers." + std::to_string(i) + ".mlp.experts." +
                           std::to_string(t) + ".w" + std::to_string(i % 3 + 1) + ".weight";
        hits[t] += re.MatchPrefix(name) ? 1 : 0;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int h : hits) EXPECT_EQ(h, 667);  // w1 and w3: i % 3 == 0 or 2
}

TEST(PythonRegexTest, IndexBlindPatterns) {
  EXPECT_TRUE(IsIndexBlind(R"(.*\.experts\.\d+\.w2\.weight$)"));
  EXPECT_TRUE(IsIndexBlind(R"(.*\.mlp\.fc12\.weight$)"));
  EXPECT_FALSE(IsIndexBlind(R"(model\.layers\.0\.)"));
  EXPECT_FALSE(IsIndexBlind(R"(.*\.w[13]\.weight$)"));
  EXPECT_FALSE(IsIndexBlind(R"(.*\w2)"));
  EXPECT_FALSE(IsIndexBlind(R"(.*\x32)"));
  EXPECT_FALSE(IsIndexBlind(R"(.*a{2})"));
  // A named back-reference compares two indices: "layers.3.experts.3" is not "layers.0.experts.0".
  EXPECT_FALSE(IsIndexBlind(R"(.*layers\.(?P<i>\d+)\..*experts\.(?P=i)\.)"));
  EXPECT_EQ(CanonicalIndexName("model.layers.17.mlp.experts.3.w2.weight"),
            "model.layers.00.mlp.experts.0.w2.weight");
  EXPECT_EQ(CanonicalIndexName("lm_head.weight"), "lm_head.weight");
}

}  // namespace
}  // namespace dsp
