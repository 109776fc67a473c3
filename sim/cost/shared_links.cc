// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/shared_links.h"

#include <array>
#include <cmath>

namespace dsp::sim {
namespace {

constexpr int kForward = 0, kBackward = 1;

// Overlapped collectives on their own stream, running whenever the link allows: ZeRO-3/FSDP
// gathers and gradient reductions over the data-parallel groups. TP and CP overlap (userbuffers,
// async TP, the ring's sends) run inside the kernels they hide behind, ordered against the same
// group's critical collectives by data dependence, so they share nothing with them.
bool OnItsOwnStream(const PlannedCollective& p) {
  const bool overlapped = p.schedule == CommSchedule::kForwardOverlap || p.schedule == CommSchedule::kBackwardOverlap;
  const GroupKind g = p.call.group;
  return overlapped && (g == GroupKind::kDp || g == GroupKind::kSpDp || g == GroupKind::kEdp);
}

bool Stretched(const PlannedCollective& p) {
  return p.schedule == CommSchedule::kCritical && p.scope == StageScope::kAll;
}

// The shares of a critical collective that run in forward and in backward: by its name where it
// says, else with the compute (TP, Ulysses and EP collectives run in both passes, and in
// recomputation).
std::array<double, 2> PassShares(const PlannedCollective& p, double forward_fraction) {
  double forward = forward_fraction;
  if (p.call.purpose.ends_with("_fwd")) forward = 1.0;
  if (p.call.purpose.ends_with("_bwd")) forward = 0.0;
  return {forward, 1.0 - forward};
}

}  // namespace

double SharedLinkSeconds(double compute, double critical, double overlapped) {
  if (critical <= 0) return 0;
  if (overlapped <= 0) return critical;
  const double b = compute - critical - overlapped;
  return (-b + std::sqrt(b * b + 4 * critical * compute)) / 2;
}

SharedLinks PriceSharedLinks(const std::vector<PlannedCollective>& planned, double forward_seconds,
                             double backward_seconds) {
  SharedLinks out;
  out.extra_seconds.assign(planned.size(), 0.0);
  const double compute[2] = {forward_seconds, backward_seconds};
  if (forward_seconds + backward_seconds <= 0) return out;
  const double forward_fraction = forward_seconds / (forward_seconds + backward_seconds);
  // [link][pass]: link 0 NVLink, 1 the NICs.
  double on_link[2][2] = {}, traffic[2][2] = {};
  double critical_path[2] = {};  // every stretched collective's whole time, any link
  for (const PlannedCollective& p : planned) {
    const int link = p.call.inter_node ? 1 : 0;
    if (Stretched(p)) {
      const std::array<double, 2> share = PassShares(p, forward_fraction);
      for (int pass : {kForward, kBackward}) {
        on_link[link][pass] += share[pass] * p.link_seconds_per_unit;
        critical_path[pass] += share[pass] * p.seconds_per_unit;
      }
    } else if (OnItsOwnStream(p) && p.seconds_per_unit > 0) {
      const int pass = p.schedule == CommSchedule::kForwardOverlap ? kForward : kBackward;
      traffic[link][pass] += p.link_seconds_per_unit * (1.0 - p.floor_seconds / p.seconds_per_unit);
    }
  }
  double stretch[2][2];
  for (int link : {0, 1}) {
    for (int pass : {kForward, kBackward}) {
      const double k = on_link[link][pass];
      // The pass lasts its compute plus its critical path; this link's share of the latter is K'.
      const double rest = compute[pass] + critical_path[pass] - k;
      stretch[link][pass] = k > 0 && compute[pass] > 0 ? SharedLinkSeconds(rest, k, traffic[link][pass]) / k : 1.0;
    }
  }
  for (size_t i = 0; i < planned.size(); ++i) {
    const PlannedCollective& p = planned[i];
    if (!Stretched(p)) continue;
    const int link = p.call.inter_node ? 1 : 0;
    const std::array<double, 2> share = PassShares(p, forward_fraction);
    const double forward = share[kForward] * p.link_seconds_per_unit * (stretch[link][kForward] - 1);
    const double backward = share[kBackward] * p.link_seconds_per_unit * (stretch[link][kBackward] - 1);
    out.extra_seconds[i] = forward + backward;
    out.forward_credit += forward;
    out.backward_credit += backward;
  }
  return out;
}

}  // namespace dsp::sim
