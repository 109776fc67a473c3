// SPDX-License-Identifier: Apache-2.0
// One output policy for every command that writes a file (issue 16): `-` is standard output and
// has it to itself (the report moves to stderr), an existing file or symlink is replaced only with
// --force, and a missing directory is named before any work. core/util/file_io_test.cc covers the
// policy itself; these cases hold each writer to it.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/json/document.h"
#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

namespace fs = std::filesystem;
using testing::RunCli;
using testing::ShellQuote;

const std::string kSimInputs = " --model samples/models/llama-3-8b.json --cluster samples/clusters/h100-sxm.json";

class OutputPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ds-plan-outputs-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Out(const std::string& name) const { return ShellQuote((dir_ / name).string()); }
  fs::path dir_;
};

bool ParsesAsJsonObject(const std::string& text) {
  Json doc = Json::parse(text, nullptr, false);
  return !doc.is_discarded() && doc.is_object();
}

// Each writer with `-`: standard output holds exactly the artifact (stderr dropped here).
TEST_F(OutputPolicyTest, DashWritesTheArtifactAloneToStandardOutput) {
  auto plan = RunCli("plan samples/configs/autosp-sp4.json" + kSimInputs + " --world-size 8 -o -", false);
  EXPECT_EQ(plan.exit_code, 0);
  EXPECT_TRUE(ParsesAsJsonObject(plan.output)) << plan.output.substr(0, 300);

  auto tune = RunCli("tune" + kSimInputs + " --world-size 8 --top 2 --emit-config -", false);
  EXPECT_EQ(tune.exit_code, 0);
  ASSERT_TRUE(ParsesAsJsonObject(tune.output)) << tune.output.substr(0, 300);
  EXPECT_TRUE(Json::parse(tune.output).contains("train_batch_size"));
  // The ranking is still shown, on stderr.
  auto tune_all = RunCli("tune" + kSimInputs + " --world-size 8 --top 2 --emit-config -");
  EXPECT_NE(tune_all.output.find("rank"), std::string::npos) << tune_all.output;

  auto graph = RunCli("visualize graph samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json "
                      "--world-size 8 --format json -o -",
                      false);
  EXPECT_EQ(graph.exit_code, 0);
  EXPECT_TRUE(ParsesAsJsonObject(graph.output)) << graph.output.substr(0, 300);

  auto svg = RunCli("visualize schedule samples/configs/autosp-sp4.json" + kSimInputs +
                        " --world-size 8 --seq-len 1024 --format svg -o -",
                    false);
  EXPECT_EQ(svg.exit_code, 0);
  EXPECT_EQ(svg.output.rfind("<svg", 0) == 0 || svg.output.rfind("<?xml", 0) == 0, true) << svg.output.substr(0, 200);
  EXPECT_EQ(svg.output.find("step time "), std::string::npos);  // the summary went to stderr

  auto trace = RunCli("visualize schedule samples/configs/autosp-sp4.json" + kSimInputs +
                          " --world-size 8 --seq-len 1024 --format json -o -",
                      false);
  EXPECT_EQ(trace.exit_code, 0);
  EXPECT_TRUE(ParsesAsJsonObject(trace.output)) << trace.output.substr(0, 300);

  auto fitted = RunCli("calibrate samples/runs/published-runs.tsv --cluster "
                       "samples/clusters/selene-a100-80gb-calibrated.json --fit efficiency.matmul -o -",
                       false);
  EXPECT_EQ(fitted.exit_code, 0);
  EXPECT_TRUE(ParsesAsJsonObject(fitted.output)) << fitted.output.substr(0, 300);
}

TEST_F(OutputPolicyTest, DashWithoutAnExtensionNeedsAFormat) {
  auto graph = RunCli("visualize graph samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json -o -");
  EXPECT_EQ(graph.exit_code, 2);
  EXPECT_NE(graph.output.find("pass --format svg|dot|json"), std::string::npos) << graph.output;
  auto schedule = RunCli("visualize schedule samples/configs/autosp-sp4.json" + kSimInputs + " --world-size 8 -o -");
  EXPECT_EQ(schedule.exit_code, 2);
  EXPECT_NE(schedule.output.find("pass --format svg|json"), std::string::npos) << schedule.output;
}

