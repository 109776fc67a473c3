// SPDX-License-Identifier: Apache-2.0
// The Gloo backend, with real collectives between threads (tests/exec/threaded_ranks.h), including
// the operations Gloo 1.13 lacks and exec::Comm emulates (reduce-scatter, uneven all-to-all).
#include <gtest/gtest.h>

#ifdef DSP_HAVE_TORCH
#include <mutex>

#include "exec/launch/rendezvous.h"
#include "tests/exec/threaded_ranks.h"

namespace dsp::exec {
namespace {

using testing::RunRanks;

// gtest assertions are not thread-safe to fail concurrently; record and check after join.
struct Checks {
  std::mutex mu;
  std::vector<std::string> failures;
  void Expect(bool ok, const std::string& what) {
    if (ok) return;
    std::lock_guard<std::mutex> lock(mu);
    failures.push_back(what);
  }
};

TEST(GlooCommTest, AllReduceAllGatherBroadcast) {
  Checks c;
  std::string err = RunRanks(3, [&](int r, Comm& comm) {
    at::Tensor t = at::full({2, 2}, static_cast<float>(r + 1));
    c.Expect(comm.AllReduceSum(t).ok(), "all_reduce ok");
    c.Expect(at::allclose(t, at::full({2, 2}, 6.0f)), "all_reduce sums 1+2+3");
    auto g = comm.AllGather(at::full({1, 2}, static_cast<float>(r)));
    c.Expect(g.ok() && at::equal(*g, at::tensor({0.f, 0.f, 1.f, 1.f, 2.f, 2.f}).view({3, 2})), "all_gather in rank order");
    at::Tensor b = at::full({3}, static_cast<float>(r));
    c.Expect(comm.Broadcast(b, 1).ok() && at::equal(b, at::full({3}, 1.0f)), "broadcast from group rank 1");
    c.Expect(comm.Barrier().ok(), "barrier");
  });
  ASSERT_EQ(err, "");
  EXPECT_TRUE(c.failures.empty()) << c.failures.front();
}

TEST(GlooCommTest, ReduceScatterIsEmulatedExactly) {
  Checks c;
  std::string err = RunRanks(2, [&](int r, Comm& comm) {
    // Rank r contributes rows [10r + 0, 10r + 1, 10r + 2, 10r + 3]; chunk k is rows 2k..2k+1.
    at::Tensor t = at::arange(4, at::kFloat).view({4, 1}) + 10.0f * r;
    auto out = comm.ReduceScatter(t);
    at::Tensor want = at::tensor({2.f * (2 * r) + 10, 2.f * (2 * r + 1) + 10}).view({2, 1});
    c.Expect(out.ok() && at::equal(*out, want), "rank " + std::to_string(r) + " gets the sum of its chunk");
  });
  ASSERT_EQ(err, "");
  EXPECT_TRUE(c.failures.empty()) << c.failures.front();
}

TEST(GlooCommTest, AllToAllWithUnevenSplits) {
  Checks c;
  std::string err = RunRanks(2, [&](int r, Comm& comm) {
    // rank 0 sends 1 row to itself and 2 to rank 1; rank 1 sends 3 rows to rank 0 and none to itself.
    std::vector<int64_t> send = r == 0 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{3, 0};
    std::vector<int64_t> recv = r == 0 ? std::vector<int64_t>{1, 3} : std::vector<int64_t>{2, 0};
    const int64_t rows = send[0] + send[1];
    at::Tensor t = at::arange(rows, at::kFloat).view({rows, 1}) + 100.0f * r;
    auto out = comm.AllToAll(t, send, recv);
    at::Tensor want = r == 0 ? at::tensor({0.f, 100.f, 101.f, 102.f}).view({4, 1}) : at::tensor({1.f, 2.f}).view({2, 1});
    c.Expect(out.ok() && at::equal(*out, want), "rank " + std::to_string(r) + " receives its rows in member order");
  });
  ASSERT_EQ(err, "");
  EXPECT_TRUE(c.failures.empty()) << c.failures.front();
}

TEST(GlooCommTest, GroupOfOneIsTheIdentity) {
  auto comm = MakeSelfComm("tp group [3]", 3);
  at::Tensor t = at::ones({2});
  EXPECT_TRUE(comm->AllReduceSum(t).ok());
  EXPECT_TRUE(at::equal(t, at::ones({2})));
  EXPECT_TRUE(at::equal(*comm->ReduceScatter(t), t));
  EXPECT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->ranks(), std::vector<int>{3});
}

TEST(GlooCommTest, AMemberThatNeverJoinsIsAnErrorWithinTheTimeout) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  CommContext ctx;
  ctx.store = store;
  ctx.global_rank = 0;
  ctx.timeout = std::chrono::milliseconds(1000);
  ctx.diagnose = [](const std::vector<int>& ranks) { return "rank " + std::to_string(ranks[1]) + " never joined"; };
  const auto t0 = std::chrono::steady_clock::now();
  auto comm = MakeGlooComm(ctx, GroupName("dp", {0, 5}), {0, 5});
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.error().message.find("dp group [0,5]"), std::string::npos) << comm.error().message;
  EXPECT_NE(comm.error().message.find("rank 5 never joined"), std::string::npos) << comm.error().message;
  EXPECT_LT(waited, 10.0);
}

TEST(RendezvousTest, InProcessWorldOfOneChecksItsOwnPlan) {
  auto rv = Rendezvous::InProcess();
  EXPECT_TRUE(rv->CheckSamePlan("abc", "dp1").ok());
  EXPECT_EQ(rv->Diagnose({0}), "") << "a live rank is not reported";
  rv->store()->set("failed/0", std::vector<uint8_t>{'x'});
  EXPECT_NE(rv->Diagnose({0}).find("stopped after an error"), std::string::npos);
}

}  // namespace
}  // namespace dsp::exec
#else
TEST(GlooCommTest, NeedsLibTorch) { GTEST_SKIP() << "built without LibTorch (see docs/exec.md)"; }
#endif
