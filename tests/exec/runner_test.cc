// SPDX-License-Identifier: Apache-2.0
// RunPlan in this process at world = 1 (rank 0 hosts its own store): the whole executor path
// without launching anything, for the dense and the MoE model.
#include <gtest/gtest.h>

#include "core/json/document.h"
#include "exec/run.h"

#ifdef DSP_HAVE_TORCH
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>

namespace dsp::exec {
namespace {

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

RunOptions WorldOfOne(bool moe) {
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(FreePort()).c_str(), 1);
  unsetenv("TORCHELASTIC_USE_AGENT_STORE");
  Json config = Json::parse(R"({"train_batch_size": 2, "train_micro_batch_size_per_gpu": 2,
                                "zero_optimization": {"stage": 1}})");
  PlanInputs inputs;
  inputs.world_size = 1;
  RunOptions o;
  o.plan = BuildPlan(config, inputs).value();
  o.tiny = MakeTinyConfig(DefaultTinyModel(moe), o.plan.sizes, 2).value();
  o.steps = 2;
  o.timeout_seconds = 20;
  o.fingerprint.config_text = config.dump();
  o.fingerprint.world_size = 1;
  return o;
}

TEST(RunnerTest, WorldOfOneMatchesTheReferenceExactly) {
  for (bool moe : {false, true}) {
    auto r = RunPlan(WorldOfOne(moe));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r->ok);
    ASSERT_EQ(r->main.step_reports.size(), 2u);
    for (const auto& s : r->main.step_reports) {
      EXPECT_EQ(s.loss, s.ref_loss) << "one rank computes what the reference computes";
      bool has_router = false;
      for (const auto& f : s.families) {
        EXPECT_EQ(f.grad_max_abs, 0.0) << f.family;
        EXPECT_GT(f.grad_ref_max, 0.0) << f.family << ": gradients were really compared";
        has_router = has_router || f.family == "router";
      }
      EXPECT_EQ(has_router, moe);
    }
    EXPECT_NE(r->main.step_reports[0].loss, r->main.step_reports[1].loss) << "a new batch each step";
  }
}

// ZeRO-3 at world = 1: each parameter is gathered for every use and again in backward. The
// forward is the reference's, bit for bit (the first loss is equal); backward recomputes each use
// in its own autograd graph, so gradients that several uses feed are summed in another order:
// differences of a few float ulps, far inside the tolerance.
TEST(RunnerTest, Zero3AtWorldOfOneMatchesTheReference) {
  for (bool moe : {false, true}) {
    RunOptions o = WorldOfOne(moe);
    o.plan.zero_stage = 3;
    auto r = RunPlan(o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r->ok);
    EXPECT_EQ(r->zero_stage, 3);
    ASSERT_EQ(r->main.step_reports.size(), 2u);
    EXPECT_EQ(r->main.step_reports[0].loss, r->main.step_reports[0].ref_loss);
    for (const auto& s : r->main.step_reports) {
      for (const auto& f : s.families) {
        EXPECT_LT(f.grad_max_abs, 1e-7) << f.family;
        EXPECT_GT(f.grad_ref_max, 0.0) << f.family;
      }
    }
  }
}

// bf16 at world = 1: the shard is the whole model, so the sharded run performs the reference's
// bf16 operations in the same order and must match it bit for bit, with the bf16 tolerance and
// the gloo probe's answer in the report.
TEST(RunnerTest, WorldOfOneInBf16MatchesTheReferenceExactly) {
  for (bool moe : {false, true}) {
    RunOptions o = WorldOfOne(moe);
    o.dtype = Dtype::kBf16;
    o.tolerances = DefaultTolerances(Dtype::kBf16);
    auto r = RunPlan(o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r->ok);
    EXPECT_EQ(r->dtype, "bf16");
    EXPECT_FALSE(r->comm_dtype.empty());
    EXPECT_EQ(r->tolerances.rtol, 0.125);
    EXPECT_EQ(r->tolerances.atol, 1e-3);
    ASSERT_EQ(r->main.step_reports.size(), 2u);
    for (const auto& s : r->main.step_reports) {
      EXPECT_EQ(s.loss, s.ref_loss);
      for (const auto& f : s.families) {
        EXPECT_EQ(f.grad_max_abs, 0.0) << f.family;
        EXPECT_EQ(f.weight_max_abs, 0.0) << f.family;
        EXPECT_GT(f.grad_ref_max, 0.0) << f.family;
      }
    }
    // bf16 really ran: its losses differ from the fp32 run's on the same weights and batch.
    auto fp32 = RunPlan(WorldOfOne(moe));
    ASSERT_TRUE(fp32.ok()) << fp32.error().message;
    EXPECT_NE(fp32->main.step_reports[0].loss, r->main.step_reports[0].loss);
    EXPECT_NEAR(fp32->main.step_reports[0].loss, r->main.step_reports[0].loss, 0.05 * std::abs(fp32->main.step_reports[0].loss));
  }
}

TEST(RunnerTest, RefusesWhatItCannotRun) {
  RunOptions o = WorldOfOne(false);
  o.fault = Fault::kNoCopyAllreduce;
  auto r = RunPlan(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("needs tensor parallelism"), std::string::npos) << r.error().message;
  o = WorldOfOne(false);
  o.fault = Fault::kExpertGradsOverDp;
  r = RunPlan(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("needs a config with zero_optimization.stage 3 and expert_parallel"),
            std::string::npos)
      << r.error().message;
  o = WorldOfOne(false);
  o.dtype = Dtype::kBf16;
  o.backend = Backend::kNccl;
  r = RunPlan(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--dtype bf16 runs on the gloo backend only"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace dsp::exec
#else
TEST(RunnerTest, NeedsLibTorch) { GTEST_SKIP() << "built without LibTorch (see docs/exec.md)"; }
#endif

// Report rendering is torch-free and runs in every build.
namespace dsp::exec {
namespace {

TEST(RunnerTest, ReportsRenderAndNameTheFirstFailure) {
  RunReport r;
  r.world_size = 4;
  r.backend = "gloo";
  r.fault = "sum-router-grads";
  r.mode = "dp2 x tp2, folded ep4 (edp1), zero-1";
  r.steps = 2;
  r.ok = false;
  StepParity s;
  s.step = 1;
  s.ok = false;
  FamilyParity f;
  f.family = "router";
  f.grad_max_abs = 1.0;
  f.grad_ref_max = 1.0;
  f.ok = false;
  s.families.push_back(f);
  r.main.ok = false;
  r.main.step_reports.push_back(s);
  r.main.failing_families = {"norm", "router"};
  r.main.first_failing_step = 1;
  r.main.first_failing_families = {"router"};
  EXPECT_NE(RenderRunText(r).find("parity: FAILED at step 1 in router (over all steps: norm, router)"),
            std::string::npos)
      << RenderRunText(r);
  Json doc = Json::parse(RenderRunJson(r));
  EXPECT_EQ(doc["first_failure"]["families"], Json::array({"router"}));
  EXPECT_EQ(doc["step_reports"][0]["families"][0]["grad_max_rel"], 1.0);
}

TEST(RunnerTest, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_reduce", 4), 1.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_gather", 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("reduce_scatter", 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_to_all", 2), 0.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("broadcast", 8), 1.0);
}

}  // namespace
}  // namespace dsp::exec
