// SPDX-License-Identifier: Apache-2.0
// Exit codes and machine-readable outputs of the ds-plan binary.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/json/document.h"
#include "core/report/validate_report.h"
#include "core/schema/embedded.h"
#include "tests/apps/cli_test_util.h"
#include "tests/apps/report_schema_util.h"

namespace dsp {
namespace {

using testing::RunCli;
using testing::SchemaErrors;
using testing::ShellQuote;

constexpr const char* kFolding = "samples/configs/folding-tp2-ep4.json";


// Option-parser errors carry the same "ds-plan: error:" prefix as every usage error, exit 2, and a
// misspelt flag gets the closest option of the command it was given to.
TEST(CliTest, MisspeltFlagsGetASuggestion) {
  auto r = testing::RunCli("simulate --world-sise 8 samples/configs/autosp-sp4.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("ds-plan: error: unknown option '--world-sise' for simulate, did you mean "
                          "'--world-size'?"), std::string::npos) << r.output;
  r = testing::RunCli("visualize schedule --rank 0 x");
  EXPECT_NE(r.output.find("for visualize schedule, did you mean '--ranks'?"), std::string::npos) << r.output;
  r = testing::RunCli("simulate x --model y");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output.rfind("ds-plan: error: ", 0), 0u) << r.output;
  // A world too large for the layout code is a usage error (2), not a config error (1).
  r = testing::RunCli("groups samples/configs/autosp-sp4.json --nodes 65536 --gpus-per-node 1024");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("at most 1048576"), std::string::npos) << r.output;
}

TEST(CliTest, ValidConfigExitsZero) {
  auto r = RunCli(std::string("validate ") + kFolding + " --world-size 8");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(": ok"), std::string::npos) << r.output;
}

TEST(CliTest, InvalidConfigExitsOne) {
  auto r = RunCli("validate samples/configs/invalid/batch-mismatch.json --world-size 8");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("batch-mismatch.json:2:23: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[batch-mismatch]"), std::string::npos);
  auto syntax = RunCli("validate samples/configs/invalid/json-syntax.json");
  EXPECT_EQ(syntax.exit_code, 1) << syntax.output;
}

// The launcher decides whether a context-dependent finding fails the run (docs/validate.md).
TEST(CliTest, ConsumerDecidesTheExitCode) {
  std::filesystem::path dir = std::filesystem::path(DSP_SOURCE_DIR) / "build" / "test-tmp" /
                              ("consumer-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string cfg = (dir / "megatron.json").string();
  std::ofstream(cfg) << R"({"train_batch_size": 8, "gradient_clipping": 1.0,
    "optimizer": {"type": "Adam", "params": {"lr": 0.0001, "max_grad_norm": 1.0}}})";
  auto plain = RunCli("validate " + cfg);
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_NE(plain.output.find("warning:"), std::string::npos);
  EXPECT_NE(plain.output.find("pass --consumer"), std::string::npos) << plain.output;
  EXPECT_EQ(RunCli("validate " + cfg + " --consumer megatron-deepspeed").exit_code, 0);
  auto ds = RunCli("validate " + cfg + " --consumer deepspeed");
  EXPECT_EQ(ds.exit_code, 1) << ds.output;
  EXPECT_NE(ds.output.find("[optimizer-max-grad-norm]"), std::string::npos);
  auto env = RunCli(std::string("validate --world-size 8 --torch-version 2.5.1 ") + kFolding);
  EXPECT_EQ(env.exit_code, 0) << env.output;  // no torch guard applies to the folding sample
  std::filesystem::remove_all(dir);
}

