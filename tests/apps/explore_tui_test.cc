// SPDX-License-Identifier: Apache-2.0
// explore's full-screen UI driven for real: ds-plan runs in a detached tmux session of a fixed size
// (its own server socket), keys go in with send-keys and the screen comes back with capture-pane.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/apps/cli_test_util.h"
#include "tests/apps/tmux_test_util.h"

namespace dsp {
namespace {

using testing::Shell;
using testing::Tmux;

std::string Explore(const std::string& flags) {
  return "cd " + std::string(DSP_SOURCE_DIR) + " && TERM=xterm-256color exec " + DSP_BINARY +
         " explore samples/configs/zero3-offload.json --model samples/models/llama-3-70b.json "
         "--cluster samples/clusters/h100-sxm.json " + flags;
}

constexpr const char* kBefore = "world 64 (8 x 8): tp=1 dp=64 sp=1 pp=1 zero=3";
constexpr const char* kAfter = "world 64 (8 x 8): tp=2 dp=32 sp=1 pp=1 zero=3";

TEST(ExploreTuiTest, TmuxIsInstalled) {
  // scripts/setup.sh installs Debian's tmux: without it the UI below would go untested.
  EXPECT_NE(Shell("tmux -V").find("tmux"), std::string::npos);
}

TEST(ExploreTuiTest, AKeyChangesTheLayoutAndTheVerdictAndUndoRestoresThem) {
  Tmux tmux(120, 40, Explore("--nodes 8"));
  std::string screen = tmux.WaitFor(kBefore);
  EXPECT_NE(screen.find("DOES NOT FIT 147.57 GB"), std::string::npos) << screen;
  EXPECT_NE(screen.find("> nodes"), std::string::npos) << screen;
  // Down twice selects tensor parallel; Right steps it from 1 to 2 (still too big: transformers'
  // activations without recompute), then to 4, which fits the 85.5 GB an H100 80GB gives CUDA,
  // and 8.
  tmux.Keys("Down Down");
  tmux.WaitFor("> tensor parallel");
  tmux.Keys("Right");
  screen = tmux.WaitFor(kAfter);
  EXPECT_NE(screen.find("DOES NOT FIT 101.23 GB"), std::string::npos) << screen;
  EXPECT_NE(screen.find("[edited]"), std::string::npos) << screen;
  tmux.Keys("Right");
  screen = tmux.WaitFor("world 64 (8 x 8): tp=4 dp=16 sp=1 pp=1 zero=3");
  EXPECT_NE(screen.find("FITS 78.05 GB"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("DOES NOT FIT"), std::string::npos) << screen;
  tmux.Keys("Right");
  screen = tmux.WaitFor("world 64 (8 x 8): tp=8 dp=8 sp=1 pp=1 zero=3");
  EXPECT_NE(screen.find("FITS 66.46 GB"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("DOES NOT FIT"), std::string::npos) << screen;
  tmux.Keys("u");
  tmux.WaitFor("world 64 (8 x 8): tp=4 dp=16 sp=1 pp=1 zero=3");
  tmux.Keys("u");
  tmux.WaitFor(kAfter);
  tmux.Keys("u");
  screen = tmux.WaitFor(kBefore);
  EXPECT_NE(screen.find("DOES NOT FIT 147.57 GB"), std::string::npos) << screen;
  tmux.Keys("q");
}

TEST(ExploreTuiTest, WriteProducesAConfigThatValidates) {
  const std::string dir = ::testing::TempDir() + "/explore_tui_write";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/tp2.json";
  Tmux tmux(120, 40, Explore("--nodes 8"));
  tmux.WaitFor(kBefore);
  tmux.Keys("Down Down Right");
  tmux.WaitFor(kAfter);
  tmux.Keys("w");
  tmux.WaitFor("write config to:");
  tmux.Keys("C-u");
  tmux.Keys("-l '" + out + "'");
  tmux.Keys("Enter");
  tmux.WaitFor("wrote " + out);
  ASSERT_TRUE(std::filesystem::exists(out));
  const testing::CliResult v = testing::RunCli("validate " + out + " --world-size 64");
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("tp=2 dp=32"), std::string::npos) << v.output;
  // Written: quitting does not ask.
  tmux.Keys("q");
  EXPECT_TRUE(tmux.WaitForExit()) << tmux.Screen();
}

TEST(ExploreTuiTest, QuitAsksWhenEditsAreNotWritten) {
  Tmux tmux(120, 40, Explore("--nodes 8"));
  tmux.WaitFor(kBefore);
  tmux.Keys("Down Down Right");
  tmux.WaitFor(kAfter);
  tmux.Keys("q");
  tmux.WaitFor("edits are not written: quit anyway? [y/N]");
  tmux.Keys("n Enter");
  tmux.WaitFor(kAfter);
  EXPECT_FALSE(tmux.Exited());
  tmux.Keys("q");
  tmux.WaitFor("quit anyway?");
  tmux.Keys("y Enter");
  EXPECT_TRUE(tmux.WaitForExit()) << tmux.Screen();
}

TEST(ExploreTuiTest, PinShowsDeltasAndTuneAppliesTheChosenPlan) {
  Tmux tmux(120, 40, Explore("--nodes 8"));
  tmux.WaitFor(kBefore);
  tmux.Keys("p");
  tmux.WaitFor("baseline: " + std::string(kBefore));
  tmux.Keys("Down Down Right");
  std::string screen = tmux.WaitFor(kAfter);
  EXPECT_NE(screen.find("DOES NOT FIT 101.23 GB (-31.4%)"), std::string::npos) << screen;
  // tune lists the best plans for the same world and the current batch (dp 32 x 16 x 1 = 512
  // samples); Down, Enter applies the second (tp 1, ZeRO-3, micro 4, full recompute with the layer
  // inputs in HBM: the 85.5 GB an H100 80GB gives CUDA holds its 73.9 GB peak).
  tmux.Keys("t");
  screen = tmux.WaitFor("[ tune ]");
  EXPECT_NE(screen.find("global batch 512 samples"), std::string::npos) << screen;
  tmux.Keys("Down Enter");
  screen = tmux.WaitFor("apply tp=");
  EXPECT_NE(screen.find("apply tp=1 sp=1 ep=1 pp=1 zero=3 micro=4 accum=2 recompute=full -> valid; FITS"),
            std::string::npos)
      << screen;
  EXPECT_NE(screen.find("world 64 (8 x 8): tp=1 dp=64 sp=1"), std::string::npos) << screen;
  // One edit: undo goes back to tp=2.
  tmux.Keys("u");
  tmux.WaitFor(kAfter);
}

// initscr() would exit the process on a terminal type ncurses does not know; explore says so and
// carries on in line mode.
TEST(ExploreTuiTest, AnUnknownTerminalTypeFallsBackToLineMode) {
  const std::string home = ::testing::TempDir() + "/explore_unknown_term_home";
  std::filesystem::create_directories(home);
  std::string command = Explore("--nodes 8");
  // HOME: the line mode keeps its history there.
  command.replace(command.find("TERM=xterm-256color"), 19, "HOME=" + home + " TERM=no-such-terminal-xyz");
  Tmux tmux(120, 40, command);
  const std::string screen = tmux.WaitFor("explore>");
  EXPECT_NE(screen.find("is unknown to ncurses: explore continues in line mode"), std::string::npos) << screen;
  tmux.Keys("-l quit");
  tmux.Keys("Enter");
  EXPECT_TRUE(tmux.WaitForExit()) << tmux.Screen();
}

TEST(ExploreTuiTest, ATinyTerminalSaysSoInsteadOfDrawing) {
  Tmux tmux(60, 20, Explore("--nodes 8"));
  const std::string screen = tmux.WaitFor("terminal too small: 60x20");
  EXPECT_NE(screen.find("at least 80x24"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("Knobs"), std::string::npos) << screen;
  // Growing the window re-lays out.
  tmux.Run("resize-window -t t -x 120 -y 40");
  tmux.WaitFor(kBefore);
}

TEST(ExploreTuiTest, AnInvalidEditShowsItsDiagnosticsAndKeepsTheLastNumbers) {
  Tmux tmux(120, 40, Explore("--nodes 8"));
  tmux.WaitFor(kBefore);
  tmux.Keys("e");
  tmux.WaitFor("set KEY=VALUE");
  tmux.Keys("-l 'zero_optimization.stag=2'");
  tmux.Keys("Enter");
  const std::string screen = tmux.WaitFor("INVALID: 1 error");
  EXPECT_NE(screen.find("error[unknown-key]"), std::string::npos) << screen;
  EXPECT_NE(screen.find("[last valid plan]"), std::string::npos) << screen;
}

}  // namespace
}  // namespace dsp
