// SPDX-License-Identifier: Apache-2.0
// Forward and backward of the autograd collectives, on real Gloo groups between threads.
#include <gtest/gtest.h>

#ifdef DSP_HAVE_TORCH
#include <mutex>

#include "exec/model/collective_functions.h"
#include "tests/exec/threaded_ranks.h"

namespace dsp::exec {
namespace {

using testing::RunRanks;

struct Results {
  std::mutex mu;
  std::map<int, at::Tensor> by_rank;
  void Put(int r, const at::Tensor& t) {
    std::lock_guard<std::mutex> lock(mu);
    by_rank[r] = t;
  }
};

// y = reduce_from_tp(copy_to_tp(x) * w_r): forward sums the partial products, backward gives every
// rank dL/dx = sum_r w_r through copy_to_tp's all-reduce (or only w_r without it: the fault).
void CopyReduce(bool skip, Results& grads, Results& outs) {
  std::string err = RunRanks(2, [&](int r, Comm& tp) {
    at::Tensor x = at::ones({3}).set_requires_grad(true);
    at::Tensor w = at::full({3}, static_cast<float>(r + 1));
    at::Tensor y = ReduceFromTp(CopyToTp(x, &tp, skip) * w, &tp);
    y.sum().backward();
    outs.Put(r, y.detach());
    grads.Put(r, x.grad());
  });
  ASSERT_EQ(err, "");
}

TEST(CollectiveFunctionsTest, CopyToTpAllReducesTheGradientReduceFromTpTheOutput) {
  Results grads, outs;
  CopyReduce(false, grads, outs);
  for (int r : {0, 1}) {
    EXPECT_TRUE(at::equal(outs.by_rank[r], at::full({3}, 3.0f))) << "forward all-reduce, rank " << r;
    EXPECT_TRUE(at::equal(grads.by_rank[r], at::full({3}, 3.0f))) << "backward all-reduce, rank " << r;
  }
}

TEST(CollectiveFunctionsTest, TheNoCopyAllreduceFaultLeavesPartialGradients) {
  Results grads, outs;
  CopyReduce(true, grads, outs);
  EXPECT_TRUE(at::equal(grads.by_rank[0], at::full({3}, 1.0f)));
  EXPECT_TRUE(at::equal(grads.by_rank[1], at::full({3}, 2.0f)));
}

TEST(CollectiveFunctionsTest, UlyssesAllToAllMovesSequenceChunksToHeadChunks) {
  const int64_t p = 2, b = 1, s = 4, n = 4, d = 2;
  at::Tensor full = at::arange(b * s * n * d, at::kFloat).view({b, s, n, d});
  at::Tensor weight = at::arange(b * s * n * d, at::kFloat).view({b, s, n, d}) * 0.5 + 1;
  Results heads, back, grads;
  std::string err = RunRanks(2, [&](int r, Comm& sp) {
    at::Tensor x = full.narrow(1, r * s / p, s / p).clone().set_requires_grad(true);
    at::Tensor h = SeqToHeads(x, &sp);
    heads.Put(r, h.detach());
    back.Put(r, HeadsToSeq(h, &sp).detach());
    (h * weight.narrow(2, r * n / p, n / p)).sum().backward();
    grads.Put(r, x.grad());
  });
  ASSERT_EQ(err, "");
  for (int r = 0; r < p; ++r) {
    EXPECT_TRUE(at::equal(heads.by_rank[r], full.narrow(2, r * n / p, n / p))) << "rank " << r << " holds its heads, every position";
    EXPECT_TRUE(at::equal(back.by_rank[r], full.narrow(1, r * s / p, s / p))) << "heads_to_seq inverts it";
    EXPECT_TRUE(at::equal(grads.by_rank[r], weight.narrow(1, r * s / p, s / p))) << "backward is the reverse all-to-all";
  }
}

TEST(CollectiveFunctionsTest, UnevenRowAllToAllRoutesGradientsBack) {
  Results outs, grads;
  std::string err = RunRanks(2, [&](int r, Comm& ep) {
    std::vector<int64_t> send = r == 0 ? std::vector<int64_t>{2, 1} : std::vector<int64_t>{1, 0};
    std::vector<int64_t> recv = r == 0 ? std::vector<int64_t>{2, 1} : std::vector<int64_t>{1, 0};
    const int64_t rows = send[0] + send[1];
    at::Tensor x = (at::arange(rows, at::kFloat) + 10.0f * r).view({rows, 1}).set_requires_grad(true);
    at::Tensor y = AllToAllRows(x, &ep, send, recv);
    outs.Put(r, y.detach());
    // Row i of y gets weight (i + 1); the gradient of each source row is the weight where it landed.
    (y * (at::arange(y.size(0), at::kFloat) + 1).view({-1, 1})).sum().backward();
    grads.Put(r, x.grad());
  });
  ASSERT_EQ(err, "");
  EXPECT_TRUE(at::equal(outs.by_rank[0], at::tensor({0.f, 1.f, 10.f}).view({3, 1})));
  EXPECT_TRUE(at::equal(outs.by_rank[1], at::tensor({2.f}).view({1, 1})));
  EXPECT_TRUE(at::equal(grads.by_rank[0], at::tensor({1.f, 2.f, 1.f}).view({3, 1})));
  EXPECT_TRUE(at::equal(grads.by_rank[1], at::tensor({3.f}).view({1, 1})));
}

}  // namespace
}  // namespace dsp::exec
#else
TEST(CollectiveFunctionsTest, NeedsLibTorch) { GTEST_SKIP() << "built without LibTorch (see docs/exec.md)"; }
#endif
