// SPDX-License-Identifier: Apache-2.0
// The configs of tests/data/configs-2024-2026 (issue 33): real DeepSpeed configs written in
// 2024-2026, each validated under the launcher that reads it in its repository (SOURCES.tsv's
// consumer column), at the default target and at master. An error is allowed only where DeepSpeed
// itself refuses the file, and each such file is listed below with DeepSpeed's reason; an entry
// that no longer fires fails the test too.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "core/util/file_io.h"
#include "core/validate/validator.h"

namespace dsp {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(DSP_SOURCE_DIR) / "tests/data/configs-2024-2026";

struct Row {
  std::string file, repo, path, commit, last_changed, license, consumer, evidence;
};

std::vector<Row> Sources() {
  std::ifstream in(kDir / "SOURCES.tsv");
  std::vector<Row> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, '\t');) f.push_back(cell);
    if (f.size() != 8) ADD_FAILURE() << "SOURCES.tsv row with " << f.size() << " columns: " << line;
    if (f.size() == 8) rows.push_back({f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]});
  }
  return rows;
}

// The errors DeepSpeed raises on these files, and why.
const std::map<std::string, std::set<std::string>>& Kept() {
  static const std::map<std::string, std::set<std::string>> kept = {
      // fp16 loss-scale keys (loss_scale, initial_scale_power, ...) inside "bf16": DeepSpeedBF16Config
      // (runtime/precision_config.py) is a pydantic model with extra="forbid" since 0.17.1 (PR #6976),
      // so get_bfloat16_config raises a ValidationError for each.
      {"FlagOpen__FlagEmbedding__examples__finetune__ds_stage1.json", {"unknown-key"}},
      {"FlagOpen__FlagEmbedding__research__Long_LLM__activation_beacon__data__deepspeed__stage2.json", {"unknown-key"}},
      {"FlagOpen__FlagEmbedding__research__Long_LLM__activation_beacon__data__deepspeed__stage2-offload.json",
       {"unknown-key"}},
      {"FlagOpen__FlagEmbedding__research__llm_reranker__stage1.json", {"unknown-key"}},
      // compile.disable and compile.backend: CompileConfig (deepspeed/compile/config.py) no longer has
      // them and forbids extra keys.
      {"axolotl-ai-cloud__axolotl__deepspeed_configs__zero2_torch_compile.json", {"unknown-key"}},
  };
  return kept;
}

Consumer ConsumerOf(const std::string& name) {
  if (name == "hf-trainer") return Consumer::kHfTrainer;
  if (name == "accelerate") return Consumer::kAccelerate;
  if (name == "deepspeed") return Consumer::kDeepSpeed;
  if (name == "megatron-deepspeed") return Consumer::kMegatronDeepSpeed;
  return Consumer::kUnspecified;  // "other": a launcher validate does not model
}

TEST(Configs2024To2026Test, EveryFileIsListedWithItsSourceAndLauncher) {
  const std::vector<Row> rows = Sources();
  EXPECT_GE(rows.size(), 60u);
  std::set<std::string> listed;
  for (const Row& r : rows) {
    EXPECT_TRUE(listed.insert(r.file).second) << "listed twice: " << r.file;
    EXPECT_TRUE(fs::is_regular_file(kDir / r.file)) << r.file;
    EXPECT_GE(r.last_changed, "2024-01-01") << r.file;
    EXPECT_EQ(r.commit.size(), 40u) << r.file;
    EXPECT_TRUE(r.license == "Apache-2.0" || r.license == "MIT") << r.file << ": " << r.license;
    EXPECT_TRUE(r.consumer == "hf-trainer" || r.consumer == "accelerate" || r.consumer == "deepspeed" ||
                r.consumer == "megatron-deepspeed" || r.consumer == "other")
        << r.file;
    EXPECT_FALSE(r.evidence.empty()) << r.file;
  }
  for (const auto& e : fs::directory_iterator(kDir)) {
    const std::string name = e.path().filename().string();
    if (name == "SOURCES.tsv" || name == "README.md") continue;
    EXPECT_TRUE(listed.contains(name)) << name << " is not in SOURCES.tsv";
  }
}

TEST(Configs2024To2026Test, NoErrorThatDeepSpeedWouldNotRaise) {
  const std::vector<Row> rows = Sources();
  ASSERT_FALSE(rows.empty());
  for (const char* target : {"0.19.6", "master"}) {
    int with_errors = 0;
    for (const Row& r : rows) {
      auto text = ReadFile((kDir / r.file).string());
      ASSERT_TRUE(text.ok()) << r.file;
      ValidateOptions options;
      options.consumer = ConsumerOf(r.consumer);
      options.version = DeepSpeedVersion::Parse(target).value();
      FileReport report = ValidateText(r.file, *text, options);
      std::set<std::string> errors;
      std::string shown;
      for (const Diagnostic& d : report.diagnostics) {
        if (d.severity != Severity::kError) continue;
        errors.insert(d.rule_id);
        shown += "  [" + d.rule_id + "] " + d.pointer + ": " + d.message.substr(0, 240) + "\n";
      }
      auto it = Kept().find(r.file);
      const std::set<std::string> none;
      const std::set<std::string>& kept = it == Kept().end() ? none : it->second;
      for (const std::string& e : errors) {
        EXPECT_TRUE(kept.contains(e)) << r.file << " (" << r.consumer << ", " << target << "): error DeepSpeed does not "
                                      << "raise?\n" << shown;
      }
      for (const std::string& k : kept) EXPECT_TRUE(errors.contains(k)) << r.file << ": [" << k << "] no longer fires";
      with_errors += errors.empty() ? 0 : 1;
    }
    EXPECT_EQ(with_errors, static_cast<int>(Kept().size())) << target;
  }
}

}  // namespace
}  // namespace dsp
