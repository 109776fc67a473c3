// SPDX-License-Identifier: Apache-2.0
// Compares every case in tests/golden/cases.txt with its checked-in output, byte for byte.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

struct GoldenCase {
  std::string name;
  std::string args;
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<GoldenCase> LoadCases() {
  std::vector<GoldenCase> cases;
  std::ifstream in(std::string(DSP_SOURCE_DIR) + "/tests/golden/cases.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (Trim(line).empty() || Trim(line)[0] == '#') continue;
    auto bar = line.find('|');
    if (bar == std::string::npos) continue;
    cases.push_back({Trim(line.substr(0, bar)), Trim(line.substr(bar + 1))});
  }
  return cases;
}

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenTest, OutputMatches) {
  const GoldenCase& c = GetParam();
  std::ifstream in(std::string(DSP_SOURCE_DIR) + "/tests/golden/" + c.name + ".out");
  ASSERT_TRUE(in) << "missing tests/golden/" << c.name << ".out: run scripts/update-golden.sh";
  std::stringstream expected;
  expected << in.rdbuf();
  auto r = testing::RunCli(c.args);
  // Same framing as scripts/update-golden.sh ($(...) drops trailing newlines).
  std::string out = r.output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  std::string actual = out + "\n[exit " + std::to_string(r.exit_code) + "]\n";
  EXPECT_EQ(actual, expected.str()) << "ds-plan " << c.args
                                    << "\n(if the change is intended: scripts/update-golden.sh)";
}

INSTANTIATE_TEST_SUITE_P(Cli, GoldenTest, ::testing::ValuesIn(LoadCases()),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace dsp