TEST(CliTest, UsageAndIoProblemsExitTwo) {
  EXPECT_EQ(RunCli("validate does/not/exist.json").exit_code, 2);
  EXPECT_EQ(RunCli("validate samples/configs").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --no-such-flag").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --format yaml").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --world-size 0").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --world-size 8 --nodes 2 --gpus-per-node 8").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --set novalue").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --model does/not/exist.json").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --deepspeed-version banana").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --consumer lightning").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --torch-version banana").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --transformers-version 5.x").exit_code, 2);
  EXPECT_EQ(RunCli("validat x.json").exit_code, 2);
  EXPECT_NE(RunCli("validat x.json").output.find("did you mean 'validate'"), std::string::npos);
  EXPECT_EQ(RunCli("").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("groups ") + kFolding).exit_code, 2);  // no world size
  EXPECT_EQ(RunCli(std::string("groups ") + kFolding + " --world-size 8 --rank 8").exit_code, 2);
  EXPECT_EQ(RunCli("explain no-such-rule").exit_code, 2);
}

TEST(CliTest, WerrorTurnsWarningsIntoFailure) {
  // The sample has a comment-free, warning-free folding config; hf-auto has notes only.
  auto r = RunCli("validate samples/configs/invalid/zero-typos.json --world-size 4 --werror");
  EXPECT_EQ(r.exit_code, 1);
  auto hf = RunCli("validate samples/configs/hf-auto.json --world-size 8 --werror");
  auto plain = RunCli("validate samples/configs/hf-auto.json --world-size 8");
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
  bool has_warning = plain.output.find(": warning:") != std::string::npos;
  EXPECT_EQ(hf.exit_code, has_warning ? 1 : 0) << hf.output;
}

