// ds-plan tune from the command line: report schema, exit codes, --emit-config.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/apps/cli_test_util.h"
#include "tests/apps/report_schema_util.h"

namespace dsp {
namespace {

using testing::RunCli;
using testing::SchemaErrors;
using testing::ShellQuote;

constexpr const char* kLlama8b = " --model samples/models/llama-3-8b.json --cluster samples/clusters/h100-sxm.json";

TEST(TuneCliTest, JsonReportMatchesItsSchema) {
  auto r = RunCli(std::string("tune") + kLlama8b + " --world-size 16 --top 4 --format json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json doc = Json::parse(r.output);
  EXPECT_EQ(SchemaErrors(schemas::k_tune_report_schema_json, doc), "") << doc.dump(2);
  EXPECT_EQ(doc["plans"].size(), 4u);
  EXPECT_GE(doc["evaluated"].get<int64_t>(), doc["valid"].get<int64_t>());
}

TEST(TuneCliTest, UsageErrors) {
  EXPECT_EQ(RunCli(std::string("tune") + kLlama8b).exit_code, 2);  // no world size
  EXPECT_EQ(RunCli("tune --model samples/models/llama-3-8b.json --cluster does/not/exist.json --world-size 8").exit_code, 2);
  EXPECT_EQ(RunCli("tune --model samples/configs/folding-tp2-ep4.json --cluster samples/clusters/h100-sxm.json --world-size 8").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("tune") + kLlama8b + " --world-size 8 --top 0").exit_code, 2);
}

TEST(TuneCliTest, EmittedConfigValidatesAndIsNeverOverwrittenSilently) {
  auto dir = std::filesystem::temp_directory_path() / ("ds-plan-tune-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "best.json").string();
  auto r = RunCli(std::string("tune") + kLlama8b + " --world-size 16 --seq-len 8192 --emit-config " + ShellQuote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(std::filesystem::exists(out));
  auto v = RunCli("validate " + ShellQuote(out) + " --world-size 16 --model samples/models/llama-3-8b.json --seq-len 8192");
  EXPECT_EQ(v.exit_code, 0) << v.output;

  // A second run must not replace the file without --force.
  std::ofstream(out) << "{\"mine\": true}\n";
  auto again = RunCli(std::string("tune") + kLlama8b + " --world-size 16 --emit-config " + ShellQuote(out));
  EXPECT_EQ(again.exit_code, 2) << again.output;
  std::ifstream in(out);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "{\"mine\": true}\n");
  auto forced = RunCli(std::string("tune") + kLlama8b + " --world-size 16 --emit-config " + ShellQuote(out) + " --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dsp
