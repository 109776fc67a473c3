// SPDX-License-Identifier: Apache-2.0
// Links the collectives share (docs/cost-model.md, "Links the collectives share"). A rank's NVLink
// is one link and its node's NICs another. Overlapped collectives that run on their own stream
// every micro-step (ZeRO-3/FSDP gathers and gradient reductions over the data-parallel groups) are
// issued whatever is on the critical path, so part of their traffic lands while a critical
// collective on the same link (an EP all-to-all, a pipeline send, a blocking gather) needs it, and
// slows it down.
#pragma once

#include <vector>

#include "sim/comm/comm_plan.h"

namespace dsp::sim {

/// Spread evenly over a pass of `compute` seconds (and whatever else the critical path holds then),
/// overlapped traffic of `overlapped` link seconds takes the link a fraction O / (C + K') of the
/// time, so critical collectives of `critical` link seconds on it stretch to K' = K + K' O / (C + K'):
/// the positive root of K'^2 + (C - K - O) K' - K C = 0. K when nothing overlaps, K + O without
/// compute.
double SharedLinkSeconds(double compute, double critical, double overlapped);

/// What sharing its link adds to each critical collective of a micro-step, and how much overlapped
/// traffic rode along during that time (and so needs that much less of the pass's compute window).
struct SharedLinks {
  std::vector<double> extra_seconds;  // per planned collective, per micro-step (0 unless critical)
  double forward_credit = 0;
  double backward_credit = 0;
};

/// Forward and backward are priced apart: a collective named *_fwd runs in forward, *_bwd in
/// backward, any other critical one with compute; kForwardOverlap traffic flows in forward,
/// kBackwardOverlap in backward. Only the bytes on the link stretch (`link_seconds_per_unit`, not
/// the per-call latency); an overlapped collective's unhideable floor is already on the critical
/// path and shares nothing. Critical collectives of one stage (kFirst/kLast) are not stretched.
SharedLinks PriceSharedLinks(const std::vector<PlannedCollective>& planned, double forward_seconds,
                             double backward_seconds);

}  // namespace dsp::sim
