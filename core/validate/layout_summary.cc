// SPDX-License-Identifier: Apache-2.0
#include "core/validate/layout_summary.h"

namespace dsp {

LayoutSummary SummarizeLayout(const ParallelConfig& given, std::optional<int64_t> world, int64_t pp,
                              int64_t mpu_tp) {
  ParallelConfig pc = given;
  if (mpu_tp > 1) pc.tp = mpu_tp;
  LayoutSummary s;
  s.world_size = world;
  s.tp = pc.tp;
  s.sp = pc.sp;
  s.pp = pp;
  if (pc.autoep_enabled) {
    s.ep = pc.ep;
    s.etp = pc.etp;
  } else {
    s.ep = 1;
    s.etp = 1;
  }
  if (pc.zero_stage.present()) {
    s.zero_stage = pc.zero_stage.value;
  } else if (pc.zero_stage.absent()) {
    s.zero_stage = 0;
  }
  if (world && pc.tp > 0 && pc.sp > 0 && pp > 0) {
    int64_t model = pc.tp * pc.sp * pp;
    if (*world % model == 0) s.dp = *world / model;
    int64_t width = pc.autoep_enabled ? pc.ep * pc.etp : 1;
    if (width > 0 && *world % pp == 0 && (*world / pp) % width == 0) s.edp = (*world / pp) / width;
  }
  return s;
}

}  // namespace dsp
