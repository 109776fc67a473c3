// SPDX-License-Identifier: Apache-2.0
// Derive(): divisibility checks for ParallelSizes. The wording of the pp, tp and expert-width
// messages is DeepSpeed's build_folding_spec (module_inject/auto_ep_folding.py), so users who
// have seen DeepSpeed's error recognise it; the sp message follows the same pattern.
#include "core/layout/parallel_sizes.h"

#include <string>

#include "core/util/text.h"

namespace dsp {
namespace {

// Python list formatting, as DeepSpeed's messages print `_divisors(n)`: "[1, 2, 4, 8]".
std::string Divisors(int n) { return "[" + DivisorList(n) + "]"; }

std::string NotPositive(const char* name, int value) {
  return std::string(name) + " must be a positive integer, got " + std::to_string(value);
}

}  // namespace

Result<DerivedSizes> Derive(const ParallelSizes& sizes) {
  if (sizes.world < 1) return Error{NotPositive("world_size", sizes.world)};
  if (sizes.pp < 1) return Error{NotPositive("pp_size", sizes.pp)};
  if (sizes.tp < 0) {
    return Error{"tensor_parallel.autotp_size must be a positive integer (0 or 1 = off), got " +
                 std::to_string(sizes.tp)};
  }
  if (sizes.sp < 1) return Error{NotPositive("sequence_parallel_size", sizes.sp)};
  if (sizes.expert_parallel) {
    if (sizes.ep < 1) return Error{NotPositive("expert_parallel.autoep_size", sizes.ep)};
    if (sizes.etp < 1) {
      return Error{NotPositive("expert_parallel.expert_tensor_parallel_size", sizes.etp)};
    }
  }

  // Messages are built only on failure: Derive runs for every table and sweeps call it often.
  auto w = [&] { return std::to_string(sizes.world); };
  auto p = [&] { return std::to_string(sizes.pp); };
  if (sizes.world % sizes.pp != 0) {
    return Error{"pp_size=" + p() + " must divide world_size=" + w() +
                 ". Valid pp_size values: " + Divisors(sizes.world)};
  }
  const int stage = sizes.world / sizes.pp;
  auto stage_text = [&] {
    return "(world_size=" + w() + " / pp_size=" + p() + " = " + std::to_string(stage) + ")";
  };

  const int tp = EffectiveTp(sizes.tp);
  if (stage % tp != 0) {
    return Error{
        "tensor_parallel.autotp_size=" + std::to_string(tp) + " must divide the stage size " +
        stage_text() +
        ". Computed dp would be non-integral. Valid autotp_size values: " + Divisors(stage)};
  }
  const int per_tp = stage / tp;
  if (per_tp % sizes.sp != 0) {
    return Error{"sequence_parallel_size=" + std::to_string(sizes.sp) +
                 " must divide the ranks per tensor-parallel lane (world_size=" + w() +
                 " / pp_size=" + p() + " / autotp_size=" + std::to_string(tp) + " = " +
                 std::to_string(per_tp) +
                 "). Computed dp would be non-integral. Valid sequence_parallel_size values: " +
                 Divisors(per_tp)};
  }

  int edp = stage;
  if (sizes.expert_parallel) {
    const int width = sizes.ep * sizes.etp;
    if (stage % width != 0) {
      return Error{
          "expert_parallel.autoep_size * expert_parallel.expert_tensor_parallel_size (" +
          std::to_string(sizes.ep) + " * " + std::to_string(sizes.etp) + " = " +
          std::to_string(width) + ") must divide the stage size " + stage_text() +
          ". Computed edp would be non-integral. Valid expert-width values: " + Divisors(stage)};
    }
    edp = stage / width;
  }
  return DerivedSizes{stage, per_tp / sizes.sp, edp};
}

}  // namespace dsp
