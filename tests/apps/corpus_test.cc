// SPDX-License-Identifier: Apache-2.0
// Runs validate over a corpus of real-world configs from public repositories (DSP_CORPUS_DIR, or
// the development checkout's corpus folder beside the source tree): every file must
// end in exit code 0 or 1 (never a crash, hang or usage error).
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "core/util/file_io.h"
#include "core/validate/validator.h"
#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

namespace fs = std::filesystem;

fs::path CorpusDir() {
  if (const char* dir = std::getenv("DSP_CORPUS_DIR"); dir != nullptr && *dir != '\0') return dir;
  return fs::path(DSP_SOURCE_DIR) / ".." / "shared" / "corpus" / "deepspeed-configs";
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(CorpusDir(), ec)) {
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(CorpusTest, EveryConfigValidatesWithoutCrashing) {
  auto files = CorpusFiles();
  if (files.empty()) GTEST_SKIP() << "corpus not found at " << CorpusDir() << " (set DSP_CORPUS_DIR to a folder of DeepSpeed configs)";
  // In-process: every file, with and without a world size.
  for (const auto& f : files) {
    auto text = ReadFile(f);
    ASSERT_TRUE(text.ok()) << f;
    for (std::optional<int64_t> world : {std::optional<int64_t>{}, std::optional<int64_t>{8}}) {
      ValidateOptions o;
      o.world_size = world;
      FileReport r = ValidateText(f, *text, o);
      for (const auto& d : r.diagnostics) {
        EXPECT_FALSE(d.rule_id.empty()) << f;
        EXPECT_FALSE(d.message.empty()) << f;
      }
    }
  }
  // One process over all of them, as a user would run it in CI.
  std::string args = "validate --world-size 16";
  for (const auto& f : files) args += " " + testing::ShellQuote(f);
  auto r = testing::RunCli(args + " > /dev/null", true);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << "exit " << r.exit_code << "\n" << r.output;
}

TEST(CorpusTest, EachFileExitsZeroOrOne) {
  auto files = CorpusFiles();
  if (files.empty()) GTEST_SKIP() << "corpus not found at " << CorpusDir();
  int valid = 0, invalid = 0;
  for (const auto& f : files) {
    auto r = testing::RunCli("validate " + testing::ShellQuote(f) + " > /dev/null", true);
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << f << ": exit " << r.exit_code << "\n" << r.output;
    (r.exit_code == 0 ? valid : invalid)++;
  }
  std::cout << "[corpus] " << files.size() << " configs: " << valid << " valid, " << invalid << " with errors\n";
}

}  // namespace
}  // namespace dsp
