// SPDX-License-Identifier: Apache-2.0
// README examples stay true: every fenced block that starts with "$ ds-plan ARGS" must show exactly
// what that command prints today.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

struct Example {
  std::string args;
  std::string expected;
};

std::vector<Example> ReadmeExamples() {
  std::ifstream in(std::string(DSP_SOURCE_DIR) + "/README.md");
  std::vector<Example> out;
  std::string line;
  bool in_block = false;
  Example* current = nullptr;
  while (std::getline(in, line)) {
    if (line.starts_with("```")) {
      in_block = !in_block;
      current = nullptr;
      continue;
    }
    if (!in_block) continue;
    if (current == nullptr && line.starts_with("$ ds-plan ")) {
      out.push_back({line.substr(10), ""});
      current = &out.back();
    } else if (current != nullptr) {
      current->expected += line + "\n";
    }
  }
  return out;
}

TEST(ReadmeTest, ExamplesShowRealOutput) {
  auto examples = ReadmeExamples();
  ASSERT_GE(examples.size(), 4u) << "README lost its examples";
  for (const auto& e : examples) {
    auto r = testing::RunCli(e.args, false);
    EXPECT_EQ(r.output, e.expected) << "README example is stale: ds-plan " << e.args;
  }
}

}  // namespace
}  // namespace dsp
