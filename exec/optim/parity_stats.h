// SPDX-License-Identifier: Apache-2.0
// The per-family parity statistics both optimizer paths gather (data_parallel.cc, zero3.cc): the
// largest |difference| against the reference, NaN-aware. A NaN anywhere must reach the report as
// NaN, where every tolerance comparison fails: std::max(0.0, NaN) is 0, which once let a run whose
// gradients were NaN print "max abs 0 ... ok".
#pragma once

#include <cmath>

#include <ATen/ATen.h>

namespace dsp::exec {

// max |t| (torch's max propagates NaN); 0 for an empty tensor.
inline double MaxAbs(const at::Tensor& t) { return t.numel() == 0 ? 0.0 : t.abs().max().item<double>(); }

// Differences in fp32: a bf16 subtraction would round the difference itself.
inline double MaxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  return MaxAbs(a.to(at::kFloat) - b.to(at::kFloat));
}

// slot = max(slot, v), except that a NaN, once seen, stays.
inline void Bump(double& slot, double v) {
  if (std::isnan(slot)) return;
  if (std::isnan(v) || v > slot) slot = v;
}

}  // namespace dsp::exec
