// SPDX-License-Identifier: Apache-2.0
// A bounded, seeded fuzz regression through every command (issue 16): the bundled sample configs,
// models, clusters and plan snapshots (and the real-world corpus when it is present) are mutated
// the ways hostile and careless inputs differ from good ones (bytes flipped, ranges cut or doubled,
// extreme numbers, deep nesting, huge strings, wrong types), written to a temporary folder and fed
// to validate, groups, simulate, tune, plan, check and visualize. Every run must end with exit
// code 0, 1 or 2 within its time limit: no signal, no hang, no "internal error", and under the
// debug preset (ASan + UBSan: `ctest --preset debug -R Fuzz`) no sanitizer report.
//
// The mutations are seeded, so a failure names the seed and case that reproduce it; the same
// seeds run every time, so the suite is deterministic. DSP_FUZZ_RUNS scales the count (default
// 60 per command: 420 runs, about 20 s in the release build; 20 under ASan); DSP_FUZZ_BINARY
// points the runs at another build.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

namespace fs = std::filesystem;
using testing::ShellQuote;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> JsonFilesIn(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// One mutation of `text`, chosen by the generator. Each kind mirrors a class of input that has
// broken a parser or a cost model somewhere: truncation, duplication, a flipped byte, a number
// swapped for an extreme one, a value swapped for another type, deep nesting, a huge string.
std::string Mutate(std::string text, std::mt19937& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  static const std::vector<std::string> kValues = {
      "0",      "-1",   "1e308",  "-1e308", "1e-320", "2147483648", "9223372036854775808", "4294967297",
      "0.5",    "null", "true",   "\"\"",   "[]",     "{}",         "\"auto\"",            "NaN",
      "\"x\"",  "3",    "1024",   "65536",  "[1,2]",  "{\"a\":1}",  "-0",                  "1e999"};
  switch (pick(8)) {
    case 0: {  // truncate
      return text.substr(0, pick(text.size() + 1));
    }
    case 1: {  // duplicate a range
      const size_t a = pick(text.size() + 1), len = pick(std::min<size_t>(200, text.size() - a + 1));
      return text.insert(a, text.substr(a, len));
    }
    case 2: {  // flip bytes
      for (int i = 0; i < 4 && !text.empty(); ++i) text[pick(text.size())] = static_cast<char>(pick(256));
      return text;
    }
    case 3:
    case 4: {  // replace a number or a literal value by another value
      std::vector<size_t> starts;
      for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const bool value_start = (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n' || c == '"');
        if (value_start && i > 0 && (text[i - 1] == ' ' || text[i - 1] == ':' || text[i - 1] == '[')) starts.push_back(i);
      }
      if (starts.empty()) return text + kValues[pick(kValues.size())];
      const size_t at = starts[pick(starts.size())];
      size_t end = at + 1;
      if (text[at] == '"') {
        while (end < text.size() && text[end] != '"') ++end;
        end = std::min(text.size(), end + 1);
      } else {
        while (end < text.size() && text[end] != ',' && text[end] != '}' && text[end] != ']' && text[end] != '\n') ++end;
      }
      return text.replace(at, end - at, kValues[pick(kValues.size())]);
    }
    case 5: {  // deep nesting in place of a value
      const size_t depth = 1 + pick(20000);
      const size_t at = text.find(": ");
      const std::string nest = std::string(depth, '[') + std::string(depth, ']');
      return at == std::string::npos ? nest : text.replace(at + 2, 0, nest + ", \"k\": ");
    }
    case 6: {  // a huge string value or key
      const size_t at = text.find('"');
      return at == std::string::npos ? text : text.insert(at + 1, std::string(1 + pick(2'000'000), 'a'));
    }
    default: {  // delete a range
      const size_t a = pick(text.size() + 1), len = pick(std::min<size_t>(64, text.size() - a + 1));
      return text.erase(a, len);
    }
  }
}

struct Outcome {
  int exit_code = -1;
  std::string output;
};

// Runs `ds-plan ARGS` from the source directory under a wall-clock limit (coreutils timeout: 124
// when it expires, 128+N when killed by signal N).
// DSP_FUZZ_BINARY runs the same cases against another build of ds-plan, e.g. the ASan/UBSan one
// (build/debug/ds-plan) without building the whole debug test suite (docs/fuzzing.md).
std::string Binary() {
  const char* other = std::getenv("DSP_FUZZ_BINARY");
  return other != nullptr && *other != '\0' ? std::string(other) : std::string(DSP_BINARY);
}

Outcome RunLimited(const std::string& args, int seconds) {
  const std::string cmd = "cd " + ShellQuote(DSP_SOURCE_DIR) + " && timeout -s KILL " + std::to_string(seconds) + " " +
                          ShellQuote(Binary()) + " " + args + " 2>&1";
  Outcome o;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return o;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) {
    if (o.output.size() < (size_t{4} << 20)) o.output.append(buf.data(), n);
  }
  const int status = pclose(pipe);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}

// Under the debug preset (ASan + UBSan, GCC defines __SANITIZE_ADDRESS__) each run costs about
// five times as much, so fewer runs keep the suite near a minute there too.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kDefaultRuns = 20;
#else
constexpr int kDefaultRuns = 60;
#endif

int Runs() {
  const char* env = std::getenv("DSP_FUZZ_RUNS");
  const int n = env != nullptr ? std::atoi(env) : 0;
  return n > 0 ? n : kDefaultRuns;
}

class FuzzRegressionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ds-plan-fuzz-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes one mutation of `seed_file` (chosen by `rng`) and returns its path.
  fs::path Mutant(const fs::path& seed_file, std::mt19937& rng, const std::string& name) {
    std::string text = Slurp(seed_file);
    const int rounds = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < rounds; ++i) text = Mutate(text, rng);
    const fs::path out = dir_ / name;
    std::ofstream(out, std::ios::binary) << text;
    return out;
  }

  // Fuzzes the argument built by `command(mutant)` over `seeds`, `Runs()` times.
  void Fuzz(const std::vector<fs::path>& seeds, const std::string& label, uint32_t seed_base,
            const std::function<std::string(const std::string&)>& command, int seconds = 20) {
    ASSERT_FALSE(seeds.empty());
    const int runs = Runs();
    for (int i = 0; i < runs; ++i) {
      const uint32_t seed = seed_base + static_cast<uint32_t>(i);
      std::mt19937 rng(seed);
      const fs::path& base = seeds[rng() % seeds.size()];
      const fs::path mutant = Mutant(base, rng, "mutant.json");
      const std::string args = command(ShellQuote(mutant.string()));
      const Outcome o = RunLimited(args, seconds);
      const std::string where = label + " seed " + std::to_string(seed) + " from " + base.filename().string() +
                                ": ds-plan " + args.substr(0, 300);
      EXPECT_TRUE(o.exit_code == 0 || o.exit_code == 1 || o.exit_code == 2)
          << where << "\nexit " << o.exit_code << (o.exit_code == 137 ? " (hang: killed at the time limit)" : "")
          << "\n" << o.output.substr(0, 2000);
      EXPECT_EQ(o.output.find("internal error"), std::string::npos) << where << "\n" << o.output.substr(0, 2000);
      EXPECT_EQ(o.output.find("Sanitizer"), std::string::npos) << where << "\n" << o.output.substr(0, 4000);
      EXPECT_EQ(o.output.find("runtime error:"), std::string::npos) << where << "\n" << o.output.substr(0, 4000);
      if (HasFailure()) {
        fs::copy_file(mutant, fs::temp_directory_path() / ("ds-plan-fuzz-failure-" + std::to_string(seed) + ".json"),
                      fs::copy_options::overwrite_existing);
        return;  // one reproducer is enough; the mutant is kept next to the temp folder
      }
    }
  }

  fs::path dir_;
};

const fs::path kSamples = fs::path(DSP_SOURCE_DIR) / "samples";

std::vector<fs::path> Configs() {
  std::vector<fs::path> seeds = JsonFilesIn(kSamples / "configs");
  const char* corpus = std::getenv("DSP_CORPUS_DIR");
  const fs::path dir = corpus != nullptr && *corpus != '\0'
                           ? fs::path(corpus)
                           : fs::path(DSP_SOURCE_DIR) / ".." / "shared" / "corpus" / "deepspeed-configs";
  for (const fs::path& p : JsonFilesIn(dir)) seeds.push_back(p);
  return seeds;
}

TEST_F(FuzzRegressionTest, Validate) {
  Fuzz(Configs(), "validate", 1000, [](const std::string& f) {
    return "validate " + f + " --world-size 8 --model samples/models/mixtral-8x7b.json --format sarif";
  });
}

TEST_F(FuzzRegressionTest, GroupsAndSimulateOnMutatedConfigs) {
  Fuzz(Configs(), "groups", 2000, [](const std::string& f) { return "groups " + f + " --world-size 16"; });
  Fuzz(Configs(), "simulate", 3000, [](const std::string& f) {
    return "simulate " + f + " --model samples/models/llama-3-8b.json --cluster samples/clusters/h100-sxm.json "
           "--world-size 16 --format json";
  });
}

TEST_F(FuzzRegressionTest, SimulateAndTuneOnMutatedModels) {
  const std::vector<fs::path> models = JsonFilesIn(kSamples / "models");
  Fuzz(models, "simulate --model", 4000, [](const std::string& f) {
    return "simulate samples/configs/autosp-sp4.json --model " + f + " --cluster samples/clusters/h100-sxm.json "
           "--world-size 8";
  });
  Fuzz(models, "tune --model", 5000, [](const std::string& f) {
    return "tune --model " + f + " --cluster samples/clusters/h100-sxm.json --world-size 8 --top 2";
  }, 60);
}

TEST_F(FuzzRegressionTest, SimulateAndScheduleOnMutatedClusters) {
  const std::vector<fs::path> clusters = JsonFilesIn(kSamples / "clusters");
  Fuzz(clusters, "simulate --cluster", 6000, [](const std::string& f) {
    return "simulate samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json --cluster " + f +
           " --world-size 8";
  });
  Fuzz(clusters, "visualize schedule --cluster", 7000, [](const std::string& f) {
    return "visualize schedule samples/configs/autosp-sp4.json --model samples/models/tiny-llama.json --cluster " + f +
           " --world-size 8 --format json -o -";
  });
}

TEST_F(FuzzRegressionTest, CheckOnMutatedPlans) {
  Fuzz(JsonFilesIn(kSamples / "plans"), "check", 8000, [](const std::string& f) { return "check " + f; });
}

TEST_F(FuzzRegressionTest, VisualizeGraphOnMutatedConfigs) {
  Fuzz(Configs(), "visualize graph", 9000, [](const std::string& f) {
    return "visualize graph " + f + " --model samples/models/tiny-moe.json --world-size 8 --format json -o -";
  });
}

}  // namespace
}  // namespace dsp
