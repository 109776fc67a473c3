// SPDX-License-Identifier: Apache-2.0
// Drives a terminal program for real: it runs in a detached tmux session of a fixed size on its own
// server socket; keys go in with send-keys and the screen comes back with capture-pane.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace dsp::testing {

inline std::string Shell(const std::string& command) {
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
  // Whether the program has exited (the pane stays, remain-on-exit).
  bool Exited() { return Run("list-panes -t t -F '#{pane_dead}'").starts_with("1"); }
  bool WaitForExit() {
    for (int i = 0; i < 200; ++i) {
      if (Exited()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
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

}  // namespace dsp::testing
