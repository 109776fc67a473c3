// SPDX-License-Identifier: Apache-2.0
// ds-plan visualize schedule: SVG timeline and Perfetto trace by extension, the summary on
// stdout next to the cost model, --full agreeing with the symmetric simulation, a slow rank
// lengthening the step, and the exit codes.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/json/document.h"
#include "tests/apps/cli_test_util.h"
#include "tests/sim/render/xml_check.h"

namespace dsp {
namespace {

using testing::RunCli;

const std::string kSp = "visualize schedule samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json "
                        "--cluster samples/clusters/h100-sxm.json --world-size 8 --seq-len 1024";

class ScheduleCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (std::filesystem::temp_directory_path() / "dsp-schedule-XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Out(const std::string& name) const { return (dir_ / name).string(); }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // "step time          12.3 ms" -> 12.3
  static double StepMs(const std::string& output) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(output, m, std::regex(R"(step time +([0-9.]+) ms)"))) << output;
    return m.empty() ? -1 : std::stod(m[1]);
  }
  std::filesystem::path dir_;
};

// engine.py get_autosp_backend (0.19.6): AutoSP with ZeRO-3 falls back to plain torch.compile.
// The schedule prints validate's warning, says how it priced the fallback, and has no all-to-all.
TEST_F(ScheduleCliTest, AutoSpFallbackIsSaidAndScheduledWithoutAllToAll) {
  const auto r = RunCli(kSp + " --set zero_optimization.stage=3 -o " + Out("fallback.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[compile-autosp-zero-stage]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("priced without sequence parallelism"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("all_to_all"), std::string::npos) << r.output;
  EXPECT_EQ(Read(Out("fallback.json")).find("a2a_"), std::string::npos);
}

TEST_F(ScheduleCliTest, WritesTimelineAndTraceWithASummary) {
  auto r = RunCli(kSp + " --ranks 0,5 -o " + Out("s.svg"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(testing::XmlWellFormedError(Read(Out("s.svg"))), "");
  EXPECT_NE(Read(Out("s.svg")).find("rank 5"), std::string::npos);
  for (const char* line : {"schedule: samples/configs/autosp-sp4.json, 8 ranks (1 rank class simulated), 2 micro-steps",
                           "(cost model: ", "exposed by kind", "memory peak", "critical path"}) {
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  }
  r = RunCli(kSp + " -o " + Out("s.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json trace = Json::parse(Read(Out("s.json")));
  EXPECT_GT(trace["traceEvents"].size(), 1000u);
}

TEST_F(ScheduleCliTest, FullSimulationAgreesAndASlowRankDelaysTheStep) {
  auto sym = RunCli(kSp + " -o " + Out("a.json"));
  auto full = RunCli(kSp + " --full -o " + Out("b.json"));
  auto slow = RunCli(kSp + " --slow-rank 3:1.5 -o " + Out("c.json"));
  ASSERT_EQ(sym.exit_code, 0) << sym.output;
  ASSERT_EQ(full.exit_code, 0) << full.output;
  ASSERT_EQ(slow.exit_code, 0) << slow.output;
  EXPECT_NE(full.output.find("(all simulated)"), std::string::npos);
  EXPECT_DOUBLE_EQ(StepMs(sym.output), StepMs(full.output));
  // Every rank waits for rank 3 at the collectives of its groups: the step grows by about half
  // of the compute (rank 3 computes 1.5 x slower), and rank 0 idles while it waits.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(sym.output, m, std::regex(R"(compute ([0-9.]+) ms)")));
  const double compute = std::stod(m[1]);
  EXPECT_GT(StepMs(slow.output), StepMs(sym.output) + 0.4 * compute);
  EXPECT_NE(sym.output.find("idle 0.0 ms"), std::string::npos) << sym.output;
  EXPECT_EQ(slow.output.find("idle 0.0 ms"), std::string::npos) << slow.output;
  EXPECT_NE(slow.output.find("rank classes simulated"), std::string::npos);
}

TEST_F(ScheduleCliTest, ExitCodes) {
  EXPECT_EQ(RunCli(kSp + " -o " + Out("s.png")).exit_code, 2);
  EXPECT_EQ(RunCli(kSp + " --ranks 8 -o " + Out("s.svg")).exit_code, 2);
  EXPECT_EQ(RunCli(kSp + " --slow-rank 3 -o " + Out("s.svg")).exit_code, 2);
  EXPECT_EQ(RunCli(kSp + " --slow-rank 3:0 -o " + Out("s.svg")).exit_code, 2);
  { std::ofstream(Out("keep.svg")) << "keep"; }
  auto r = RunCli(kSp + " -o " + Out("keep.svg"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Read(Out("keep.svg")), "keep");
  // A config DeepSpeed rejects, and a pipeline the simulator does not cover: exit 1.
  r = RunCli("visualize schedule samples/configs/invalid/folding-rejected.json --model samples/models/mixtral-8x7b.json "
             "--cluster samples/clusters/h100-sxm.json --world-size 8 -o " + Out("x.svg"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // Stage 1: DeepSpeed's PipelineEngine refuses ZeRO-2/3 (validate's zero-stage-pipeline).
  r = RunCli("visualize schedule samples/configs/zero3-offload.json --model samples/models/llama-3-8b.json "
             "--cluster samples/clusters/h100-sxm.json --world-size 16 --pp 2 --set zero_optimization.stage=1 -o " +
             Out("x.svg"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("pp > 1"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(Out("x.svg")));
}

// The other engines run their planners' collectives around the closed form's kernels
// (sim/schedule/engine_program.h): megatron-lm's context-parallel KV ring and TransformerEngine's
// FP8 casts are drawn as their own tasks, fsdp2's per-block gathers too; the pipeline is refused.
TEST_F(ScheduleCliTest, MegatronAndFsdp2StepsDrawTheirRingGathersAndCasts) {
  const std::string base = "visualize schedule samples/configs/zero3-offload.json --model samples/models/llama-3-8b.json "
                           "--cluster samples/clusters/h100-sxm.json --world-size 16 "
                           "--set zero_optimization.offload_optimizer.device=none "
                           "--set zero_optimization.offload_param.device=none --set gradient_accumulation_steps=1 ";
  auto r = RunCli(base + "--set zero_optimization.stage=1 --engine megatron-lm --tp 2 --megatron-sp --cp 2 --fp8 -o " +
                  Out("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(cost model:"), std::string::npos) << r.output;
  const std::string trace = Read(Out("m.json"));
  EXPECT_NE(trace.find("cp_kv_p2p_fwd layer 0"), std::string::npos);
  EXPECT_NE(trace.find("fwd layers_0_fp8_cast"), std::string::npos);
  EXPECT_NE(trace.find("dist_opt_param_all_gather"), std::string::npos);
  r = RunCli(base + "--engine fsdp2 -o " + Out("f.svg"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(Read(Out("f.svg")).find("fsdp_all_gather_fwd layer 1"), std::string::npos);
  r = RunCli(base + "--set zero_optimization.stage=1 --engine megatron-lm --pp 2 -o " + Out("p.svg"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("pp > 1"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(Out("p.svg")));
}

// --full draws every rank unless --ranks picks some; the SVG's memory curves carry the HBM line,
// and the summary speaks GB (1e9 bytes) like simulate and tune.
TEST_F(ScheduleCliTest, FullDrawsEveryRankAndTheHbmLine) {
  auto r = RunCli(kSp + " --full -o " + Out("all.svg"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string svg = Read(Out("all.svg"));
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_NE(svg.find("<g id=\"rank_" + std::to_string(rank) + "\">"), std::string::npos) << rank;
  }
  EXPECT_NE(svg.find("HBM 85.52 GB"), std::string::npos);  // 81,559 MiB: what CUDA gives on an H100 80GB
  EXPECT_NE(r.output.find("HBM 85.52 GB: fits"), std::string::npos) << r.output;
  auto some = RunCli(kSp + " --full --ranks 2 -o " + Out("two.svg"));
  ASSERT_EQ(some.exit_code, 0) << some.output;
  EXPECT_EQ(Read(Out("two.svg")).find("<g id=\"rank_0\">"), std::string::npos);
}

// A trace past 100 MB is written with a warning that says how to make it smaller.
TEST_F(ScheduleCliTest, ALargeTraceIsWrittenWithAWarning) {
  std::string ranks;
  for (int rank = 0; rank < 64; ++rank) ranks += (rank ? "," : "") + std::to_string(rank);
  auto r = RunCli("visualize schedule samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json "
                  "--cluster samples/clusters/h100-sxm.json --world-size 64 --set train_batch_size=32 "
                  "--micro-steps 6 --ranks " + ranks + " -o " + Out("big.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(std::filesystem::file_size(Out("big.json")), 100'000'000u);
  EXPECT_NE(r.output.find("ds-plan: warning: the trace is "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fewer --ranks or --micro-steps 1"), std::string::npos) << r.output;
  auto small = RunCli(kSp + " -o " + Out("small.json"));
  EXPECT_EQ(small.output.find("warning: the trace"), std::string::npos) << small.output;
}

// Issue 36: --full on 4,096 ranks of a 70B ZeRO-3 step grew until bad_alloc after a minute. The
// rank-tasks a schedule holds are bounded and the refusal says what to do, before simulating.
TEST_F(ScheduleCliTest, TooManyRankTasksAreRefusedUpFront) {
  const std::string big = "visualize schedule samples/configs/zero3-offload.json --model samples/models/llama-3-70b.json "
                          "--cluster samples/clusters/h100-sxm.json --world-size 4096 -o " + Out("big.json");
  auto full = RunCli(big + " --full");
  EXPECT_EQ(full.exit_code, 2) << full.output;
  EXPECT_NE(full.output.find("4096 ranks x"), std::string::npos) << full.output;
  EXPECT_NE(full.output.find("leave --full off"), std::string::npos) << full.output;
  EXPECT_FALSE(std::filesystem::exists(Out("big.json")));
  std::string many;
  for (int r = 0; r < 1000; ++r) many += (r ? "," : "") + std::to_string(r);
  auto drawn = RunCli(big + " --ranks " + many);
  EXPECT_EQ(drawn.exit_code, 2) << drawn.output.substr(0, 500);
  EXPECT_NE(drawn.output.find("1000 ranks x"), std::string::npos) << drawn.output.substr(0, 500);
}

}  // namespace
}  // namespace dsp
