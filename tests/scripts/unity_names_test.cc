// SPDX-License-Identifier: Apache-2.0
// scripts/unity-names.py: no two sources of a unity-built library (CMakeLists.txt,
// DSP_UNITY_BUILD) define a helper of one name where one of them sits in an anonymous namespace,
// so no call can silently reach another file's helper once the sources share a translation unit.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

namespace fs = std::filesystem;

// The script over `root`: its exit status and what it printed.
std::pair<int, std::string> UnityNames(const std::string& root) {
  const testing::CliResult r = testing::RunShellStatus("python3 scripts/unity-names.py " + testing::ShellQuote(root));
  return {r.exit_code, r.output};
}

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(UnityNamesTest, TheTreeHasNoHelperTwoSourcesShare) {
  if (std::system("python3 -c '' 2>/dev/null") != 0) GTEST_SKIP() << "python3 is not installed";
  auto [status, output] = UnityNames(DSP_SOURCE_DIR);
  EXPECT_EQ(status, 0) << output;
}

TEST(UnityNamesTest, FindsTheOverloadThatOnceMisroutedTheAutoEpRules) {
  if (std::system("python3 -c '' 2>/dev/null") != 0) GTEST_SKIP() << "python3 is not installed";
  const fs::path root = fs::temp_directory_path() / ("dsp-unity-names-" + std::to_string(getpid()));
  // The shape of the bug: one rule file's Key(const char*) and another's `using autoep::Key;`, both
  // in dsp's anonymous namespace; in one unity unit the first is the better match for Key("x").
  Write(root / "core/rules/a.cc",
        "namespace dsp {\nnamespace {\n\nstd::string Key(const char* key) { return key; }\n\n}  // namespace\n"
        "}  // namespace dsp\n");
  Write(root / "core/rules/b.cc",
        "namespace dsp {\nnamespace {\n\nusing autoep::Key;\n\n}  // namespace\n}  // namespace dsp\n");
  // Public overloads declared in headers are ordinary C++ and are not reported.
  Write(root / "sim/x.cc", "namespace dsp::sim {\n\nint Evaluate(int runs) { return runs; }\n\n}  // namespace dsp::sim\n");
  Write(root / "sim/y.cc", "namespace dsp::sim {\n\nint Evaluate(double x) { return 0; }\n\n}  // namespace dsp::sim\n");
  auto [status, output] = UnityNames(root.string());
  EXPECT_EQ(status, 1) << output;
  EXPECT_NE(output.find("dsp_core: dsp::Key in core/rules/a.cc, core/rules/b.cc"), std::string::npos) << output;
  EXPECT_EQ(output.find("Evaluate"), std::string::npos) << output;
  fs::remove_all(root);
}

}  // namespace
}  // namespace dsp
