// SPDX-License-Identifier: Apache-2.0
// The loss's logits-sized tensors as the frameworks allocate and free them (and, before them, the
// layers' full-sequence TP partial sums torchtitan frees within each layer), replayed through the
// caching allocator (sim/cost/caching_allocator.h): the cached blocks too small for the loss's
// requests are reserved beyond the allocated peak (docs/cost-model.md, "Reserved beyond
// allocated").
#pragma once

#include <cstdint>
#include <vector>

#include "sim/cost/activation_memory.h"
#include "sim/cost/caching_allocator.h"

namespace dsp::sim {

/// One rank's logits of one micro-batch: its tokens times the vocabulary, split over TP where the
/// lm_head is vocab-parallel (Megatron, torchtitan's loss_parallel).
double LocalLogits(const LayerShape& shape, int64_t vocab_size);

/// The logits-sized tensors of lm_head's output, the loss's forward and its backward, in order, for
/// `logits` logits (OutputLayerActivationBytes prices the same tensors at their peak), after the
/// last layer's TP partial sums (shape.tp_partial_blocks) and lm_head's gathered input
/// (shape.lm_head_input_gathered). Empty where no logits are whole (Liger's fused loss) or the loss
/// is Megatron's fused kernel (not replayed).
std::vector<AllocatorEvent> LossPhaseEvents(const LayerShape& shape, double logits);

/// What the caching allocator holds beyond the loss's allocated peak at that peak, in steady state
/// (the second of two replayed steps).
double LossPhaseCachedBytes(const LayerShape& shape, int64_t vocab_size, bool expandable_segments);

}  // namespace dsp::sim
