// SPDX-License-Identifier: Apache-2.0
// What ds-plan offers CI (issue 34): the pre-commit hooks of .pre-commit-hooks.yaml, run by
// pre-commit itself (`pre-commit try-repo`, offline: the hooks are language: system), and the steps
// of the GitHub composite action (action.yml), whose scripts run here as the runner would run them.
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

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A scratch git repository with ds-plan (the built one) on PATH, as a user's checkout would be.
class CiIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = fs::temp_directory_path() / ("ds-plan-ci-" + std::to_string(getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(repo_);
    fs::create_directories(repo_ / "configs");
    fs::copy_file(fs::path(DSP_SOURCE_DIR) / "samples/configs/zero3-offload.json", repo_ / "configs/ds_config.json");
    Write(repo_ / "configs/package.json", "{\"name\": \"not a DeepSpeed config\", \"version\": 3}\n");
    env_ = "cd " + ShellQuote(repo_.string()) + " && export PATH=" + ShellQuote(fs::path(DSP_BINARY).parent_path().string()) +
           ":\"$PATH\" PRE_COMMIT_HOME=" + ShellQuote((repo_ / ".pre-commit-home").string()) +
           " GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com"
           " GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 && ";
  }
  void TearDown() override { fs::remove_all(repo_); }
  std::string Run(const std::string& command) { return RunShell(env_ + command + " 2>&1; echo \"rc=$?\""); }
  void Commit() { Run("git init -q . && git add -A && git commit -qm snapshot"); }
  // pre-commit running one hook of this repository's .pre-commit-hooks.yaml on every file.
  std::string TryHook(const std::string& hook) {
    return Run("pre-commit try-repo " + ShellQuote(DSP_SOURCE_DIR) + " " + hook + " --all-files --verbose");
  }
  // pre-commit, git, and a source tree that is a git checkout (try-repo clones it).
  static bool HavePreCommit() {
    return RunShell("command -v pre-commit && command -v git && git -C " + ShellQuote(DSP_SOURCE_DIR) +
                    " rev-parse --git-dir && echo usable")
               .find("usable") != std::string::npos;
  }

  fs::path repo_;
  std::string env_;
};

TEST_F(CiIntegrationTest, ValidateHookFailsTheCommitOnABrokenConfigOnly) {
  if (!HavePreCommit()) GTEST_SKIP() << "pre-commit or git is not installed (scripts/setup.sh installs them)";
  Commit();
  std::string ok = TryHook("ds-plan-validate");
  EXPECT_NE(ok.find("ds-plan validate (DeepSpeed configs)"), std::string::npos) << ok;
  EXPECT_NE(ok.find("Passed"), std::string::npos) << ok;
  EXPECT_NE(ok.find("rc=0"), std::string::npos) << ok;

  fs::copy_file(fs::path(DSP_SOURCE_DIR) / "samples/configs/invalid/zero-typos.json", repo_ / "configs/ds_z3_config.json");
  Write(repo_ / "configs/ds_z3_config.plan.json", "{\"schema_version\": 1}\n");  // a snapshot: ds-plan-check's
  Commit();
  std::string bad = TryHook("ds-plan-validate");
  EXPECT_NE(bad.find("Failed"), std::string::npos) << bad;
  EXPECT_NE(bad.find("configs/ds_z3_config.json:"), std::string::npos) << bad;
  EXPECT_NE(bad.find("[unknown-key]"), std::string::npos) << bad;
  EXPECT_NE(bad.find("rc=1"), std::string::npos) << bad;
  // The files pattern passes DeepSpeed configs only: package.json never reaches validate.
  EXPECT_EQ(bad.find("package.json"), std::string::npos) << bad;
  EXPECT_EQ(bad.find("ds_z3_config.plan.json"), std::string::npos) << bad;
}

