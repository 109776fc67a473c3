// SPDX-License-Identifier: Apache-2.0
// The Debian packages CPack builds (cmake/packaging.cmake, issue 34): ds-plan and, when LibTorch was
// found, ds-plan-exec. Each .deb holds what `cmake --install` puts in its component, declares the
// shared libraries it needs, and the ds-plan it unpacks (dpkg -x into an empty root, away from the
// source tree) validates a config and simulates with presets named by their short names. The
// Dockerfile's runtime stage installs that same planner .deb, so its file list is checked here too.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

namespace fs = std::filesystem;
using testing::RunShell;
using testing::ShellQuote;
using testing::Slurp;

std::set<std::string> Lines(const std::string& text) {
  std::set<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.insert(line);
  }
  return lines;
}

class PackageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("ds-plan-cpack-" + std::to_string(getpid()));
    arch_ = RunShell("dpkg --print-architecture");
    while (!arch_.empty() && (arch_.back() == '\n' || arch_.back() == ' ')) arch_.pop_back();
    fs::create_directories(dir_);
    log_ = RunShell("cpack --config " + ShellQuote(std::string(DSP_BUILD_DIR) + "/CPackConfig.cmake") + " -B " +
                    ShellQuote(dir_.string()));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static fs::path Deb(const std::string& name) { return dir_ / (name + "_0.1.0_" + arch_ + ".deb"); }
  // `dpkg-deb -c`'s paths, as absolute paths of files (directories left out).
  static std::set<std::string> Contents(const fs::path& deb) {
    std::set<std::string> files;
    for (const std::string& line : Lines(RunShell("dpkg-deb -c " + ShellQuote(deb.string())))) {
      if (line.front() == 'd') continue;
      std::string path = line.substr(line.find("./") + 1);
      if (auto arrow = path.find(" -> "); arrow != std::string::npos) path.resize(arrow);
      files.insert(path);
    }
    return files;
  }
  static fs::path dir_;
  static std::string log_;
  static std::string arch_;
};
fs::path PackageTest::dir_;
std::string PackageTest::log_;
std::string PackageTest::arch_;

TEST_F(PackageTest, PlannerPackageHoldsTheToolItsDataAndDocs) {
  ASSERT_TRUE(fs::exists(Deb("ds-plan"))) << log_;
  const std::set<std::string> files = Contents(Deb("ds-plan"));
  if (!RunShell("command -v help2man").empty()) {
    EXPECT_TRUE(files.contains("/usr/share/man/man1/ds-plan.1"));
  }
  for (const char* f : {"/usr/bin/ds-plan",
                        "/usr/share/bash-completion/completions/ds-plan", "/usr/share/zsh/vendor-completions/_ds-plan",
                        "/usr/share/ds-plan/schemas/ds_config.schema.json", "/usr/share/ds-plan/clusters/h100-sxm.json",
                        "/usr/share/ds-plan/models/llama-3-8b.json", "/usr/share/ds-plan/models/SOURCES.tsv",
                        "/usr/share/doc/ds-plan/LICENSE"}) {
    EXPECT_TRUE(files.contains(f)) << f;
  }
  // Every cluster preset of the source tree ships.
  for (const auto& e : fs::directory_iterator(fs::path(DSP_SOURCE_DIR) / "samples/clusters")) {
    EXPECT_TRUE(files.contains("/usr/share/ds-plan/clusters/" + e.path().filename().string())) << e.path();
  }
  // The executor is not in the planner's package.
  EXPECT_FALSE(files.contains("/usr/bin/ds-plan-exec"));
  const std::string control = RunShell("dpkg-deb -f " + ShellQuote(Deb("ds-plan").string()) + " Package Version Depends");
  EXPECT_NE(control.find("Package: ds-plan\n"), std::string::npos) << control;
  EXPECT_NE(control.find("Version: 0.1.0"), std::string::npos) << control;
  // dpkg-shlibdeps found the libraries the binary links.
  for (const char* lib : {"libc6", "libstdc++6", "libgvc6", "libpcre2-8-0", "libedit2"}) {
    EXPECT_NE(control.find(lib), std::string::npos) << lib << "\n" << control;
  }
}

TEST_F(PackageTest, PlannerPackageMatchesThePlannerInstall) {
  ASSERT_TRUE(fs::exists(Deb("ds-plan"))) << log_;
  const fs::path prefix = dir_ / "install-planner";
  RunShell("cmake --install " + ShellQuote(DSP_BUILD_DIR) + " --component planner --prefix " +
           ShellQuote((prefix / "usr").string()));
  std::set<std::string> installed;
  for (const auto& e : fs::recursive_directory_iterator(prefix)) {
    if (!e.is_directory()) installed.insert("/" + fs::relative(e.path(), prefix).string());
  }
  EXPECT_EQ(Contents(Deb("ds-plan")), installed);
}

