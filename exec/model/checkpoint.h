// SPDX-License-Identifier: Apache-2.0
// Activation checkpointing of one decoder layer, as DeepSpeed's reentrant CheckpointFunction runs
// it (DeepSpeed 0.19.6 runtime/activation_checkpointing/checkpointing.py): the forward keeps only
// the layer's input, backward runs the layer's forward again -- its collectives included -- with
// autograd on and back-propagates through that. With cpu_checkpointing the kept input lives in a
// separate host copy between forward and backward and is copied back before the recomputation.
#pragma once

#include <functional>

#include <ATen/ATen.h>

namespace dsp::exec {

using LayerFn = std::function<at::Tensor(const at::Tensor& x)>;

struct CheckpointCounters {
  int recomputed = 0;   // layers run again in backward
  int offloaded = 0;    // inputs kept in a host copy (cpu_checkpointing)
};

// `fn` (and `counters`, when set) must live until backward has run.
at::Tensor CheckpointLayer(const at::Tensor& x, const LayerFn* fn, bool cpu_checkpointing,
                           CheckpointCounters* counters);

}  // namespace dsp::exec
