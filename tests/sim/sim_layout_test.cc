// SPDX-License-Identifier: Apache-2.0
// The shape docs/architecture.md promises for sim/: code lives in rooms, not at sim/'s root; the
// frameworks differ through their profiles (sim/frameworks), not through engine branches spread
// over the cost model; no function grows past 120 lines (scripts/long-functions.py counts them).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

namespace fs = std::filesystem;

TEST(SimLayoutTest, AtMostTwoSourceFilesAtTheRootOfSim) {
  int root_sources = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(DSP_SOURCE_DIR) / "sim")) {
    if (entry.is_regular_file() && entry.path().extension() == ".cc") ++root_sources;
  }
  EXPECT_LE(root_sources, 2);
}

TEST(SimLayoutTest, EngineBranchesStayInTheFrameworkProfiles) {
  int lines = 0;
  std::string where;
  const fs::path sim = fs::path(DSP_SOURCE_DIR) / "sim";
  for (const auto& entry : fs::recursive_directory_iterator(sim)) {
    if (!entry.is_regular_file()) continue;
    const std::string rel = fs::relative(entry.path(), sim).string();
    if (rel.starts_with("frameworks/")) continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("Engine::k") != std::string::npos) {
        ++lines;
        where += "\n  sim/" + rel + ": " + line;
      }
    }
  }
  EXPECT_LE(lines, 12) << where;
}

// scripts/long-functions.py over `path`: its exit status and what it printed.
std::pair<int, std::string> LongFunctions(const std::string& path) {
  const testing::CliResult r =
      testing::RunShellStatus("python3 scripts/long-functions.py --limit 120 " + testing::ShellQuote(path));
  return {r.exit_code, r.output};
}

TEST(SimLayoutTest, NoFunctionInSimIsLongerThan120Lines) {
  if (std::system("python3 -c '' 2>/dev/null") != 0) GTEST_SKIP() << "python3 is not installed";
  // The counter finds a long body (braces in strings and comments do not fool it) ...
  const fs::path probe = fs::path(DSP_BUILD_DIR) / "long_function_probe.cc";
  {
    std::ofstream out(probe);
    out << "namespace x {\nstruct S { int a; };\nint Long(int v) {\n  const char* s = \"}\"; // }\n";
    for (int i = 0; i < 120; ++i) out << "  v += " << i << ";\n";
    out << "  return v;\n}\nint Short() { return 1; }\n}  // namespace x\n";
  }
  const auto [probe_status, probe_output] = LongFunctions(probe.string());
  fs::remove(probe);
  EXPECT_NE(probe_status, 0);
  EXPECT_NE(probe_output.find("124 lines: int Long(int v)"), std::string::npos) << probe_output;
  EXPECT_EQ(probe_output.find("Short"), std::string::npos) << probe_output;
  // ... and sim/ has none.
  const auto [status, output] = LongFunctions(std::string(DSP_SOURCE_DIR) + "/sim");
  EXPECT_EQ(status, 0) << output;
}

}  // namespace
}  // namespace dsp
