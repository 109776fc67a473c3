// SPDX-License-Identifier: Apache-2.0
// Runs validate over a corpus of real-world configs from public repositories (DSP_CORPUS_DIR, or
// the development checkout's corpus folder beside the source tree): every file must
// end in exit code 0 or 1 (never a crash, hang or usage error), and with no flags the only
// errors are the ones listed below with their reason.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

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

// The errors validate keeps on corpus files with no flags, and why (docs/validate.md, "The corpus").
// Any other error on a corpus file is a false alarm and fails the test; an entry that no longer
// fires fails it too, so the table and the docs stay true.
struct KeptErrors {
  std::set<std::string> rules;
  const char* why;
};

const std::map<std::string, KeptErrors>& Kept() {
  static const char* kTemplate =
      "a template: the repository's script substitutes placeholders before launch; hjson reads "
      "each placeholder as a string and DeepSpeed's type checks fail on it";
  static const char* kNowPydantic =
      "written for a DeepSpeed release that read the section as a dict; 0.19.6 validates it with "
      "pydantic (DeepSpeedConfigModel, extra=forbid, runtime/config_utils.py) and refuses it";
  static const std::map<std::string, KeptErrors> kept = {
      {"CarperAI__trlx__examples__summarize_rlhf__configs__ds_config_trlx_gptj_summarize.json",
       {{"schema-type", "unknown-key"}, kNowPydantic}},
      {"EeyoreLee__chatglm-lora__ds_config.json", {{"unknown-key"}, kNowPydantic}},
      {"ymcui__Chinese-LLaMA-Alpaca__scripts__training__ds_zero2_no_offload.json",
       {{"schema-type"}, "fp16.min_loss_scale 1e-10: DeepSpeedFP16Config.min_loss_scale is an int (runtime/precision_config.py)"}},
      {"axolotl-ai-cloud__axolotl__deepspeed_configs__zero1_torch_compile.json",
       {{"unknown-key"}, "compile.disable/backend: CompileConfig (compile/config.py) no longer has them"}},
      {"deepspeedai__DeepSpeedExamples__Megatron-LM-v1.1.5-ZeRO3__examples__ds_zero_stage_3_config_release.json",
       {{"unknown-key"}, kNowPydantic}},
      {"deepspeedai__DeepSpeedExamples__Megatron-LM-v1.1.5-ZeRO3__examples__ds_zero_stage_infinity_config.json",
       {{"unknown-key"}, kNowPydantic}},
      {"huggingface__transformers__tests__deepspeed__ds_config_zero3@61c7ec9.json",
       {{"zero-reduce-bucket-zero"},
        "reduce_bucket_size 0 with a release before the bucket report's division; from 0.19.1 the first "
        "backward raises ZeroDivisionError (DeepSpeed issue #8260)"}},
      {"axolotl-ai-cloud__axolotl__deepspeed__zero3.json",
       {{"json-syntax"}, "the corpus copy lacks its opening brace: hjson reads a braceless root and stops at the final }"}},
      {"EleutherAI__gpt-neox__configs__autotuning_configs__small_tune.json",
       {{"schema-enum", "schema-type"}, "an autotuning search space (lists of stages): the autotuner expands it"}},
      {"deepspeedai__DeepSpeedExamples__benchmarks__deepcompile__configs__ds_config.json.template.json", {{"json-syntax"}, kTemplate}},
      {"tohtana__ds_verify_loss__configs__ds_config.json.template.json", {{"json-syntax"}, kTemplate}},
      {"deepspeedai__DeepSpeedExamples__compression__bert__config__ds_config_TEMPLATE.json", {{"schema-type"}, kTemplate}},
      {"deepspeedai__DeepSpeedExamples__training__data_efficiency__gpt_finetuning__finetune__ds_config_gpt2-medium_2clmetrics_TEMPLATE.json",
       {{"schema-type"}, kTemplate}},
      {"deepspeedai__DeepSpeedExamples__training__tensor_parallel__hf_integration__configs__ds_config_temp.json",
       {{"schema-enum", "schema-type", "tp-autotp-size-invalid"}, kTemplate}},
      {"deepspeedai__Megatron-DeepSpeed__ds_config.json", {{"schema-type"}, kTemplate}},
      {"deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_TEMPLATE.json", {{"schema-enum", "schema-type"}, kTemplate}},
      {"deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_Zero2_TEMPLATE.json", {{"schema-type"}, kTemplate}},
      {"deepspeedai__Megatron-DeepSpeed__examples_deepspeed__compression__ds_config_gpt_TEMPLATE_compression.json",
       {{"schema-enum", "schema-type"}, kTemplate}},
      {"deepspeedai__Megatron-DeepSpeed__examples_deepspeed__curriculum_learning__ds_zero_stage_1_config_curriculum_fixed_linear.json",
       {{"schema-type"}, kTemplate}},
      {"deepspeedai__Megatron-DeepSpeed__examples_deepspeed__deepspeed4science__megatron_long_seq_support__ds_config_gpt_TEMPLATE.json",
       {{"schema-enum", "schema-type"}, kTemplate}},
      {"deepspeedai__Megatron-DeepSpeed__examples_deepspeed__offload_pp__ds_config_gpt_TEMPLATE.json", {{"schema-type"}, kTemplate}},
      {"deepspeedai__Megatron-DeepSpeed__examples_deepspeed__sequence_parallel__ds_config_gpt_TEMPLATE.json",
       {{"schema-enum", "schema-type"}, kTemplate}},
  };
  return kept;
}

TEST(CorpusTest, NoConfigItsRepositoryRanIsRejected) {
  auto files = CorpusFiles();
  if (files.empty()) GTEST_SKIP() << "corpus not found at " << CorpusDir();
  int with_errors = 0;
  for (const auto& f : files) {
    auto text = ReadFile(f);
    ASSERT_TRUE(text.ok()) << f;
    FileReport r = ValidateText(f, *text, ValidateOptions{});
    std::set<std::string> errors;
    for (const auto& d : r.diagnostics) {
      if (d.severity == Severity::kError) errors.insert(d.rule_id);
    }
    std::string name = fs::path(f).filename().string();
    auto it = Kept().find(name);
    const std::set<std::string> none;
    const std::set<std::string>& allowed = it == Kept().end() ? none : it->second.rules;
    for (const auto& e : errors) EXPECT_TRUE(allowed.contains(e)) << name << ": unexpected error [" << e << "]";
    for (const auto& a : allowed) EXPECT_TRUE(errors.contains(a)) << name << ": kept error [" << a << "] no longer fires";
    with_errors += errors.empty() ? 0 : 1;
  }
  std::cout << "[corpus] " << files.size() << " configs, " << with_errors << " with errors, all of them listed\n";
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
