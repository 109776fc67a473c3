// SPDX-License-Identifier: Apache-2.0
// docs/plan.md (`ds-plan check` on the sample snapshots), docs/explore.md (a scripted session) and
// docs/compare.md (traces against the model)
// show real output: every fenced block that starts with "$ ds-plan ARGS" must be exactly what that
// command prints today (like the README). scripts/update-doc-examples.py rewrites them.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

struct DocFile {
  const char* path;
  size_t min_examples;
};

class DocExamplesTest : public ::testing::TestWithParam<DocFile> {};

TEST_P(DocExamplesTest, ShowRealOutput) {
  const std::string path = GetParam().path;
  std::ifstream in(std::string(DSP_SOURCE_DIR) + "/" + path);
  ASSERT_TRUE(in) << path << " is missing";
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
  ASSERT_GE(examples.size(), GetParam().min_examples) << path << " lost its examples";
  for (const auto& [args, expected] : examples) {
    EXPECT_EQ(testing::RunCli(args, false).output, expected) << path << " example is stale: ds-plan " << args;
  }
}

INSTANTIATE_TEST_SUITE_P(Docs, DocExamplesTest,
                         ::testing::Values(DocFile{"docs/plan.md", 2}, DocFile{"docs/explore.md", 1},
                                           DocFile{"docs/compare.md", 2}),
                         [](const auto& info) {
                           std::string name = info.param.path;
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace dsp
