// SPDX-License-Identifier: Apache-2.0
// The NCCL backend must build on a machine without a GPU and fail there with a clear Error (no
// abort); on a GPU machine the same test runs a real one-rank communicator.
#include <gtest/gtest.h>

#ifdef DSP_HAVE_TORCH
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "exec/comm/comm.h"
#include "exec/run.h"

namespace dsp::exec {
namespace {

TEST(NcclCommTest, WorksOnAGpuOrFailsCleanlyWithout) {
  CommContext ctx;
  ctx.store = c10::make_intrusive<c10d::HashStore>();
  ctx.timeout = std::chrono::milliseconds(20000);
  auto comm = MakeNcclComm(ctx, GroupName("world", {0}), {0});
  if (!comm.ok()) {
    const std::string& m = comm.error().message;
    EXPECT_TRUE(m.find("needs a CUDA GPU") != std::string::npos || m.find("built without CUDA/NCCL") != std::string::npos)
        << m;
    EXPECT_NE(m.find("--backend gloo"), std::string::npos) << "says what to use instead: " << m;
    return;
  }
  at::Tensor t = at::arange(6, at::kFloat);
  ASSERT_TRUE((*comm)->AllReduceSum(t).ok());
  EXPECT_TRUE(at::equal(t, at::arange(6, at::kFloat)));
  auto g = (*comm)->AllGather(t.view({2, 3}));
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(at::equal(*g, t.view({2, 3})));
}

}  // namespace
}  // namespace dsp::exec
#else
TEST(NcclCommTest, NeedsLibTorch) { GTEST_SKIP() << "built without LibTorch (see docs/exec.md)"; }
#endif
