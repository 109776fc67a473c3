// SPDX-License-Identifier: Apache-2.0
// How a parameter family is split across ranks before ZeRO, and the parameters one rank owns in
// its ZeRO partition. Shared by the memory model and the offload-time estimate.
#pragma once

#include "core/layout/parallel_sizes.h"
#include "core/model/model_spec.h"
#include "sim/cost/sim_input.h"

namespace dsp::sim {

// How the vocabulary layers split over TP (VocabSplit: sim_input.h); SimInput::vocab_split when set.
VocabSplit VocabSplitOf(const SimInput& input);

// What the attention family is divided by on the busiest tp rank: tp when the key-value heads
// split evenly, else N/N0. AutoTP gives tp rank r G//tp + (r < G%tp) key-value heads with their
// query groups (module_inject/tp_shard.py get_shard_size), so rank 0 holds N0 = ceil(G/tp)*N/G
// query heads and the same share of q/k/v/o. 0 outside DeepSpeed's AutoTP (Megatron needs even
// heads; tp 1 splits nothing).
double AttentionTpDivisor(const SimInput& input);

// Ranks that share one copy of `family` before ZeRO (TP split, EP placement); the attention
// family divides by `attention_divisor` when it is set (AttentionTpDivisor). `megatron_experts`:
// Megatron-Core's MoE layout (shared experts TP-split, routed ones over ep x etp), not AutoEP's.
double ShardDivisor(ParamFamily family, const ParallelSizes& s, VocabSplit vocab = VocabSplit::kNone,
                    double attention_divisor = 0, bool megatron_experts = false);
// The same with the plan, engine and model of `input`.
double ShardDivisorOf(ParamFamily family, const SimInput& input);

// Parameters in one rank's ZeRO partition for one pipeline stage's share of the model: dense
// families over the ZeRO partition group (dp, or dp x sp with Ulysses), routed experts over edp.
double PartitionedParamsPerRank(const SimInput& input);

}  // namespace dsp::sim
