// SPDX-License-Identifier: Apache-2.0
// explore's full-screen UI driven for real: ds-plan runs in a detached tmux session of a fixed size
// (its own server socket), keys go in with send-keys and the screen comes back with capture-pane.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  return out;
}

class Tmux {
 public:
  Tmux(int cols, int lines, const std::string& command)
      : socket_("dsp-explore-" + std::to_string(getpid()) + "-" + std::to_string(++count_)) {
    Run("new-session -d -s t -x " + std::to_string(cols) + " -y " + std::to_string(lines) + " '" + command + "'");
    Run("set-option -t t remain-on-exit on");
  }
  ~Tmux() { Run("kill-server"); }

  std::string Run(const std::string& args) { return Shell("tmux -L " + socket_ + " " + args); }
  void Keys(const std::string& keys) { Run("send-keys -t t " + keys); }
  std::string Screen() { return Run("capture-pane -p -t t"); }
  // The screen once it shows `text` (10 s at most; the last screen otherwise, for the failure).
  std::string WaitFor(const std::string& text) {
    std::string screen;
    for (int i = 0; i < 200; ++i) {
      screen = Screen();
      if (screen.find(text) != std::string::npos) return screen;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "the screen never showed \"" << text << "\":\n" << screen;
    return screen;
  }

 private:
  static inline int count_ = 0;
  std::string socket_;
};

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
  EXPECT_NE(screen.find("DOES NOT FIT 96.55 GB"), std::string::npos) << screen;
  EXPECT_NE(screen.find("> nodes"), std::string::npos) << screen;
  // Down twice selects tensor parallel; Right steps it from 1 to 2.
  tmux.Keys("Down Down");
  tmux.WaitFor("> tensor parallel");
  tmux.Keys("Right");
  screen = tmux.WaitFor(kAfter);
  EXPECT_NE(screen.find("FITS 62.28 GB"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("DOES NOT FIT"), std::string::npos) << screen;
  EXPECT_NE(screen.find("[edited]"), std::string::npos) << screen;
  tmux.Keys("u");
  screen = tmux.WaitFor(kBefore);
  EXPECT_NE(screen.find("DOES NOT FIT 96.55 GB"), std::string::npos) << screen;
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
  std::string screen;
  for (int i = 0; i < 100 && screen.find("Pane is dead") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    screen = tmux.Screen();
  }
  EXPECT_NE(screen.find("Pane is dead"), std::string::npos) << screen;
}

TEST(ExploreTuiTest, QuitAsksWhenEditsAreNotWritten) {
  Tmux tmux(120, 40, Explore("--nodes 8"));
  tmux.WaitFor(kBefore);
  tmux.Keys("Down Down Right");
  tmux.WaitFor(kAfter);
  tmux.Keys("q");
  tmux.WaitFor("edits are not written: quit anyway? [y/N]");
  tmux.Keys("n Enter");
  std::string screen = tmux.WaitFor(kAfter);
  EXPECT_EQ(screen.find("Pane is dead"), std::string::npos);
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
