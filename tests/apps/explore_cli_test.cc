// SPDX-License-Identifier: Apache-2.0
// ds-plan explore's line mode end to end: scripts, piped input, write and plan read back by
// validate, simulate and check, and the terminal line mode (libedit) under tmux.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/json/document.h"
#include "tests/apps/cli_test_util.h"
#include "tests/apps/tmux_test_util.h"

namespace dsp {
namespace {

using testing::RunCli;
using testing::ShellQuote;

constexpr const char* kOpen =
    "explore samples/configs/zero3-offload.json --model samples/models/llama-3-70b.json "
    "--cluster samples/clusters/h100-sxm.json --nodes 8";

// A directory with the inputs copied in: check reads only files inside the directory it runs in.
std::string Workdir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* f : {"samples/configs/zero3-offload.json", "samples/models/llama-3-70b.json",
                        "samples/clusters/h100-sxm.json"}) {
    std::filesystem::copy_file(std::string(DSP_SOURCE_DIR) + "/" + f,
                               dir + "/" + std::filesystem::path(f).filename().string());
  }
  return dir;
}

testing::CliResult InDir(const std::string& dir, const std::string& args) {
  return RunCli("--version >/dev/null && cd " + ShellQuote(dir) + " && " + ShellQuote(DSP_BINARY) + " " + args);
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(ExploreCliTest, WriteAndPlanAreReadBackByValidateSimulateAndCheck) {
  const std::string dir = Workdir("explore_write_plan");
  WriteText(dir + "/edits.txt",
            "set tensor_parallel.autotp_size=2\n"
            "set recompute=full\n"
            "write tp2.json\n"
            "plan tp2.plan.json\n");
  const std::string open = "explore zero3-offload.json --model llama-3-70b.json --cluster h100-sxm.json --nodes 8";
  auto r = InDir(dir, open + " --script edits.txt");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wrote tp2.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("wrote tp2.plan.json"), std::string::npos) << r.output;
  // The config validates; simulate reads recompute back from its _ds_plan note and prints the
  // numbers the session showed.
  auto v = InDir(dir, "validate tp2.json --world-size 64");
  EXPECT_EQ(v.exit_code, 0) << v.output;
  auto s = InDir(dir, "simulate tp2.json --model llama-3-70b.json --cluster h100-sxm.json --nodes 8");
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(s.output.find("tp=2 dp=32"), std::string::npos) << s.output;
  EXPECT_NE(s.output.find("recompute full"), std::string::npos) << s.output;
  auto session_line = r.output.find("set recompute=full -> valid; FITS peak ");
  ASSERT_NE(session_line, std::string::npos) << r.output;
  const std::string peak = r.output.substr(session_line + 39, 5);  // "11.91"-style figure
  EXPECT_NE(s.output.find("peak                   " + peak), std::string::npos) << peak << "\n" << s.output;
  // The snapshot is what `ds-plan plan` writes: check re-simulates it and agrees.
  auto c = InDir(dir, "check tp2.plan.json");
  EXPECT_EQ(c.exit_code, 0) << c.output;
  // Nothing is overwritten without --force.
  WriteText(dir + "/again.txt", "write tp2.json\n");
  auto again = InDir(dir, open + " --script again.txt");
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.output.find("again.txt:1: error: write tp2.json: exists: pass --force"), std::string::npos)
      << again.output;
}

// Issue 36: every writer follows the one output policy (core/util/file_io.h CheckOutputPath).
TEST(ExploreCliTest, WriteAndPlanFollowTheOutputPolicy) {
  const std::string dir = Workdir("explore_output_policy");
  const std::string open = "explore zero3-offload.json --model llama-3-70b.json --cluster h100-sxm.json --nodes 8";
  auto run = [&](const std::string& line) {
    WriteText(dir + "/script.txt", line + "\n");
    return InDir(dir, open + " --script script.txt");
  };
  // A device is never replaced, not even with --force (as root this once replaced /dev/null).
  auto device = run("write /dev/null --force");
  EXPECT_EQ(device.exit_code, 1) << device.output;
  EXPECT_NE(device.output.find("not a regular file"), std::string::npos) << device.output;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  // Extra words are refused, not dropped.
  auto two = run("write a b.json");
  EXPECT_EQ(two.exit_code, 1) << two.output;
  EXPECT_NE(two.output.find("one path, got a and b.json"), std::string::npos) << two.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/a"));
  auto flag = run("write out.json --forse");
  EXPECT_NE(flag.output.find("unknown option --forse"), std::string::npos) << flag.output;
  // A dangling symbolic link is written through only with --force.
  std::filesystem::create_symlink(dir + "/target.json", dir + "/link.json");
  auto link = run("write link.json");
  EXPECT_EQ(link.exit_code, 1) << link.output;
  EXPECT_NE(link.output.find("symbolic link"), std::string::npos) << link.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/target.json"));
  // A FIFO is not a file to write a plan into.
  ASSERT_EQ(std::system(("mkfifo " + ShellQuote(dir + "/fifo")).c_str()), 0);
  auto fifo = run("plan fifo --force");
  EXPECT_EQ(fifo.exit_code, 1) << fifo.output;
  EXPECT_TRUE(std::filesystem::is_fifo(dir + "/fifo"));
}

