// SPDX-License-Identifier: Apache-2.0
#include "exec/bench.h"

#include <algorithm>
#include <chrono>

namespace dsp::exec {
namespace {

using Clock = std::chrono::steady_clock;

// One timed call; `bytes` is the nccl-tests size of the collective on `n` ranks.
Status RunOnce(Comm& c, const std::string& kind, int64_t bytes) {
  const int n = c.size();
  const int64_t floats = std::max<int64_t>(bytes / 4, n);
  if (kind == "all_reduce") {
    at::Tensor t = at::ones({floats});
    return c.AllReduceSum(t);
  }
  if (kind == "broadcast") {
    at::Tensor t = at::ones({floats});
    return c.Broadcast(t, 0);
  }
  if (kind == "all_gather") {
    auto r = c.AllGather(at::ones({floats / n}));
    return r.ok() ? Status::Ok() : Status(r.error());
  }
  if (kind == "reduce_scatter") {
    auto r = c.ReduceScatter(at::ones({floats / n * n}));
    return r.ok() ? Status::Ok() : Status(r.error());
  }
  auto r = c.AllToAll(at::ones({floats / n * n}), {}, {});  // all_to_all
  return r.ok() ? Status::Ok() : Status(r.error());
}

}  // namespace

Result<std::vector<BenchResult>> MeasureCollectives(const std::map<GroupKind, Comm*>& groups,
                                                    const RunOptions& options) {
  std::vector<BenchResult> out;
  const auto& tables = options.plan.groups.groups;
  for (const auto& [kind, comm] : groups) {
    if (comm == nullptr || comm->size() < 2) continue;
    for (const char* collective : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"}) {
      for (int64_t bytes : options.bench_bytes) {
        std::vector<double> times;
        for (int it = -1; it < options.bench_iterations; ++it) {  // it == -1: warm-up
          if (auto s = comm->Barrier(); !s.ok()) return s.error();
          const auto t0 = Clock::now();
          if (auto s = RunOnce(*comm, collective, bytes); !s.ok()) return s.error();
          at::Tensor mine = at::full({1, 1}, std::chrono::duration<double>(Clock::now() - t0).count(), at::kDouble);
          auto all = comm->AllGather(mine.to(at::kFloat));
          if (!all.ok()) return all.error();
          if (it >= 0) times.push_back(all->max().item<double>());
        }
        std::sort(times.begin(), times.end());
        BenchResult b;
        b.group_kind = std::string(GroupKindName(kind));
        b.group = tables.at(kind).front();
        b.collective = collective;
        b.algorithm = comm->Algorithm(collective);
        b.bytes = bytes;
        b.seconds = times[times.size() / 2];
        b.algbw_bytes_per_second = b.seconds > 0 ? bytes / b.seconds : 0;
        b.busbw_bytes_per_second = b.algbw_bytes_per_second * BusBandwidthFactor(collective, comm->size());
        out.push_back(std::move(b));
      }
    }
  }
  return out;
}

}  // namespace dsp::exec
