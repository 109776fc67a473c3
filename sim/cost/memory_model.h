// SPDX-License-Identifier: Apache-2.0
// Memory per rank: model states by parameter family under ZeRO 0-3 and offload, activations per
// layer (Korthikanti et al. with TP, sequence parallelism, selective/full recompute; Ulysses
// dividing the sequence; MoE routing with top-k), communication buffers, and the peak.
#pragma once

#include <map>
#include <vector>

#include "core/model/model_spec.h"
#include "sim/cost/sim_input.h"

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
  double activations_bytes = 0;       // saved for backward at the peak (the stage's layers, every
                                      // micro-batch in flight, plus the recompute working set)
  double buffers_bytes = 0;           // ZeRO buckets, gathered ZeRO-3 params, all-to-all buffers
  double peak_bytes = 0;
  // What the caching allocator holds at the step's peak: peak_bytes, or at the loss's own peak the
  // loss's tensors and the cached blocks too small for them (loss_cached_bytes). torchtitan's
  // memory monitor and torch.cuda.max_memory_reserved report this (sim/cost/caching_allocator.h).
  double reserved_peak_bytes = 0;
  double allowance_bytes = 0;         // the cluster's fragmentation and reserved allowances
  double hbm_bytes = 0;               // the GPU's memory (fits: peak + allowance <= hbm)
  bool fits = false;
  double cpu_bytes = 0;               // moved to host memory by offload (states and checkpoints)
  // DeepCompile's offload_opt_states: the optimizer states its memory budget sends to the host for
  // forward and backward (what does not fit beside the rest), copied out and back every step.
  double offloaded_optimizer_states_bytes = 0;
  double host_activations_bytes = 0;  // cpu_checkpointing: checkpointed layer inputs on the host
  // The node's host memory the ranks on it need (cpu_bytes x ranks per node) and the cluster's
  // host_memory_bytes (0: not given, not checked); fits needs host_fits too.
  double node_host_bytes = 0;
  double host_memory_bytes = 0;
  bool host_fits = true;
  // The optimizer step's own peak (activations freed): model states, buffers and the gradients
  // the step casts to fp32 (stage_1_and_2.py step: the whole partition; stage3.py: one
  // sub_group_size group, flattened and cast). peak_bytes is the larger of it and backward's.
  double optimizer_step_transient_bytes = 0;
  double optimizer_step_peak_bytes = 0;
  double hpz_secondary_bytes = 0;     // hpZ: the secondary 16-bit partition (in parameters_bytes)
  std::map<ParamFamily, FamilyMemory> by_family;  // every family present, 0 where the model has none

  // Breakdown of the figures above.
  int pipeline_stage = 0;             // the stage reported: the one with the highest peak
  int64_t in_flight_micro_batches = 1;        // 1F1B: min(pp - stage, micro-batches of a call)
  std::vector<double> layer_activations_bytes;  // the stage's layers, one micro-batch each
  double output_activations_bytes = 0;          // final norm, lm_head and loss (last stage)
  // torch.distributed.pipelining keeps each in-flight micro-batch's stage output until its
  // backward (stage.py fwd_cache): one activation per chunk micro-batch (fsdp2 pipelines).
  double stage_output_bytes = 0;
  double pipeline_recv_bytes = 0;               // torch pipelining's receive buffers (in buffers_bytes)
  double recompute_working_bytes = 0;           // full recompute: one layer rematerialised
  double loss_activations_bytes = 0;            // activations at the loss's peak (last stage)
  double loss_peak_bytes = 0;                   // everything allocated at the loss's peak
  double loss_cached_bytes = 0;                 // cached beside it, too small for its requests
  double zero_buffers_bytes = 0;                // reduce buckets, ZeRO-3 gathered parameters
  double all_to_all_bytes = 0;                  // Ulysses and EP all-to-all send/receive buffers
  double fp8_weight_bytes = 0;                  // TransformerEngine's cached fp8 weights (--fp8)
  // DeepSpeed ZeRO-3: gathered expert weights autograd keeps until their layer's backward
  // (zero3_saved_weights.h); included in activations_bytes.
  double zero3_saved_weights_bytes = 0;
  int64_t zero_group_size = 1;                  // ZeRO partition group of dense parameters
  int64_t expert_zero_group_size = 1;           // ... and of routed experts
};

// Memory of the most loaded pipeline stage (first or last) of one rank. Needs input.plan and
// input.model; fits is false without input.cluster.
MemoryReport EstimateMemory(const SimInput& input);

// Memory of one pipeline stage (0 .. pp-1) of one rank: the ranks of different stages hold
// different layers, in-flight micro-batches and (the last) the lm_head. EstimateMemory reports the
// larger of the first and the last.
MemoryReport EstimateStageMemory(const SimInput& input, int stage);

}  // namespace dsp::sim
