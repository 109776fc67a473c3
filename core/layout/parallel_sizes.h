// SPDX-License-Identifier: Apache-2.0
// Parallelism sizes of one DeepSpeed job and the sizes derived from them (stage, dp, edp).
//
// These are the inputs of the rank-group derivation in core/layout/groups.h. Derive() is the single
// place where the divisibility rules are checked; its messages use DeepSpeed's config key names
// and follow DeepSpeed's build_folding_spec wording (deepspeed/module_inject/auto_ep_folding.py) so a user can map
// an error straight back to the key to change, and every message lists the values that work.
#pragma once

#include "core/util/result.h"

namespace dsp {

/// Parallel sizes as read from a DeepSpeed config (or chosen on the command line).
struct ParallelSizes {
  int world = 1;  // all ranks
  int tp = 1;     // AutoTP size (tensor_parallel.autotp_size; 0/1 both mean off -> 1)
  int sp = 1;     // Ulysses/AutoSP sequence-parallel size
  int pp = 1;     // pipeline stages
  int ep = 1;     // AutoEP expert-parallel size
  int etp = 1;    // expert tensor-parallel size
  bool expert_parallel = false;     // AutoEP enabled: EP and EDP groups exist
  bool data_before_expert = false;  // use_data_before_expert_parallelism
};

/// Sizes that follow from ParallelSizes.
///   stage = world / pp                (ranks per pipeline stage)
///   dp    = world / (tp * sp * pp)    (dense data-parallel size)
///   edp   = stage / (ep * etp)        (AutoEP's expert-data-parallel size; ep and etp count as 1
///                                      when expert_parallel is false, so edp == stage then)
/// Note: DeepSpeed's Megatron-mpu expert path (D) ties expert TP to tp, so its EDP groups have
/// dp/ep ranks rather than `edp`; GroupTables always carries the real groups.
struct DerivedSizes {
  int stage;
  int dp;
  int edp;
};

/// Checks, in this order, that every size is positive (tp may be 0 = off), pp | world, tp | stage,
/// sp | stage/tp and, with expert_parallel, ep*etp | stage. The first failure is returned as an
/// Error naming the sizes and listing the valid values (the divisors).
Result<DerivedSizes> Derive(const ParallelSizes& sizes);

/// tensor_parallel.autotp_size as a group size: 0 and 1 both mean "off", i.e. groups of one rank.
inline int EffectiveTp(int autotp_size) { return autotp_size == 0 ? 1 : autotp_size; }

}  // namespace dsp
