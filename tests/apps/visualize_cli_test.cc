// SPDX-License-Identifier: Apache-2.0
// ds-plan visualize graph: output formats by extension, exit codes (1 for config errors, 2 for
// usage), the no-overwrite rule and --force.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/json/document.h"
#include "core/schema/embedded.h"
#include "tests/apps/cli_test_util.h"
#include "tests/apps/report_schema_util.h"
#include "tests/sim/render/xml_check.h"

namespace dsp {
namespace {

using testing::RunCli;

constexpr const char* kFolding = "samples/configs/folding-tp2-ep4.json";
constexpr const char* kMixtral = " --model samples/models/mixtral-8x7b.json --world-size 8";

class VisualizeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (std::filesystem::temp_directory_path() / "dsp-visualize-XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Out(const std::string& name) const { return (dir_ / name).string(); }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::filesystem::path dir_;
};

TEST_F(VisualizeCliTest, WritesSvgWithCollapsedLayers) {
  const std::string out = Out("g.svg");
  auto r = RunCli(std::string("visualize graph ") + kFolding + kMixtral + " --layers 0-1 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string svg = Read(out);
  EXPECT_EQ(testing::XmlWellFormedError(svg), "");
  EXPECT_NE(svg.find("layers 2&#45;31 (30 x)"), std::string::npos);
  EXPECT_NE(svg.find("cluster_legend"), std::string::npos);
}

// A picture draws layer 0 and collapses the rest unless asked (Graphviz took minutes on a whole
// Mixtral); `--layers all` draws every layer; a range beyond the model is a usage error.
TEST_F(VisualizeCliTest, DefaultPictureDrawsOneLayer) {
  auto r = RunCli(std::string("visualize graph ") + kFolding + kMixtral + " -o " + Out("d.dot"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: layer 0 drawn in full, layers 1-31 collapsed"), std::string::npos) << r.output;
  EXPECT_NE(Read(Out("d.dot")).find("layers 1-31 (31 x)"), std::string::npos);
  r = RunCli(std::string("visualize graph ") + kFolding + kMixtral + " --layers all -o " + Out("all.dot"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("collapsed"), std::string::npos) << r.output;
  EXPECT_EQ(Read(Out("all.dot")).find("(31 x)"), std::string::npos);
  r = RunCli(std::string("visualize graph ") + kFolding + kMixtral + " --layers 30-40 -o " + Out("x.svg"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("the model has layers 0-31"), std::string::npos) << r.output;
}

TEST_F(VisualizeCliTest, WritesDotAndJson) {
  auto r = RunCli(std::string("visualize graph ") + kFolding + kMixtral + " --before --layers 0 -o " + Out("g.dot"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Read(Out("g.dot")).rfind("digraph ds_plan", 0), 0u);

  r = RunCli(std::string("visualize graph ") + kFolding + kMixtral + " -o " + Out("g.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json doc = Json::parse(Read(Out("g.json")), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_EQ(testing::SchemaErrors(schemas::k_graph_schema_json, doc), "");
  EXPECT_GT(doc["nodes"].size(), 100u);
}

// The passes the config asks for run unless --before: AutoTP inserts one copy_to_tp and one
// reduce_from_tp per attention block and per MLP, AutoSP four all-to-alls per attention layer.
TEST_F(VisualizeCliTest, RunsTheConfigsPassesUnlessBefore) {
  auto count = [](const std::string& json, const std::string& op) {
    const Json doc = Json::parse(json);  // kept alive: range-for would not extend a temporary's life
    int n = 0;
    for (const auto& node : doc["nodes"]) n += node["op"] == op ? 1 : 0;
    return n;
  };
  const std::string llama = " --model samples/models/llama-3-8b.json --world-size 8 -o ";
  auto tp = RunCli("visualize graph samples/configs/autotp-layer-specs.json" + llama + Out("tp.json"));
  ASSERT_EQ(tp.exit_code, 0) << tp.output;
  EXPECT_EQ(count(Read(Out("tp.json")), "copy_to_tp"), 2 * 32);
  EXPECT_EQ(count(Read(Out("tp.json")), "reduce_from_tp"), 2 * 32);
  auto sp = RunCli("visualize graph samples/configs/autosp-sp4.json" + llama + Out("sp.json"));
  ASSERT_EQ(sp.exit_code, 0) << sp.output;
  EXPECT_EQ(count(Read(Out("sp.json")), "all_to_all"), 4 * 32);
  auto before = RunCli("visualize graph samples/configs/autosp-sp4.json --before" + llama + Out("before.json"));
  ASSERT_EQ(before.exit_code, 0) << before.output;
  EXPECT_EQ(count(Read(Out("before.json")), "all_to_all"), 0);
}

// Mixtral under folding TP2 x EP4 at ZeRO-1: per MoE layer one dispatch and one combine over ep
// and the restore all-gather over tp; attention keeps its AutoTP pair; every parameter gets its
// gradient reduction. The SVG of two layers parses as XML and names every collective node.
TEST_F(VisualizeCliTest, FoldingConfigRunsAutoEpAutoTpAndZero) {
  auto r = RunCli(std::string("visualize graph ") + kFolding + kMixtral + " -o " + Out("g.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json doc = Json::parse(Read(Out("g.json")));
  std::map<std::string, int> per_op;
  std::map<std::string, int> layer0;
  for (const auto& node : doc["nodes"]) {
    ++per_op[node["op"].get<std::string>()];
    if (node["module"].get<std::string>().starts_with("model.layers.0.")) ++layer0[node["op"].get<std::string>()];
  }
  EXPECT_EQ(per_op["dispatch"], 32);
  EXPECT_EQ(per_op["combine"], 32);
  EXPECT_EQ(per_op["copy_to_tp"], 32);       // attention only: AutoTP skips the AutoEP blocks
  EXPECT_EQ(per_op["reduce_from_tp"], 32);
  EXPECT_EQ(layer0["all_gather"], 1);        // the restore
  // ZeRO-1: one all_reduce per parameter over dp/edp, plus the folded tp AVERAGE for the
  // replicated ones (two norms and the router per layer).
  EXPECT_EQ(layer0["all_reduce"], 8 + 3);
  EXPECT_EQ(r.output.find("note:"), std::string::npos) << r.output;

  r = RunCli(std::string("visualize graph ") + kFolding + kMixtral + " --layers 0-1 -o " + Out("g.svg"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string svg = Read(Out("g.svg"));
  EXPECT_EQ(testing::XmlWellFormedError(svg), "");
  int collectives = 0;
  for (const auto& node : doc["nodes"]) {
    const std::string module = node["module"];
    if (node["group"] == "" || !(module.starts_with("model.layers.0.") || module.starts_with("model.layers.1."))) continue;
    ++collectives;
    EXPECT_NE(svg.find("<title>" + node["name"].get<std::string>() + "</title>"), std::string::npos) << node["name"];
  }
  EXPECT_GT(collectives, 20);
}

TEST_F(VisualizeCliTest, PassesCommandAndForcedPipeline) {
  auto r = RunCli("passes");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("autoep            AutoEP:", 0), 0u) << r.output;
  for (const char* name : {"\nautotp            ", "\nautosp            ", "\nzero              ",
                           "\nselective_gather  ", "\nprefetch          "}) {
    EXPECT_NE(r.output.find(name), std::string::npos) << name;
  }
  r = RunCli("passes --format json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Json::parse(r.output).size(), 6u);

  // --passes zero on the folding config: only ZeRO runs, so there is no dispatch.
  r = RunCli(std::string("visualize graph ") + kFolding + kMixtral + " --passes zero -o " + Out("z.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Read(Out("z.json")).find("\"dispatch\""), std::string::npos);
  EXPECT_NE(Read(Out("z.json")).find("reduce_grad_"), std::string::npos);
}

TEST_F(VisualizeCliTest, DumpAfterPrintsTheTextForm) {
  auto r = RunCli("visualize graph samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json "
                  "--world-size 8 --dump-after autosp");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("# after pass 'autosp'\n%input_ids = placeholder()", 0), 0u) << r.output.substr(0, 200);
  EXPECT_NE(r.output.find("%a2a_o_31 = all_to_all("), std::string::npos);
  // Parses back.
  std::string text = r.output.substr(r.output.find('\n') + 1);
  EXPECT_NE(text.find("%output = output("), std::string::npos);

  r = RunCli("visualize graph samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json "
             "--world-size 8 --dump-after autotp");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--dump-after autotp: that pass is not in this pipeline (it runs autosp"), std::string::npos)
      << r.output;
  r = RunCli("visualize graph samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json --dump-after z3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no such pass"), std::string::npos) << r.output;
  r = RunCli("visualize graph samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json "
             "--passes autotp,bogus -o " + Out("x.svg"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown pass 'bogus' (known: autoep, autotp, autosp, zero, selective_gather, prefetch)"), std::string::npos) << r.output;
  r = RunCli("visualize graph samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json --before "
             "--dump-after all");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = RunCli("visualize graph samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

// --diff marks the picture against the graph as built, and with --dump-after prints a unified
// diff of the text form; --direction picks one half of the step.
TEST_F(VisualizeCliTest, DiffAndDirection) {
  const std::string cmd =
      "visualize graph samples/configs/autotp-layer-specs.json --model samples/models/llama-3-8b.json --world-size 8";
  auto r = RunCli(cmd + " --diff --dump-after autotp");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("--- graph as built\n+++ after pass 'autotp'\n@@ ", 0), 0u) << r.output.substr(0, 300);
  EXPECT_NE(r.output.find("\n+%layers_0_self_attn_q_proj_copy_to_tp = copy_to_tp(%layers_0_input_layernorm)"),
            std::string::npos);
  EXPECT_NE(r.output.find("\n-%layers_0_self_attn_q_proj = linear(%layers_0_input_layernorm)"), std::string::npos);
  EXPECT_EQ(r.output.find("# after pass"), std::string::npos);

  r = RunCli(cmd + " --diff -o " + Out("diff.dot"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string dot = Read(Out("diff.dot"));
  EXPECT_NE(dot.find("+ layers_0_self_attn_q_proj_copy_to_tp"), std::string::npos);
  EXPECT_NE(dot.find("W was [N*D, H]"), std::string::npos);

  r = RunCli(cmd + " --direction backward -o " + Out("bwd.dot"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Read(Out("bwd.dot")).find("layers_0_self_attn_o_proj_reduce_from_tp"), std::string::npos);
  EXPECT_NE(Read(Out("bwd.dot")).find("dir=back"), std::string::npos);

  r = RunCli(cmd + " --direction sideways -o " + Out("x.dot"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = RunCli(cmd + " --diff --before -o " + Out("x.dot"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("drop --before"), std::string::npos) << r.output;
  r = RunCli(cmd + " --diff -o " + Out("x.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

// DeepCompile ZeRO-3: without --cluster the picture is step 0 and says so; with it the
// selective_gather and prefetch passes run on ds-plan's memory and gather-time estimates and
// say what they decided. Llama-3-70B on 256 H100 at 1,024 tokens leaves headroom for some
// parameters only, so both passes change the graph.
TEST_F(VisualizeCliTest, DeepCompileZero3AfterWarmupWithACluster) {
  const std::string config = Out("dc.json");
  std::ofstream(config) << R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
    "gradient_clipping": 1.0, "bf16": {"enabled": true}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
    "zero_optimization": {"stage": 3}, "compile": {"deepcompile": true}})";
  const std::string cmd = "visualize graph " + config + " --model samples/models/llama-3-70b.json --world-size 256";
  auto r = RunCli(cmd + " -o " + Out("step0.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("DeepCompile ZeRO-3 is drawn at step 0"), std::string::npos) << r.output;
  EXPECT_EQ(Read(Out("step0.json")).find("\"prefetch\""), std::string::npos);

  r = RunCli(cmd + " --cluster samples/clusters/h100-sxm.json --seq-len 1024 -o " + Out("warm.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: selective_gather: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" of 723 parameters ("), std::string::npos) << r.output;
  const std::string warm = Read(Out("warm.json"));
  EXPECT_NE(warm.find("\"prefetch\""), std::string::npos);
  // selective_gather removed the gathers of the parameters it keeps.
  auto gathers = [](const std::string& json) {
    int n = 0;
    for (size_t p = json.find("\"all_gather\""); p != std::string::npos; p = json.find("\"all_gather\"", p + 1)) ++n;
    return n;
  };
  EXPECT_LT(gathers(warm), gathers(Read(Out("step0.json"))));

  r = RunCli("visualize graph samples/configs/autotp-layer-specs.json --model samples/models/llama-3-8b.json "
             "--world-size 8 --cluster samples/clusters/h100-sxm.json -o " + Out("tp.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--cluster changes the picture only for DeepCompile ZeRO-3"), std::string::npos);
}

// One verdict with validate: key-value heads that do not split over tp are a validate warning
// (DeepSpeed shards them unevenly: tp_shard.py get_shard_size), and visualize prints that same
// warning and draws tp rank 0's heads instead of refusing.
TEST_F(VisualizeCliTest, UnevenHeadsPrintValidatesWarningAndDrawTheBusiestRank) {
  const std::string config = Out("tp3.json");
  std::ofstream(config) << R"({"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0,
    "zero_optimization": {"stage": 1}, "tensor_parallel": {"autotp_size": 3}})";
  auto r = RunCli("visualize graph " + config + " --model samples/models/llama-3-8b.json --world-size 6 --dump-after autotp");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[tp-uneven-heads]"), std::string::npos) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("param_shape=[N0*D, H], shape=[B, S, N0*D]"), std::string::npos);
}

TEST_F(VisualizeCliTest, RefusesToOverwriteWithoutForce) {
  const std::string out = Out("g.json");
  { std::ofstream(out) << "keep"; }
  auto r = RunCli(std::string("visualize graph ") + kFolding + kMixtral + " -o " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--force"), std::string::npos) << r.output;
  EXPECT_EQ(Read(out), "keep");
  r = RunCli(std::string("visualize graph ") + kFolding + kMixtral + " --force -o " + out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(Read(out), "keep");
}

TEST_F(VisualizeCliTest, ExitCodes) {
  // Unknown extension, bad layer range, missing subcommand or flags: usage errors.
  EXPECT_EQ(RunCli(std::string("visualize graph ") + kFolding + kMixtral + " -o " + Out("g.png")).exit_code, 2);
  EXPECT_EQ(RunCli(std::string("visualize graph ") + kFolding + kMixtral + " --layers 3-1 -o " + Out("g.svg")).exit_code,
            2);
  EXPECT_EQ(RunCli("visualize").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("visualize graph ") + kFolding + " -o " + Out("g.svg")).exit_code, 2);
  EXPECT_EQ(RunCli(std::string("visualize graph missing.json") + kMixtral + " -o " + Out("g.svg")).exit_code, 2);
  // A config DeepSpeed would reject: exit 1 and nothing written.
  auto r = RunCli(std::string("visualize graph samples/configs/invalid/folding-rejected.json") + kMixtral + " -o " +
                  Out("g.svg"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("error"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(Out("g.svg")));
}

// Issue 36: `--layers all` on Llama-3-8B ran past 120 s inside Graphviz and a 1,000-layer model
// crashed it. An SVG lays out at most 8 layers in full; DOT is written without a layout.
TEST_F(VisualizeCliTest, AnSvgOfTooManyLayersIsRefusedUpFront) {
  auto r = RunCli("visualize graph samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json "
                  "--world-size 8 --layers all -o " + Out("all.svg"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("32 layers drawn in full is more than the 8"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(Out("all.svg")));
  auto range = RunCli("visualize graph samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json "
                      "--world-size 8 --layers 0-20 -o " + Out("range.svg"));
  EXPECT_EQ(range.exit_code, 2) << range.output;
}

}  // namespace
}  // namespace dsp
