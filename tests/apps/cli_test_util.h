// SPDX-License-Identifier: Apache-2.0
// Runs the built ds-plan binary from the repository root and captures its output and exit code.
#pragma once

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace dsp::testing {

struct CliResult {
  std::string output;  // stdout and stderr together (or stdout only)
  int exit_code = -1;
};

inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// `args` is passed through the shell unquoted (test inputs are simple words).
inline CliResult RunCli(const std::string& args, bool merge_stderr = true) {
  std::string cmd = "cd " + ShellQuote(DSP_SOURCE_DIR) + " && " + ShellQuote(DSP_BINARY) + " " + args +
                    (merge_stderr ? " 2>&1" : " 2>/dev/null");
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Runs a shell command line in the source directory: stdout and stderr together, and its exit
// status (-1 when it could not start).
inline CliResult RunShellStatus(const std::string& command) {
  std::string cmd = "cd " + ShellQuote(DSP_SOURCE_DIR) + " && " + command + " 2>&1";
  CliResult r;
  r.exit_code = -1;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// The same, the output alone.
inline std::string RunShell(const std::string& command) { return RunShellStatus(command).output; }

// A file's whole text ("" when it cannot be read).
inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `text` to a file of the test temporary directory named after this process and `name`:
// ctest runs test cases as concurrent processes, and two that wrote one shared path could read
// each other's half-written file.
inline std::string WriteTempFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "dsp-" + std::to_string(getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace dsp::testing