TEST_F(CiIntegrationTest, CheckHookFailsWhenAPlanSnapshotMoved) {
  if (!HavePreCommit()) GTEST_SKIP() << "pre-commit or git is not installed (scripts/setup.sh installs them)";
  fs::copy_file(fs::path(DSP_SOURCE_DIR) / "samples/models/llama-3-8b.json", repo_ / "model.json");
  fs::copy_file(fs::path(DSP_SOURCE_DIR) / "samples/clusters/h100-sxm.json", repo_ / "cluster.json");
  fs::create_directories(repo_ / "plans");
  std::string plan = Run("ds-plan plan configs/ds_config.json --model model.json --cluster cluster.json "
                         "--world-size 16 -o plans/train.plan.json");
  ASSERT_NE(plan.find("rc=0"), std::string::npos) << plan;
  Commit();
  std::string same = TryHook("ds-plan-check");
  EXPECT_NE(same.find("Passed"), std::string::npos) << same;
  // A bigger micro batch moves memory and step time: the snapshot no longer holds.
  std::string config = Slurp(repo_ / "configs/ds_config.json");
  const size_t at = config.find("\"train_micro_batch_size_per_gpu\"");
  ASSERT_NE(at, std::string::npos);
  const size_t value = config.find_first_of("0123456789", at);
  config.replace(value, config.find_first_not_of("0123456789", value) - value, "4");
  Write(repo_ / "configs/ds_config.json", config);
  Commit();
  std::string moved = Run("pre-commit try-repo " + ShellQuote(DSP_SOURCE_DIR) +
                          " ds-plan-check --files plans/train.plan.json --verbose");
  EXPECT_NE(moved.find("Failed"), std::string::npos) << moved;
  EXPECT_NE(moved.find("rc=1"), std::string::npos) << moved;
}

// action.yml's validate step: annotations, SARIF written for the upload step, the exit code as an
// output (the step itself succeeds so the upload runs), and a pattern that matches nothing.
TEST_F(CiIntegrationTest, ActionValidateStepWritesAnnotationsSarifAndTheExitCode) {
  fs::create_directories(repo_ / "configs/nested");
  fs::copy_file(fs::path(DSP_SOURCE_DIR) / "samples/configs/invalid/zero-typos.json", repo_ / "configs/nested/ds_bad.json");
  const std::string script = ShellQuote(std::string(DSP_SOURCE_DIR) + "/scripts/action-validate.sh");
  std::string github = Run("GITHUB_OUTPUT=out.txt FILES='configs/**/ds_*.json' ARGS='--world-size 8' FORMAT=github bash " + script);
  EXPECT_NE(github.find("::error file=configs/nested/ds_bad.json,line="), std::string::npos) << github;
  EXPECT_NE(github.find("rc=0"), std::string::npos) << github;
  EXPECT_EQ(Slurp(repo_ / "out.txt"), "exit-code=1\n");

  std::string sarif = Run("GITHUB_OUTPUT=out2.txt FILES='configs/ds_config.json' FORMAT=sarif SARIF_FILE=report.sarif bash " + script);
  EXPECT_NE(Slurp(repo_ / "report.sarif").find("\"version\": \"2.1.0\""), std::string::npos) << sarif;
  EXPECT_FALSE(fs::exists(repo_ / "report.sarif.tmp"));
  EXPECT_EQ(Slurp(repo_ / "out2.txt"), "exit-code=0\n");

  std::string none = Run("GITHUB_OUTPUT=out3.txt FILES='nothing/*.json' FORMAT=github bash " + script);
  EXPECT_NE(none.find("::error title=ds-plan::no file matches files: 'nothing/*.json'"), std::string::npos) << none;
  EXPECT_EQ(Slurp(repo_ / "out3.txt"), "exit-code=2\n");
}

// action.yml wires the two scripts, uploads SARIF only for format sarif, and fails the job on the
// validate step's exit code; the install step keeps a ds-plan already on PATH.
TEST_F(CiIntegrationTest, ActionDefinitionRunsTheTestedScripts) {
  const std::string action = Slurp(fs::path(DSP_SOURCE_DIR) / "action.yml");
  EXPECT_NE(action.find("using: composite"), std::string::npos);
  EXPECT_NE(action.find("run: bash \"$GITHUB_ACTION_PATH/scripts/action-install.sh\""), std::string::npos);
  EXPECT_NE(action.find("run: bash \"$GITHUB_ACTION_PATH/scripts/action-validate.sh\""), std::string::npos);
  EXPECT_NE(action.find("if: ${{ always() && inputs.format == 'sarif' }}\n      uses: github/codeql-action/upload-sarif@v3"),
            std::string::npos);
  EXPECT_NE(action.find("run: exit ${{ steps.validate.outputs.exit-code }}"), std::string::npos);
  std::string install = Run("GITHUB_PATH=path.txt DEB_URL= bash " +
                            ShellQuote(std::string(DSP_SOURCE_DIR) + "/scripts/action-install.sh"));
  EXPECT_NE(install.find("ds-plan is already on PATH"), std::string::npos) << install;
  EXPECT_NE(install.find("ds-plan 0.1.0 (commit "), std::string::npos) << install;
  EXPECT_NE(install.find("rc=0"), std::string::npos) << install;
}

}  // namespace
}  // namespace dsp
