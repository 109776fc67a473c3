// SPDX-License-Identifier: Apache-2.0
// Runs `n` ranks as threads of this test process, each with its own exec::Comm over one shared
// c10d::HashStore: real Gloo collectives over loopback without launching processes.
#pragma once

#ifdef DSP_HAVE_TORCH
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "exec/comm/comm.h"

namespace dsp::exec::testing {

// `body(rank, comm)` runs on every rank; returns "" or the first error (group creation failures).
inline std::string RunRanks(int n, const std::function<void(int, Comm&)>& body,
                            std::chrono::milliseconds timeout = std::chrono::milliseconds(20000)) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<int> ranks(n);
  for (int r = 0; r < n; ++r) ranks[r] = r;
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      CommContext ctx;
      ctx.store = store;
      ctx.global_rank = r;
      ctx.timeout = timeout;
      auto comm = MakeGlooComm(ctx, GroupName("test", ranks), ranks);
      if (!comm.ok()) {
        errors[r] = comm.error().message;
        return;
      }
      body(r, **comm);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (!e.empty()) return e;
  }
  return "";
}

}  // namespace dsp::exec::testing
#endif
