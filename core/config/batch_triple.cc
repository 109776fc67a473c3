// SPDX-License-Identifier: Apache-2.0
#include "core/config/batch_triple.h"

#include <algorithm>

#include <cmath>
#include <cstdio>

namespace dsp {

std::optional<BatchWorld> BatchWorldSize(const ConfigView& v, std::optional<int64_t> world, int64_t pp,
                                         int64_t mpu_tp, int64_t cp) {
  // A cp that does not divide the world is the plan's error to report, not the batch's.
  if (world && cp > 1 && *world % cp == 0) {
    auto inner = BatchWorldSize(v, *world / cp, pp, mpu_tp, 1);
    if (inner) inner->how += " of world " + std::to_string(*world) + " / context parallel " + std::to_string(cp);
    return inner;
  }
  auto dp_top = v.Int("/data_parallel_size");
  auto sp_top = v.Int("/sequence_parallel_size");
  bool has_sp_key = v.Has("/sequence_parallel_size");
  if (has_sp_key && v.Has("/data_parallel_size") && dp_top.present()) {
    // deepspeed.initialize builds a (dp, sp) mesh and the config uses its data_parallel dim.
    return BatchWorld{static_cast<double>(dp_top.value),
                      "data_parallel_size " + std::to_string(dp_top.value) + " (the (dp, sp) mesh)"};
  }
  if (!world) return std::nullopt;
  if (mpu_tp > 1) {
    // engine.py: dp_world_size = mpu.get_data_parallel_world_size().
    int64_t dp = *world / (mpu_tp * std::max<int64_t>(pp, 1));
    return BatchWorld{static_cast<double>(dp),
                      "the mpu's data-parallel size " + std::to_string(dp) + " (world " +
                          std::to_string(*world) + " / (tp " + std::to_string(mpu_tp) + " x pp " +
                          std::to_string(std::max<int64_t>(pp, 1)) + "))"};
  }
  if (pp > 1) {
    int64_t dp = *world / pp;
    return BatchWorld{static_cast<double>(dp),
                      "the pipeline data-parallel size " + std::to_string(dp) + " (world " +
                          std::to_string(*world) + " / pp " + std::to_string(pp) + ")"};
  }
  if (has_sp_key && sp_top.present() && sp_top.value > 0) {
    return BatchWorld{static_cast<double>(*world) / static_cast<double>(sp_top.value),
                      "world size " + std::to_string(*world) + " / sequence_parallel_size " +
                          std::to_string(sp_top.value)};
  }
  return BatchWorld{static_cast<double>(*world), "world size " + std::to_string(*world)};
}

std::string FormatBatchNumber(double x) {
  if (std::floor(x) == x && std::fabs(x) < 1e15) return std::to_string(static_cast<long long>(x));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

BatchTriple FillBatchTriple(std::optional<int64_t> b, std::optional<int64_t> m,
                            std::optional<int64_t> g, double ws) {
  BatchTriple t;
  t.batch = b ? static_cast<double>(*b) : 0;
  t.micro = m ? static_cast<double>(*m) : 0;
  t.gas = g ? static_cast<double>(*g) : 0;
  const auto& Num = FormatBatchNumber;
  if (b && m && g) {
  } else if (b && m) {
    t.gas = std::floor(std::floor(t.batch / t.micro) / ws);
    t.derived = "gradient_accumulation_steps = (train_batch_size // micro) // ws = " + Num(t.gas);
  } else if (b && g) {
    t.micro = std::floor(std::floor(t.batch / ws) / t.gas);
    t.derived = "train_micro_batch_size_per_gpu = (train_batch_size // ws) // gas = " + Num(t.micro);
  } else if (m && g) {
    t.batch = t.micro * t.gas * ws;
    t.derived = "train_batch_size = micro x gas x ws = " + Num(t.batch);
  } else if (b) {
    t.gas = 1;
    t.micro = std::floor(t.batch / ws);
    t.derived = "train_micro_batch_size_per_gpu = train_batch_size // ws = " + Num(t.micro);
  } else {
    t.gas = 1;
    t.batch = t.micro * ws;
    t.derived = "train_batch_size = micro x ws = " + Num(t.batch);
  }
  return t;
}

}  // namespace dsp
