// SPDX-License-Identifier: Apache-2.0
// DeepSpeed's four EP/EDP code paths , transcribed loop for loop from
// deepspeed/utils/groups.py and module_inject/auto_ep_folding.py at edaa722. The loops are kept in
// DeepSpeed's shape rather than collapsed into closed forms so that a reader can hold them next to
// the Python; the tests check closed forms of the same groups against them independently.
#include <string>

#include "core/layout/layout_internal.h"
#include "core/util/text.h"

namespace dsp::layout_internal {
namespace {

// EDP = "the p-th element of every EP group" (DeepSpeed's zip(*ep_groups) of one stage / lane).
void AppendZipped(const std::vector<RankGroup>& chunks, int width, std::vector<RankGroup>& out) {
  for (int pos = 0; pos < width; ++pos) {
    RankGroup zipped;
    for (const RankGroup& chunk : chunks) zipped.push_back(chunk[pos]);
    out.push_back(std::move(zipped));
  }
}

}  // namespace

ExpertGroups LegacyExpertGroups(int world, int stage, int ep, bool data_before_expert) {
  ExpertGroups out;
  const int ep_stride = stage / ep;
  for (int stage_start = 0; stage_start < world; stage_start += stage) {
    for (int i = 0; i < ep; ++i) {
      out.edp.push_back(data_before_expert
                            ? Range(stage_start + i * ep_stride, stage_start + (i + 1) * ep_stride)
                            : Range(stage_start + i, stage_start + stage, ep));
    }
  }
  if (data_before_expert) {
    for (int stage_start = 0; stage_start < world; stage_start += stage) {
      for (int i = 0; i < ep_stride; ++i) {
        out.ep.push_back(Range(stage_start + i, stage_start + stage, ep_stride));
      }
    }
  } else {
    // Not per stage in DeepSpeed, but equivalent because ep divides the stage size.
    for (int i = 0; i < world / ep; ++i) out.ep.push_back(Range(i * ep, (i + 1) * ep));
  }
  return out;
}

ExpertGroups ModelParallelExpertGroups(int world, int stage, int mp_size, bool tp_lane_major,
                                       int ep) {
  ExpertGroups out;
  for (int stage_start = 0; stage_start < world; stage_start += stage) {
    const RankGroup stage_ranks = Range(stage_start, stage_start + stage);
    RankGroup ordered;
    if (tp_lane_major && mp_size > 1) {
      // "TP-strided: group by TP, then interleave DP lanes": lane 0 of every TP group, lane 1, ...
      const int num_tp_groups = stage / mp_size;
      for (int lane = 0; lane < mp_size; ++lane) {
        for (int g = 0; g < num_tp_groups; ++g) ordered.push_back(stage_ranks[g * mp_size + lane]);
      }
    } else {
      ordered = stage_ranks;
    }
    // Consecutive chunks of `ordered`; when ep does not divide stage/tp a chunk straddles two
    // lanes (W=4, TP=2, EP=4: order 0,2,1,3 -> one EP group, singleton EDP groups).
    std::vector<RankGroup> chunks;
    for (int g = 0; g < static_cast<int>(ordered.size()) / ep; ++g) {
      chunks.emplace_back(ordered.begin() + g * ep, ordered.begin() + (g + 1) * ep);
    }
    out.ep.insert(out.ep.end(), chunks.begin(), chunks.end());
    AppendZipped(chunks, ep, out.edp);
  }
  return out;
}

ExpertGroups FoldingExpertGroups(int world, int stage, int ep) {
  // auto_ep_folding.py (PR #8064): in the merged folding code EP groups are consecutive slices of each
  // stage (not the lane-major order of path B; the folding tests reject that as "stale").
  ExpertGroups out;
  for (int stage_start = 0; stage_start < world; stage_start += stage) {
    std::vector<RankGroup> chunks;
    for (int start = 0; start < stage; start += ep) {
      chunks.push_back(Range(stage_start + start, stage_start + start + ep));
    }
    out.ep.insert(out.ep.end(), chunks.begin(), chunks.end());
    AppendZipped(chunks, ep, out.edp);
  }
  return out;
}

Result<ExpertGroups> MegatronMpuExpertGroups(int world, int tp, int ep, int pp,
                                             bool data_before_expert) {
  // _ensure_divisibility(...) asserts, with DeepSpeed's "{} is not divisible by {}" text.
  const std::string where = "expert layout 'mpu' (DeepSpeed _get_expert_parallel_ranks): ";
  if (world % (tp * pp) != 0) {
    return Error{where + std::to_string(world) + " is not divisible by " + std::to_string(tp * pp) +
                 " (world_size by tp * pp)"};
  }
  const int dp = world / (tp * pp);
  if (dp % ep != 0) {
    // Stricter than folding: EP groups are carved out of one TP lane's data-parallel group.
    return Error{where + std::to_string(dp) + " is not divisible by " + std::to_string(ep) +
                 ": the data-parallel size " + std::to_string(dp) +
                 " (world_size=" + std::to_string(world) + " / (tp=" + std::to_string(tp) +
                 " * pp=" + std::to_string(pp) +
                 ")) must be a multiple of expert_parallel.autoep_size=" + std::to_string(ep) +
                 ". Valid autoep_size values: [" + DivisorList(dp) + "]"};
  }

  // One "data parallel group" per TP lane and stage.
  std::vector<RankGroup> lanes;
  const int pp_stride = world / pp;
  for (int stage_start = 0; stage_start < world; stage_start += pp_stride) {
    const int stage_next = stage_start + pp_stride;
    for (int i = 0; i < tp; ++i) {
      if (data_before_expert) {
        // D+E interleave, e.g. [0,4,8,...,28, 2,6,...,30] for dp_stride 2, tp 2.
        const int dp_stride = world / ep / tp / pp;
        RankGroup lane;
        for (int ds = 0; ds < dp_stride; ++ds) {
          RankGroup part = Range(stage_start + i + ds * tp, stage_next, dp_stride * tp);
          lane.insert(lane.end(), part.begin(), part.end());
        }
        lanes.push_back(std::move(lane));
      } else {
        lanes.push_back(Range(stage_start + i, stage_next, tp));
      }
    }
  }

  ExpertGroups out;
  for (const RankGroup& lane : lanes) {
    std::vector<RankGroup> chunks;  // e.g. [0,2,4,6], [8,10,12,14]
    for (int i = 0; i < dp; i += ep) chunks.emplace_back(lane.begin() + i, lane.begin() + i + ep);
    out.ep.insert(out.ep.end(), chunks.begin(), chunks.end());
    AppendZipped(chunks, ep, out.edp);  // e.g. [0,8], [2,10], [4,12], [6,14]
  }
  return out;
}

}  // namespace dsp::layout_internal
