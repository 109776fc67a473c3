// ds-plan visualize graph: output formats by extension, exit codes (1 for config errors, 2 for
// usage), the no-overwrite rule and --force.
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

}  // namespace
}  // namespace dsp
