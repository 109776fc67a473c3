// SPDX-License-Identifier: Apache-2.0
// The layout line of a validate report: every size that can be derived from the config and the
// command line, null where it cannot.
#pragma once

#include <cstdint>
#include <optional>

#include "core/config/parallel_config.h"

namespace dsp {

struct LayoutSummary {
  std::optional<int64_t> world_size, tp, dp, sp, ep, etp, edp, pp, zero_stage;
};

// `mpu_tp` > 1: Megatron's tensor-model-parallel size stands in for AutoTP's.
LayoutSummary SummarizeLayout(const ParallelConfig& pc, std::optional<int64_t> world, int64_t pp,
                              int64_t mpu_tp = 1);

}  // namespace dsp
