// SPDX-License-Identifier: Apache-2.0
// docs/plan.md shows real `ds-plan check` output on the sample snapshots: every fenced block that
// starts with "$ ds-plan ARGS" must be exactly what that command prints today (like the README).
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

TEST(PlanDocTest, ExamplesShowRealOutput) {
  std::ifstream in(std::string(DSP_SOURCE_DIR) + "/docs/plan.md");
  ASSERT_TRUE(in) << "docs/plan.md is missing";
  std::vector<std::pair<std::string, std::string>> examples;  // args, expected output
  bool in_block = false, current = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("```")) {
      in_block = !in_block;
      current = false;
    } else if (in_block && !current && line.starts_with("$ ds-plan ")) {
      examples.emplace_back(line.substr(10), "");
      current = true;
    } else if (current) {
      examples.back().second += line + "\n";
    }
  }
  ASSERT_GE(examples.size(), 2u) << "docs/plan.md lost its examples";
  for (const auto& [args, expected] : examples) {
    EXPECT_EQ(testing::RunCli(args, false).output, expected) << "docs/plan.md example is stale: ds-plan " << args;
  }
}

}  // namespace
}  // namespace dsp
