// SPDX-License-Identifier: Apache-2.0
// How a parameter family is split across ranks before ZeRO, and the parameters one rank owns in
// its ZeRO partition. Shared by the memory model and the offload-time estimate.
#pragma once

#include "core/layout/parallel_sizes.h"
#include "core/model/model_spec.h"
#include "sim/sim_input.h"

namespace dsp::sim {

// Ranks that share one copy of `family` before ZeRO (TP split, EP placement).
// `vocab_parallel`: Megatron's VocabParallelEmbedding and parallel lm_head split the vocabulary
// over TP (the megatron engines).
int ShardDivisor(ParamFamily family, const ParallelSizes& s, bool vocab_parallel = false);

// Parameters in one rank's ZeRO partition for one pipeline stage's share of the model: dense
// families over the ZeRO partition group (dp, or dp x sp with Ulysses), routed experts over edp.
double PartitionedParamsPerRank(const SimInput& input);

}  // namespace dsp::sim