// The same refusal, the same words, from every writer; the file is left as it was.
TEST_F(OutputPolicyTest, EveryWriterRefusesToReplaceWithoutForce) {
  const std::vector<std::pair<std::string, std::string>> writers = {
      {"-o", "plan samples/configs/autosp-sp4.json" + kSimInputs + " --world-size 8 -o "},
      {"--emit-config", "tune" + kSimInputs + " --world-size 8 --emit-config "},
      {"-o", "visualize graph samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json -o "},
      {"-o", "visualize schedule samples/configs/autosp-sp4.json" + kSimInputs + " --world-size 8 -o "},
      {"-o", "calibrate samples/runs/published-runs.tsv --cluster samples/clusters/selene-a100-80gb-calibrated.json "
             "--fit efficiency.matmul -o "},
  };
  for (const auto& [flag, command] : writers) {
    const std::string name = command.find("visualize") != std::string::npos ? "mine.svg" : "mine.json";
    { std::ofstream(dir_ / name) << "mine\n"; }
    auto r = RunCli(command + Out(name));
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("ds-plan: error: " + flag + " " + (dir_ / name).string() +
                            ": exists: pass --force to replace it"),
              std::string::npos)
        << command << "\n" << r.output;
    std::ifstream in(dir_ / name);
    std::stringstream kept;
    kept << in.rdbuf();
    EXPECT_EQ(kept.str(), "mine\n") << command;

    // A dangling symlink is refused too, and a missing directory is named.
    fs::remove(dir_ / "dangling.svg");
    fs::create_symlink(dir_ / "nowhere.svg", dir_ / "dangling.svg");
    auto link = RunCli(command + Out("dangling.svg"));
    EXPECT_EQ(link.exit_code, 2) << command << "\n" << link.output;
    EXPECT_NE(link.output.find("which does not exist): pass --force"), std::string::npos) << link.output;
    auto missing = RunCli(command + Out("no/such/dir/out.svg"));
    EXPECT_EQ(missing.exit_code, 2) << command << "\n" << missing.output;
    EXPECT_NE(missing.output.find("directory " + (dir_ / "no/such/dir").string() + " does not exist"), std::string::npos)
        << missing.output;
  }
}

// --force writes through a symlink and keeps the replaced file's mode.
TEST_F(OutputPolicyTest, ForceKeepsTheModeAndWritesThroughLinks) {
  { std::ofstream(dir_ / "plan.json") << "old\n"; }
  fs::permissions(dir_ / "plan.json", fs::perms::owner_read | fs::perms::owner_write);
  fs::create_symlink(dir_ / "plan.json", dir_ / "latest.json");
  auto r = RunCli("plan samples/configs/autosp-sp4.json" + kSimInputs + " --world-size 8 --force -o " + Out("latest.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(dir_ / "latest.json"));
  EXPECT_EQ(fs::status(dir_ / "plan.json").permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  std::ifstream in(dir_ / "plan.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(ParsesAsJsonObject(text.str()));
}

// Standard output that cannot be written (a full disk: /dev/full) is a failure with a message,
// not exit 0 with the report lost (issue 36 item 8); a command that writes its report is unchanged.
TEST(StandardOutputTest, AReportThatCannotBeWrittenIsANonZeroExit) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  for (const char* args : {"rules", "validate samples/configs/zero3-offload.json --format json",
                           "simulate samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json "
                           "--cluster samples/clusters/h100-sxm.json --world-size 8"}) {
    const std::string out = testing::RunShell(ShellQuote(DSP_BINARY) + " " + args + " 2>&1 >/dev/full; echo \"exit $?\"");
    EXPECT_NE(out.find("ds-plan: error: cannot write to standard output"), std::string::npos) << args << "\n" << out;
    EXPECT_NE(out.find("exit 2"), std::string::npos) << args << "\n" << out;
    EXPECT_EQ(RunCli(std::string(args) + " > /dev/null").exit_code, 0) << args;
  }
}

}  // namespace
}  // namespace dsp