TEST(CliTest, JsonReportMatchesItsSchema) {
  auto r = RunCli(std::string("validate ") + kFolding + " samples/configs/invalid/zero-typos.json --world-size 8 --format json", false);
  EXPECT_EQ(r.exit_code, 1);
  Json doc = Json::parse(r.output, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.output;
  EXPECT_EQ(SchemaErrors(schemas::k_validate_report_schema_json, doc), "");
  ASSERT_EQ(doc["files"].size(), 2u);
  EXPECT_TRUE(doc["files"][0]["valid"].get<bool>());
  EXPECT_EQ(doc["files"][0]["layout"]["tp"], 2);
  EXPECT_EQ(doc["files"][0]["layout"]["dp"], 4);
  EXPECT_EQ(doc["files"][0]["layout"]["edp"], 2);
  EXPECT_FALSE(doc["files"][1]["valid"].get<bool>());
  // Without a world size the derived sizes are null.
  auto nw = RunCli(std::string("validate ") + kFolding + " --format json", false);
  Json nwdoc = Json::parse(nw.output);
  EXPECT_TRUE(nwdoc["files"][0]["layout"]["dp"].is_null());
  EXPECT_TRUE(nwdoc["files"][0]["layout"]["world_size"].is_null());
}

TEST(CliTest, GroupsJsonMatchesItsSchema) {
  auto r = RunCli(std::string("groups ") + kFolding + " --nodes 2 --gpus-per-node 4 --format json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json doc = Json::parse(r.output);
  EXPECT_EQ(SchemaErrors(schemas::k_groups_report_schema_json, doc), "");
  EXPECT_EQ(doc["groups"]["ep"], Json::parse("[[0,1,2,3],[4,5,6,7]]"));
  EXPECT_EQ(doc["groups"]["edp"], Json::parse("[[0,4],[1,5],[2,6],[3,7]]"));
  EXPECT_EQ(doc["crosses_node"]["tp"], false);
  EXPECT_EQ(doc["crosses_node"]["edp"], true);
  auto rank = RunCli(std::string("groups ") + kFolding + " --world-size 8 --rank 5 --format json", false);
  Json rd = Json::parse(rank.output);
  EXPECT_EQ(SchemaErrors(schemas::k_groups_report_schema_json, rd), "");
  EXPECT_EQ(rd["groups"]["tp"], Json::parse("[[4,5]]"));
  EXPECT_EQ(rd["groups"]["dp"], Json::parse("[[1,3,5,7]]"));
  EXPECT_EQ(rd["groups"]["ep"], Json::parse("[[4,5,6,7]]"));
  EXPECT_EQ(rd["groups"]["edp"], Json::parse("[[1,5]]"));
}

// An unknown --deepspeed-version says which versions the rules know (issue 16), the same words
// from validate, simulate and tune (core/config/deepspeed_version.h: ParseKnownDeepSpeedVersion).
TEST(CliTest, AnUnknownDeepSpeedVersionSaysWhichVersionsAreKnown) {
  for (const std::string& command : {std::string("validate ") + kFolding,
                                    std::string("simulate ") + kFolding + " --model samples/models/mixtral-8x7b.json "
                                        "--cluster samples/clusters/h100-sxm.json --world-size 8",
                                    std::string("tune --model samples/models/llama-3-8b.json "
                                                "--cluster samples/clusters/h100-sxm.json --world-size 8")}) {
    auto newer = RunCli(command + " --deepspeed-version 0.25");
    EXPECT_EQ(newer.exit_code, 2) << command;
    EXPECT_NE(newer.output.find("0.25.0 is newer than any release the rules know: ds-plan knows DeepSpeed 0.1.0 to "
                                "0.19.6 (main at edaa7221) and master (PRs #8213, #8266, #8274, #8326, #8359, "
                                "#8380); behaviour it checks changes at 0.3.16, "),
              std::string::npos)
        << newer.output;
    auto malformed = RunCli(command + " --deepspeed-version 0.x");
    EXPECT_EQ(malformed.exit_code, 2) << command;
    EXPECT_NE(malformed.output.find("\"0.x\" is not a version (X.Y, X.Y.Z or master): ds-plan knows DeepSpeed"),
              std::string::npos)
        << malformed.output;
  }
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --world-size 8 --deepspeed-version 0.0.9").exit_code, 2);
  // master, spelled exactly so, is a target of its own (newer than the default 0.19.6).
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --world-size 8 --deepspeed-version master").exit_code, 0);
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --world-size 8 --deepspeed-version MASTER").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("validate ") + kFolding + " --world-size 8 --deepspeed-version v0.19.3").exit_code, 0);
}

// Colour on a terminal only (issue 16): `script` (util-linux, Debian's essential bsdutils) gives
// the command a pseudo-terminal, so auto mode is tested where it applies.
TEST(CliTest, DiagnosticsAreColouredOnATerminalOnly) {
  const std::string bad = "validate samples/configs/invalid/batch-mismatch.json --world-size 8";
  const std::string red = "\033[1;31merror:\033[0m";
  auto on_tty = [&](const std::string& env, const std::string& flags) {
    const std::string inner = env + " " + ShellQuote(DSP_BINARY) + " " + bad + flags;
    return testing::RunShell("TERM=xterm script -qec " + ShellQuote(inner) + " /dev/null");
  };
  EXPECT_NE(on_tty("", "").find(red), std::string::npos);
  EXPECT_EQ(on_tty("NO_COLOR=1", "").find("\033["), std::string::npos);
  EXPECT_NE(on_tty("NO_COLOR=1", " --color always").find(red), std::string::npos);
  EXPECT_EQ(on_tty("TERM=dumb", "").find("\033["), std::string::npos);
  EXPECT_EQ(on_tty("", " --color never").find("\033["), std::string::npos);
  // A pipe gets plain text unless asked; --color goes before or after the command.
  EXPECT_EQ(RunCli(bad).output.find("\033["), std::string::npos);
  EXPECT_NE(RunCli(bad + " --color always").output.find(red), std::string::npos);
  EXPECT_NE(RunCli("--color=always " + bad).output.find("\033[1;32m^\033[0m"), std::string::npos);
  EXPECT_NE(RunCli("validate nope.json --color always").output.find("\033[1;31merror:\033[0m cannot read"),
            std::string::npos);
  EXPECT_EQ(RunCli(bad + " --color sometimes").exit_code, 2);
}

// A diagnostic that quotes a user's key stays small however long the key is (issue 16).
TEST(CliTest, DiagnosticsQuoteLongKeysClipped) {
  const std::filesystem::path config =
      std::filesystem::temp_directory_path() / ("ds-plan-long-key-" + std::to_string(getpid()) + ".json");
  { std::ofstream(config) << "{\"" << std::string(2'000'000, 'k') << "\": 1, \"train_batch_size\": 8}\n"; }
  auto r = RunCli("validate " + ShellQuote(config.string()) + " --format json", false);
  std::filesystem::remove(config);
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 500);
  EXPECT_LT(r.output.size(), 20'000u);
  EXPECT_NE(r.output.find("kkkk... (200"), std::string::npos) << r.output.substr(0, 2000);
}

// --set into a legacy boolean section (`"zero_optimization": true`) replaces it with an object in
// every command, as validate does, instead of an internal error (issue 16).
TEST(CliTest, SetIntoALegacyBooleanSectionWorksEverywhere) {
  const std::filesystem::path config =
      std::filesystem::temp_directory_path() / ("ds-plan-legacy-" + std::to_string(getpid()) + ".json");
  { std::ofstream(config) << "{\"train_batch_size\": 8, \"zero_optimization\": true}\n"; }
  const std::string c = ShellQuote(config.string());
  const std::string sim = " --model samples/models/llama-3-8b.json --cluster samples/clusters/h100-sxm.json --world-size 8";
  for (const std::string& command : {"validate " + c + " --world-size 8", "groups " + c + " --world-size 8",
                                     "simulate " + c + sim, "plan " + c + sim + " -o -",
                                     "visualize schedule " + c + sim + " --format json -o -"}) {
    auto r = RunCli(command + " --set zero_optimization.stage=2");
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.output.substr(0, 1000);
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << command;
  }
  auto simulated = RunCli("simulate " + c + sim + " --set zero_optimization.stage=2", false);
  EXPECT_NE(simulated.output.find("zero=2"), std::string::npos) << simulated.output;
  std::filesystem::remove(config);
}

TEST(CliTest, SarifIsVersion210WithLocations) {
  auto r = RunCli("validate samples/configs/invalid/batch-mismatch.json --world-size 8 --format sarif", false);
  Json doc = Json::parse(r.output);
  EXPECT_EQ(doc["version"], "2.1.0");
  const Json& run = doc["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["name"], "ds-plan");
  ASSERT_FALSE(run["results"].empty());
  const Json* found = nullptr;
  for (const auto& result : run["results"]) {
    if (result["ruleId"] == "batch-mismatch") found = &result;
  }
  ASSERT_NE(found, nullptr) << r.output;
  const Json& first = *found;
  EXPECT_EQ(first["level"], "error");
  const Json& region = first["locations"][0]["physicalLocation"]["region"];
  EXPECT_EQ(region["startLine"], 2);
  size_t index = first["ruleIndex"].get<size_t>();
  EXPECT_EQ(run["tool"]["driver"]["rules"][index]["id"], "batch-mismatch");
}

// SARIF declares its column unit and counts in it; URIs are percent-encoded; a missing input
// still gives a SARIF file (issue 16: the docs/ci.md recipe uploads it whatever the exit code).
TEST(CliTest, SarifColumnsAreCodePointsAndUrisAreEncoded) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ds plan #" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path config = dir / "caf\u00e9.json";
  // "é" is two bytes and one code point: the typo's key starts at byte 20, code point 19.
  { std::ofstream(config) << "{\"_note\": \"caf\u00e9\", \"train_batch_sizee\": 8}\n"; }
  auto r = RunCli("validate " + ShellQuote(config.string()) + " --format sarif", false);
  Json doc = Json::parse(r.output);
  const Json& run = doc["runs"][0];
  EXPECT_EQ(run["columnKind"], "unicodeCodePoints");
  EXPECT_EQ(run["invocations"][0]["executionSuccessful"], true);
  const Json* typo = nullptr;
  for (const auto& result : run["results"]) {
    if (result["ruleId"] == "unknown-key") typo = &result;
  }
  ASSERT_NE(typo, nullptr) << r.output;
  const Json& where = (*typo)["locations"][0]["physicalLocation"];
  EXPECT_EQ(where["region"]["startColumn"], 19) << r.output;
  EXPECT_EQ(where["artifactLocation"]["uri"], "file://" + SarifUri(dir.string()).substr(7) + "/caf%C3%A9.json");
  EXPECT_NE(where["artifactLocation"]["uri"].get<std::string>().find("ds%20plan%20%23"), std::string::npos);
  auto github = RunCli("validate " + ShellQuote(config.string()) + " --format github", false);
  EXPECT_NE(github.output.find(",line=1,col=19,title=unknown-key"), std::string::npos) << github.output;
  // The text form counts bytes (as nlohmann/json and clang do) and puts the caret under the key.
  auto text = RunCli("validate " + ShellQuote(config.string()));
  EXPECT_NE(text.output.find(":1:20: warning: unknown key"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("\n   |                   ^\n  at /train_batch_sizee"), std::string::npos) << text.output;

  auto missing = RunCli("validate " + ShellQuote(config.string()) + " does/not/exist.json --format sarif", false);
  EXPECT_EQ(missing.exit_code, 2);
  Json partial = Json::parse(missing.output, nullptr, false);
  ASSERT_FALSE(partial.is_discarded()) << missing.output;
  const Json& invocation = partial["runs"][0]["invocations"][0];
  EXPECT_EQ(invocation["executionSuccessful"], false);
  EXPECT_EQ(invocation["toolExecutionNotifications"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "does/not/exist.json");
  EXPECT_FALSE(partial["runs"][0]["results"].empty());  // the readable file is still checked
  std::filesystem::remove_all(dir);
}

TEST(CliTest, SarifUriEncodesWhatAUriCannotHold) {
  EXPECT_EQ(SarifUri("samples/configs/a.json"), "samples/configs/a.json");
  EXPECT_EQ(SarifUri("my configs/50%#1.json"), "my%20configs/50%25%231.json");
  EXPECT_EQ(SarifUri("/abs/x y.json"), "file:///abs/x%20y.json");
  EXPECT_EQ(SarifUri("\u00e9"), "%C3%A9");
}

TEST(CliTest, GithubAnnotations) {
  auto r = RunCli("validate samples/configs/invalid/batch-mismatch.json --world-size 8 --format github", false);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("::error file=samples/configs/invalid/batch-mismatch.json,line=2,col=23,title=batch-mismatch::"),
            std::string::npos)
      << r.output;
}

TEST(CliTest, RulesAndExplainComeFromTheRegistry) {
  auto list = RunCli("rules");
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_NE(list.output.find("batch-mismatch"), std::string::npos);
  auto explain = RunCli("explain batch-mismatch");
  EXPECT_EQ(explain.exit_code, 0);
  EXPECT_NE(explain.output.find("train_batch_size"), std::string::npos);
  auto guess = RunCli("explain batch-mismatc");
  EXPECT_NE(guess.output.find("did you mean 'batch-mismatch'"), std::string::npos);
  auto json = RunCli("rules --format json", false);
  Json doc = Json::parse(json.output);
  EXPECT_GT(doc["rules"].size(), 20u);
}

TEST(CliTest, DeterministicOutput) {
  std::string args = std::string("validate ") + kFolding + " samples/configs/invalid/zero-typos.json --world-size 8 --format sarif";
  EXPECT_EQ(RunCli(args).output, RunCli(args).output);
}

}  // namespace
}  // namespace dsp

namespace dsp {
namespace {

// docs/rules.md is generated from the registry; this keeps it from going stale.
TEST(CliTest, RuleCatalogueDocIsCurrent) {
  std::ifstream in(std::string(DSP_SOURCE_DIR) + "/docs/rules.md");
  ASSERT_TRUE(in) << "docs/rules.md is missing";
  std::stringstream doc;
  doc << in.rdbuf();
  auto r = testing::RunCli("rules --format markdown", false);
  EXPECT_EQ(r.output, doc.str())
      << "regenerate: build/release/ds-plan rules --format markdown > docs/rules.md";
}

// --version names the release, the commit it was built from and the DeepSpeed tree the rules follow.
TEST(CliTest, VersionNamesTheCommitAndTheRulesSource) {
  auto r = RunCli("--version");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ds-plan 0.1.0 (commit "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("validate rules: deepspeedai/DeepSpeed main at edaa7221"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace dsp
