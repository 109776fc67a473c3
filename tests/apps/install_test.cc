// SPDX-License-Identifier: Apache-2.0
// `cmake --install` (issue 16): the binary, the schemas, the man page generated with help2man from
// --help, and bash and zsh completions generated from the command tree, in the usual places; the
// completions complete what the commands accept.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

namespace fs = std::filesystem;
using testing::RunShell;
using testing::ShellQuote;
using testing::Slurp;

class InstallTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    prefix_ = fs::temp_directory_path() / ("ds-plan-install-" + std::to_string(getpid()));
    install_log_ = RunShell("cmake --install " + ShellQuote(DSP_BUILD_DIR) + " --prefix " + ShellQuote(prefix_.string()));
  }
  static void TearDownTestSuite() { fs::remove_all(prefix_); }
  // COMPREPLY of the installed bash completion for a command line whose last word is being typed.
  static std::string Complete(const std::string& words) {
    const fs::path script = prefix_ / "share/bash-completion/completions/ds-plan";
    return RunShell("bash -c " + ShellQuote("source " + ShellQuote(script.string()) + "; COMP_WORDS=(" + words +
                                            "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _ds_plan; "
                                            "printf '%s\\n' \"${COMPREPLY[@]}\""));
  }
  static fs::path prefix_;
  static std::string install_log_;
};
fs::path InstallTest::prefix_;
std::string InstallTest::install_log_;

TEST_F(InstallTest, InstallsTheBinarySchemasManPageAndCompletions) {
  for (const char* file : {"bin/ds-plan", "share/ds-plan/schemas/validate-report.schema.json",
                           "share/ds-plan/schemas/ds_config.schema.json", "share/bash-completion/completions/ds-plan",
                           "share/zsh/vendor-completions/_ds-plan"}) {
    EXPECT_TRUE(fs::exists(prefix_ / file)) << file << "\n" << install_log_;
  }
  // The installed binary runs on its own.
  EXPECT_NE(RunShell(ShellQuote((prefix_ / "bin/ds-plan").string()) + " --version").find("ds-plan 0.1.0"),
            std::string::npos);
  const fs::path man = prefix_ / "share/man/man1/ds-plan.1";
  if (RunShell("command -v help2man").empty()) GTEST_SKIP() << "help2man is not installed: no man page";
  ASSERT_TRUE(fs::exists(man)) << install_log_;
  const std::string page = Slurp(man);
  EXPECT_NE(page.find(".TH DS-PLAN \"1\" \"December 2026\" \"ds-plan 0.1.0\""), std::string::npos) << page.substr(0, 300);
  // Every command's own --help is in it, the nested ones too.
  for (const char* section : {"\"ds-plan validate\"", "\"ds-plan visualize schedule\"", "\"ds-plan completion\"",
                              "NO_COLOR"}) {
    EXPECT_NE(page.find(section), std::string::npos) << section;
  }
  EXPECT_NE(page.find("\\-\\-deepspeed\\-version"), std::string::npos);
}

TEST_F(InstallTest, BashCompletionCompletesCommandsOptionsAndValues) {
  EXPECT_NE(Complete("ds-plan vali").find("validate\n"), std::string::npos);
  EXPECT_NE(Complete("ds-plan visualize sch").find("schedule\n"), std::string::npos);
  EXPECT_NE(Complete("ds-plan validate x.json --for").find("--format\n"), std::string::npos);
  EXPECT_EQ(Complete("ds-plan validate --format s"), "sarif\n");
  EXPECT_NE(Complete("ds-plan visualize schedule --for").find("--format\n"), std::string::npos);
  EXPECT_EQ(Complete("ds-plan visualize schedule --format j"), "json\n");
  EXPECT_EQ(Complete("ds-plan --color n"), "never\n");
  EXPECT_NE(Complete("ds-plan explain batch-mis").find("batch-mismatch\n"), std::string::npos);
  // A flag takes no value, so what follows it completes as options again.
  EXPECT_NE(Complete("ds-plan validate --werror --for").find("--format\n"), std::string::npos);
}

TEST_F(InstallTest, ZshCompletionParsesAndDefinesAFunctionPerCommand) {
  if (RunShell("command -v zsh").empty()) GTEST_SKIP() << "zsh is not installed (scripts/setup.sh installs it)";
  const fs::path script = prefix_ / "share/zsh/vendor-completions/_ds-plan";
  EXPECT_EQ(RunShell("zsh -n " + ShellQuote(script.string())), "");
  // Everything but the last line (the call that needs a completion context) loads in a plain zsh.
  const std::string defined = RunShell("zsh -c " + ShellQuote("source <(sed '$d' " + ShellQuote(script.string()) +
                                                              "); whence -w _ds_plan _ds_plan_validate "
                                                              "_ds_plan_visualize_schedule"));
  EXPECT_EQ(defined, "_ds_plan: function\n_ds_plan_validate: function\n_ds_plan_visualize_schedule: function\n");
  EXPECT_NE(Slurp(script).find("'--format[output format]:value:(text json sarif github)'"), std::string::npos);
}

}  // namespace
}  // namespace dsp
