// Memory per rank: model states by parameter family under ZeRO 0-3 and offload, activations per
// layer (Korthikanti et al. with TP, sequence parallelism, selective/full recompute; Ulysses
// dividing the sequence; MoE routing with top-k), communication buffers, and the peak.
#pragma once

#include <map>

#include "core/model/model_spec.h"
#include "sim/sim_input.h"

namespace dsp::sim {

struct FamilyMemory {
  double parameters_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_states_bytes = 0;
};

struct MemoryReport {
  double parameters_bytes = 0;        // on the GPU, per rank
  double gradients_bytes = 0;
  double optimizer_states_bytes = 0;
  double activations_bytes = 0;       // saved for backward at the peak (all layers, one micro-batch)
  double buffers_bytes = 0;           // ZeRO buckets, gathered ZeRO-3 params, all-to-all buffers
  double peak_bytes = 0;
  double hbm_bytes = 0;               // the GPU's memory
  bool fits = false;
  double cpu_bytes = 0;               // moved to host memory by offload
  std::map<ParamFamily, FamilyMemory> by_family;
};

MemoryReport EstimateMemory(const SimInput& input);

}  // namespace dsp::sim
