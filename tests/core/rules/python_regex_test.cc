// The Python-`re` dialect ds-plan evaluates AutoTP layer_specs patterns in.
#include "core/rules/python_regex.h"

#include <gtest/gtest.h>

namespace dsp {
namespace {

TEST(TensorParallelPythonRegexTest, MatchIsAnchoredAtTheStartOnly) {
  PythonRegex re = CompilePythonRegex(R"(.*\.o_proj)");
  ASSERT_TRUE(re.usable()) << re.error;
  EXPECT_TRUE(re.MatchPrefix("model.layers.0.self_attn.o_proj.weight"));  // re.match: no end anchor
  PythonRegex start = CompilePythonRegex(R"(self_attn\.o_proj)");
  EXPECT_FALSE(start.MatchPrefix("model.layers.0.self_attn.o_proj.weight"));
}

TEST(TensorParallelPythonRegexTest, TranslatesPythonOnlySyntax) {
  PythonRegex named = CompilePythonRegex(R"(.*\.(?P<proj>[qk])_proj\.weight$)");
  ASSERT_TRUE(named.usable()) << named.error << named.unsupported;
  EXPECT_TRUE(named.MatchPrefix("model.layers.1.self_attn.k_proj.weight"));
  PythonRegex backref = CompilePythonRegex(R"((?P<x>a)b(?P=x))");
  ASSERT_TRUE(backref.usable());
  EXPECT_TRUE(backref.MatchPrefix("aba"));
  EXPECT_FALSE(backref.MatchPrefix("abb"));
  PythonRegex anchors = CompilePythonRegex(R"(\Amodel\.norm\.weight\Z)");
  EXPECT_TRUE(anchors.MatchPrefix("model.norm.weight"));
  EXPECT_FALSE(anchors.MatchPrefix("model.norm.weight2"));
  PythonRegex icase = CompilePythonRegex("(?i)LM_HEAD");
  EXPECT_TRUE(icase.MatchPrefix("lm_head.weight"));
  // Literal braces, identity escapes and {,n} are Python, not ECMAScript.
  EXPECT_TRUE(CompilePythonRegex("a{").MatchPrefix("a{"));
  EXPECT_TRUE(CompilePythonRegex(R"(x\_y)").MatchPrefix("x_y"));
  EXPECT_TRUE(CompilePythonRegex("a{,2}b").MatchPrefix("aab"));
  EXPECT_TRUE(CompilePythonRegex("[]a]+").MatchPrefix("]a]"));
}

TEST(TensorParallelPythonRegexTest, ErrorsPythonWouldRaise) {
  EXPECT_NE(CompilePythonRegex(R"(.*\.(o_proj)").error, "");
  EXPECT_NE(CompilePythonRegex("*o_proj").error, "");
  EXPECT_NE(CompilePythonRegex(R"(\q)").error.find("bad escape"), std::string::npos);
  EXPECT_NE(CompilePythonRegex("(?<name>x)").error.find("unknown extension"), std::string::npos);
  EXPECT_NE(CompilePythonRegex("a(?i)b").error.find("global flags"), std::string::npos);
  EXPECT_NE(CompilePythonRegex("[abc").error.find("unterminated"), std::string::npos);
}

TEST(TensorParallelPythonRegexTest, UnsupportedConstructsAreNamed) {
  EXPECT_NE(CompilePythonRegex(R"(.*(?<=attn)\.o_proj)").unsupported.find("lookbehind"),
            std::string::npos);
  EXPECT_NE(CompilePythonRegex("a*+").unsupported.find("possessive"), std::string::npos);
  EXPECT_NE(CompilePythonRegex("(?s).*").unsupported, "");
}

TEST(TensorParallelPythonRegexTest, IndexBlindPatterns) {
  EXPECT_TRUE(IsIndexBlind(R"(.*\.experts\.\d+\.w2\.weight$)"));
  EXPECT_TRUE(IsIndexBlind(R"(.*\.mlp\.fc12\.weight$)"));
  EXPECT_FALSE(IsIndexBlind(R"(model\.layers\.0\.)"));
  EXPECT_FALSE(IsIndexBlind(R"(.*\.w[13]\.weight$)"));
  EXPECT_FALSE(IsIndexBlind(R"(.*\w2)"));
  EXPECT_FALSE(IsIndexBlind(R"(.*\x32)"));
  EXPECT_FALSE(IsIndexBlind(R"(.*a{2})"));
  EXPECT_EQ(CanonicalIndexName("model.layers.17.mlp.experts.3.w2.weight"),
            "model.layers.00.mlp.experts.0.w2.weight");
  EXPECT_EQ(CanonicalIndexName("lm_head.weight"), "lm_head.weight");
}

}  // namespace
}  // namespace dsp