TEST_F(PackageTest, ExecPackageDependsOnThePlannerAndLibTorch) {
  if (!fs::exists(fs::path(DSP_BUILD_DIR) / "ds-plan-exec")) GTEST_SKIP() << "built without LibTorch: no ds-plan-exec";
  ASSERT_TRUE(fs::exists(Deb("ds-plan-exec"))) << log_;
  EXPECT_EQ(Contents(Deb("ds-plan-exec")), std::set<std::string>{"/usr/bin/ds-plan-exec"});
  const std::string depends = RunShell("dpkg-deb -f " + ShellQuote(Deb("ds-plan-exec").string()) + " Depends");
  EXPECT_NE(depends.find("ds-plan (= 0.1.0)"), std::string::npos) << depends;
  EXPECT_NE(depends.find("libtorch"), std::string::npos) << depends;
}

// Unpacked anywhere with dpkg -x, the tool finds its presets beside itself (../share/ds-plan), run
// from a directory outside the source tree.
TEST_F(PackageTest, UnpackedToolValidatesAndSimulatesWithPresetNames) {
  ASSERT_TRUE(fs::exists(Deb("ds-plan"))) << log_;
  const fs::path root = dir_ / "root";
  RunShell("dpkg -x " + ShellQuote(Deb("ds-plan").string()) + " " + ShellQuote(root.string()));
  const fs::path work = dir_ / "work";
  fs::create_directories(work);
  fs::copy_file(fs::path(DSP_SOURCE_DIR) / "samples/configs/zero3-offload.json", work / "ds_config.json");
  const std::string tool = ShellQuote((root / "usr/bin/ds-plan").string());
  const std::string in_work = "cd " + ShellQuote(work.string()) + " && env -u DSP_DATA_DIR ";

  EXPECT_NE(RunShell(in_work + tool + " --version").find("ds-plan 0.1.0 (commit "), std::string::npos);
  const std::string validate = RunShell(in_work + tool + " validate ds_config.json --world-size 8 2>&1; echo rc=$?");
  EXPECT_NE(validate.find("rc=0"), std::string::npos) << validate;
  const std::string simulate = RunShell(in_work + tool +
                                        " simulate ds_config.json --world-size 8 --model llama-3-8b --cluster h100-sxm 2>&1; echo rc=$?");
  EXPECT_NE(simulate.find("rc=0"), std::string::npos) << simulate;
  // The model came from the unpacked root, not from the source tree.
  EXPECT_NE(simulate.find((root / "usr/share/ds-plan/models/llama-3-8b.json").string()), std::string::npos) << simulate;
  EXPECT_NE(simulate.find("HGX H100 SXM"), std::string::npos) << simulate;
  // plan records a preset by its name, and check finds it again in the unpacked data.
  const std::string plan = RunShell(in_work + tool + " plan ds_config.json --world-size 8 --model llama-3-8b "
                                    "--cluster h100-sxm -o train.plan.json 2>&1; echo rc=$?");
  EXPECT_NE(plan.find("rc=0"), std::string::npos) << plan;
  EXPECT_NE(Slurp(work / "train.plan.json").find("\"path\": \"h100-sxm\""), std::string::npos);
  const std::string check = RunShell(in_work + tool + " check train.plan.json 2>&1; echo rc=$?");
  EXPECT_NE(check.find("rc=0"), std::string::npos) << check;
  // A name that is no preset lists the ones there are.
  const std::string unknown = RunShell(in_work + tool + " simulate ds_config.json --world-size 8 --model llama-3-8b "
                                       "--cluster h100-pcie 2>&1; echo rc=$?");
  EXPECT_NE(unknown.find("no file h100-pcie and no preset of that name (presets: a100-80gb, b200,"), std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("rc=2"), std::string::npos) << unknown;
}

// The Dockerfile's runtime stage installs the planner .deb that its build stage makes with the
// planner preset; the .deb's contents are the tests above.
TEST(Dockerfile, RuntimeStageInstallsThePlannerPackageFromTheBuildStage) {
  const std::string docker = Slurp(fs::path(DSP_SOURCE_DIR) / "Dockerfile");
  EXPECT_NE(docker.find("FROM debian:12 AS build"), std::string::npos);
  EXPECT_NE(docker.find("RUN scripts/setup.sh --planner-only \\\n && cpack --config build/planner/CPackConfig.cmake -B /packages"),
            std::string::npos);
  EXPECT_NE(docker.find("FROM debian:12-slim AS runtime\nCOPY --from=build /packages/ds-plan_*_amd64.deb /tmp/"),
            std::string::npos);
  EXPECT_NE(docker.find("ENTRYPOINT [\"ds-plan\"]"), std::string::npos);
  // The preset the build stage names exists and builds the planner alone.
  const std::string presets = Slurp(fs::path(DSP_SOURCE_DIR) / "CMakePresets.json");
  EXPECT_TRUE(std::regex_search(presets, std::regex(R"("name": "planner",[^}]*"binaryDir": "\$\{sourceDir\}/build/planner")")));
  EXPECT_TRUE(std::regex_search(presets, std::regex(R"("DSP_WITH_EXEC": "OFF")")));
  // The host's build trees stay out of the image's build context.
  const std::string ignore = Slurp(fs::path(DSP_SOURCE_DIR) / ".dockerignore");
  EXPECT_NE(ignore.find("build/"), std::string::npos);
}

}  // namespace
}  // namespace dsp