// `plan` after `apply` records the layout and engine flags the tuned plan set (tp, virtual
// stages, the pipeline schedule's calls), not the ones explore was opened with: the snapshot's
// step is the one the session showed, and check agrees with it.
TEST(ExploreCliTest, PlanAfterApplyRecordsTheAppliedLayout) {
  const std::string dir = Workdir("explore_apply_plan");
  WriteText(dir + "/fsdp2.json", R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 8,
                                     "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})");
  WriteText(dir + "/tuned.txt", "tune --top 1\napply 1\nwrite t.json\nplan t.plan.json\n");
  auto r = InDir(dir, "explore fsdp2.json --model llama-3-70b.json --cluster h100-sxm.json --nodes 8 --engine fsdp2 "
                      "--tp 8 --pp 4 --virtual-stages 2 --pp-schedule-micro-batches 2 --script tuned.txt");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t applied = r.output.find("apply tp=");
  ASSERT_NE(applied, std::string::npos) << r.output;
  const size_t step = r.output.find("; step ", applied);
  ASSERT_NE(step, std::string::npos) << r.output;
  const std::string shown = r.output.substr(step + 7, r.output.find(' ', step + 7) - step - 7);
  std::ifstream in(dir + "/t.plan.json");
  const Json snapshot = Json::parse(in);
  char recorded[32];
  std::snprintf(recorded, sizeof recorded, "%.3f", snapshot["time"]["step_seconds"].get<double>());
  EXPECT_EQ(shown, recorded) << r.output << "\n" << snapshot["inputs"].dump();
  EXPECT_EQ(InDir(dir, "check t.plan.json").exit_code, 0);
}

TEST(ExploreCliTest, PlanNeedsTheEditsWrittenFirst) {
  const std::string dir = Workdir("explore_plan_dirty");
  WriteText(dir + "/edits.txt", "set gradient_accumulation_steps=8\nplan p.json\n");
  auto r = InDir(dir, "explore zero3-offload.json --model llama-3-70b.json --cluster h100-sxm.json --script edits.txt");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("edits.txt:2: error: the config has edits that are not written"), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/p.json"));
}

TEST(ExploreCliTest, PipedInputIsLineModeWithATranscript) {
  auto r = RunCli(std::string("--version >/dev/null; printf 'set pp=2\\nshow diagnostics\\nquit\\nshow summary\\n' | ") +
                  ShellQuote(DSP_BINARY) + " " + kOpen);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("explore> set pp=2\nset pp=2 -> invalid: 1 error"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[zero-stage-pipeline]"), std::string::npos) << r.output;
  // quit stops reading: the last line never runs.
  EXPECT_EQ(r.output.find("explore> show summary"), std::string::npos) << r.output;
}

TEST(ExploreCliTest, InputsThatCannotBeLoadedStopBeforeTheSession) {
  auto r = RunCli(std::string(kOpen) + " --world-size 7 --script samples/explore/llama-70b-on-64-h100.txt");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--world-size 7 contradicts --nodes 8"), std::string::npos) << r.output;
  r = RunCli("explore samples/configs/zero3-offload.json --model nope.json --cluster samples/clusters/h100-sxm.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = RunCli(std::string(kOpen) + " --script does-not-exist.txt");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = RunCli(std::string(kOpen) + " --set zero_optimization=oops --script samples/explore/llama-70b-on-64-h100.txt");
  EXPECT_NE(r.output.find("invalid"), std::string::npos) << r.output;  // applied as an edit, then shown
}

TEST(ExploreCliTest, HelpNamesTheCommandsAndKeys) {
  auto r = RunCli("explore --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"--script", "--line", "set KEY=VALUE", "tune [--top N]", "apply N", "Full-screen keys"}) {
    EXPECT_NE(r.output.find(word), std::string::npos) << word;
  }
}

TEST(ExploreCliTest, OnATerminalTheLineModeCompletesEditsAndKeepsHistory) {
  const std::string home = ::testing::TempDir() + "/explore_home";
  std::filesystem::remove_all(home);
  std::filesystem::create_directories(home);
  testing::Tmux tmux(120, 40,
                     "cd " + std::string(DSP_SOURCE_DIR) + " && HOME=" + home + " TERM=xterm exec " + DSP_BINARY + " " +
                         kOpen + " --line");
  tmux.WaitFor("explore>");
  // Tab completes a config key from the schema up to the common prefix.
  tmux.Keys("-l 'set zero_optimization.offload_p'");
  tmux.Keys("Tab");
  tmux.WaitFor("explore> set zero_optimization.offload_param");
  tmux.Keys("-l '.device=none'");
  tmux.Keys("Enter");
  tmux.WaitFor("set zero_optimization.offload_param.device=none -> valid");
  // Up recalls the last command.
  tmux.Keys("Up");
  tmux.WaitFor("explore> set zero_optimization.offload_param.device=none\n");
  tmux.Keys("C-u");
  tmux.Keys("-l quit");
  tmux.Keys("Enter");
  tmux.WaitFor("quit anyway? [y/N]");
  tmux.Keys("y Enter");
  EXPECT_TRUE(tmux.WaitForExit()) << tmux.Screen();
  EXPECT_TRUE(std::filesystem::exists(home + "/.ds_plan_history"));
}

// Issue 36: a script with no newline (/dev/zero) was read whole into one line; a binary file is
// not a script. Both stop with exit 2 and say why.
TEST(ExploreCliTest, AScriptThatIsNotTextIsRefused) {
  auto zero = RunCli(std::string(kOpen) + " --script /dev/zero");
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_NE(zero.output.find("/dev/zero:1: error: a NUL byte"), std::string::npos) << zero.output;
  const std::string dir = ::testing::TempDir() + "/explore_long_line";
  std::filesystem::create_directories(dir);
  WriteText(dir + "/long.txt", "show\n" + std::string(70000, 'x') + "\n");
  auto longline = RunCli(std::string(kOpen) + " --script " + ShellQuote(dir + "/long.txt"));
  EXPECT_EQ(longline.exit_code, 2) << longline.output.substr(0, 2000);
  EXPECT_NE(longline.output.find("long.txt:2: error: longer than 65536 bytes"), std::string::npos);
}

}  // namespace
}  // namespace dsp
