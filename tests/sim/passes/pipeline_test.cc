// SPDX-License-Identifier: Apache-2.0
// The pipeline: verifies after every pass, names the failing pass, dumps after each pass, and
// autotp+autosp leave a valid graph on every preset.
#include "sim/passes/pipeline.h"
#include "sim/passes/deepcompile_z3.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/graph/text_format.h"
#include "sim/graph/verifier.h"
#include "sim/passes/autoep.h"
#include "sim/passes/autosp.h"
#include "sim/passes/autotp.h"
#include "sim/passes/zero.h"
#include "tests/sim/passes/pass_test_util.h"

namespace dsp::sim::passes {
namespace {

using testing::BuildPreset;

// A pass with a bug: it appends a second output node, which the verifier rejects.
class BreaksGraph : public Pass {
 public:
  std::string_view name() const override { return "breaks"; }
  std::string_view description() const override { return "appends a second output"; }
  Result<bool> Run(graph::Graph& g) override {
    g.Append({.name = "output", .op = "output", .args = {g.Find("loss")}});
    return true;
  }
};

TEST(PipelineTest, NamesTheFailingPass) {
  graph::Graph g = BuildPreset("tiny-llama.json");
  const ModelSpec spec = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  Pipeline p;
  p.Add(std::make_unique<AutoSpPass>(AutoSpOptions::ForModel(spec, 8)));
  Result<bool> r = p.Run(g);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("pass 'autosp' failed: attention heads (4)", 0), 0u)
      << r.error().message;
}

TEST(PipelineTest, VerifiesAfterEveryPass) {
  graph::Graph g = BuildPreset("tiny-llama.json");
  Pipeline p;
  p.Add(std::make_unique<BreaksGraph>());
  Result<bool> r = p.Run(g);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("graph invalid after pass 'breaks': ", 0), 0u)
      << r.error().message;
}

TEST(PipelineTest, DumpsAfterEachPassAndVerifiesOnEveryPreset) {
  for (const char* file : dsp::testing::kModelPresets) {
    const ModelSpec spec = dsp::testing::ParsePresetOrDie(file);
    // tp only, sp only, and both where the KV heads split over tp*sp = 4 ranks. After AutoTP a
    // rank holds N/T and G/T heads: that is what AutoSP then scatters.
    for (int mode = 0; mode < 3; ++mode) {
      if (mode == 2 && spec.num_key_value_heads % 4 != 0) continue;
      SCOPED_TRACE(std::string(file) + " mode " + std::to_string(mode));
      graph::Graph g = BuildPreset(file);
      Pipeline p;
      std::vector<std::string> expected;
      const int64_t tp = mode == 1 ? 1 : 2;
      if (mode != 1) {
        p.Add(std::make_unique<AutoTpPass>(AutoTpOptions::ForModel(spec, tp)));
        expected.push_back("autotp");
      }
      if (mode != 0) {
        AutoSpOptions sp = AutoSpOptions::ForModel(spec, 2);
        sp.num_heads /= tp;
        sp.num_kv_heads /= tp;
        p.Add(std::make_unique<AutoSpPass>(sp));
        expected.push_back("autosp");
      }
      std::vector<std::string> dumped;
      std::string last;
      p.SetDumpAfter([&](std::string_view pass, const std::string& text) {
        dumped.emplace_back(pass);
        last = text;
      });
      Result<bool> r = p.Run(g);
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_TRUE(*r);
      EXPECT_EQ(dumped, expected);
      EXPECT_EQ(last, graph::PrintGraph(g));
      EXPECT_TRUE(graph::VerifyGraph(g).ok());
    }
  }
}

TEST(PipelineTest, RegistryListsPassesWithDescriptions) {
  const auto& passes = RegisteredPasses();
  ASSERT_EQ(passes.size(), 6u);
  EXPECT_EQ(passes[0].name, "autoep");
  EXPECT_EQ(passes[1].name, "autotp");
  EXPECT_EQ(passes[2].name, "autosp");
  EXPECT_EQ(passes[3].name, "zero");
  EXPECT_EQ(passes[4].name, "selective_gather");
  EXPECT_EQ(passes[5].name, "prefetch");
  EXPECT_EQ(passes[4].description, SelectiveGatherPass(DeepCompileBudget{}).description());
  EXPECT_EQ(passes[5].description, PrefetchPass(DeepCompileBudget{}).description());
  EXPECT_EQ(passes[0].description, AutoEpPass(AutoEpOptions{}).description());
  EXPECT_EQ(passes[1].description, AutoTpPass(AutoTpOptions{}).description());
  EXPECT_EQ(passes[2].description, AutoSpPass(AutoSpOptions{}).description());
  EXPECT_EQ(passes[3].description, ZeroPass(ZeroOptions{}).description());
  for (const PassInfo& p : passes) EXPECT_FALSE(p.description.empty()) << p.name;
  EXPECT_EQ(PassDescription("nope"), "");
}

}  // namespace
}  // namespace dsp::sim::passes
