// SPDX-License-Identifier: Apache-2.0
// What the `ds-plan run` end-to-end tests share: the real torchrun (scripts/torchrun) on a free
// port, manual launches for what torchrun would hide, and the report checks.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/json/document.h"
#include "exec/run.h"
#include "tests/apps/cli_test_util.h"
#include "tests/apps/report_schema_util.h"

namespace dsp::run_test {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::RunCli;

// A port nobody listens on right now (ctest runs tests in parallel; torchrun's default 29500 would
// collide between them).
inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

struct Timed {
  CliResult r;
  double seconds = 0;
};

// scripts/torchrun --nproc_per_node N ... ds-plan run ARGS; stdout only unless merge_stderr.
inline Timed Torchrun(int nproc, const std::string& args, bool merge_stderr = true, const std::string& env = "") {
  std::string launcher = std::string(DSP_SOURCE_DIR) + "/scripts/torchrun --nproc_per_node " + std::to_string(nproc) +
                         " --monitor_interval 0.2 --master_port " + std::to_string(FreePort()) + " --no_python";
  // RunCli prefixes the binary; run it through `env` so the launcher comes first.
  const auto t0 = std::chrono::steady_clock::now();
  std::string cmd = "cd " + testing::ShellQuote(DSP_SOURCE_DIR) + " && " + env + " " + launcher + " " +
                    testing::ShellQuote(DSP_BINARY) + " run " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  Timed t;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::array<char, 65536> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) t.r.output.append(buf.data(), n);
  int status = pclose(pipe);
  t.r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

// Starts WORLD ranks by hand (no torchrun: rank 0 hosts the store); `per_rank(r)` adds arguments
// or environment for one rank. Returns each rank's output and exit code.
inline std::vector<CliResult> ManualLaunch(int world, const std::string& args,
                                    const std::function<std::string(int)>& per_rank_env = nullptr,
                                    const std::function<std::string(int)>& per_rank_args = nullptr,
                                    std::vector<int> ranks = {}) {
  if (ranks.empty()) {
    for (int r = 0; r < world; ++r) ranks.push_back(r);
  }
  char tmpl[] = "/tmp/dsp-run-test-XXXXXX";
  fs::path dir = mkdtemp(tmpl);
  const int port = FreePort();
  // `cd DIR; a & b & wait`, not `cd DIR && a & b`: the latter runs only `a` in DIR.
  std::string script = "cd " + testing::ShellQuote(DSP_SOURCE_DIR) + " || exit 1; ";
  for (int r : ranks) {
    script += "(RANK=" + std::to_string(r) + " WORLD_SIZE=" + std::to_string(world) +
              " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " +
              (per_rank_env ? per_rank_env(r) : "") + " " + testing::ShellQuote(DSP_BINARY) + " run " + args + " " +
              (per_rank_args ? per_rank_args(r) : "") + " > " + (dir / std::to_string(r)).string() +
              ".out 2>&1; echo $? > " + (dir / std::to_string(r)).string() + ".rc) & ";
  }
  script += "wait";
  EXPECT_EQ(std::system(script.c_str()), 0);
  std::vector<CliResult> out(world);
  for (int r : ranks) {
    std::ifstream o(dir / (std::to_string(r) + ".out")), c(dir / (std::to_string(r) + ".rc"));
    std::stringstream ss;
    ss << o.rdbuf();
    out[r].output = ss.str();
    c >> out[r].exit_code;
  }
  fs::remove_all(dir);
  return out;
}

#define SKIP_WITHOUT_TORCH() \
  if (!exec::HaveTorch()) GTEST_SKIP() << "built without LibTorch: ds-plan run is disabled (see docs/exec.md)"

inline bool Has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

inline Json ParseReport(const std::string& out) {
  Json doc = Json::parse(out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << out;
  EXPECT_EQ(testing::SchemaErrors(schemas::k_run_report_schema_json, doc), "") << out;
  return doc;
}

// An empty checkpoint directory under the temp folder, unique to this test process.
inline std::filesystem::path FreshDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

// ARGS on 4 ranks under torchrun: exit 0, `mode` in the header, parity over every step.
inline void ExpectParityOk(const std::string& args, const std::string& mode) {
  auto t = Torchrun(4, args);
  EXPECT_EQ(t.r.exit_code, 0) << args << "\n" << t.r.output;
  EXPECT_TRUE(Has(t.r.output, mode)) << t.r.output;
  EXPECT_TRUE(Has(t.r.output, "parity: ok (")) << t.r.output;
}

}  // namespace dsp::run_test
