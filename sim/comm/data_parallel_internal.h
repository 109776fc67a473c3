// SPDX-License-Identifier: Apache-2.0
// Shared by the data-parallel planner's two files: what one rank holds per reduction group, and
// ZeRO-3's view of a layer's modules.
#pragma once

#include "sim/comm/planner.h"

namespace dsp::sim::data_parallel {

/// Parameters (elements) one rank holds before ZeRO partitions them, per reduction group.
struct RankParams {
  double dense = 0;             // reduced over dp (or sp_dp): everything but AutoEP's routed experts
  double routed = 0;            // AutoEP routed experts, reduced over edp
  double tp_replicated = 0;     // replicated across TP under folding: router, norms, shared experts
  double zero3_persistent = 0;  // tensors below stage3_param_persistence_threshold: never gathered
  double embedding = 0;         // this rank's share of the (tied) embedding, for pipeline tying
  // Of `dense`: the decoder layers' linear weights (attention, MLP, shared experts, MLA and Gated
  // DeltaNet projections; their few norms and biases included), what FP8 all-gathers carry at 1 byte.
  double linear = 0;
};
RankParams CountRankParams(const SimInput& in);

/// Bytes per element of an all-gather of `elements` parameters of which `linear` are GEMM weights:
/// `bpe` (the 16-bit width), or with --fp8 --fp8-param-gather the linear weights at 1 byte
/// (Megatron-Core's --fp8-param-gather, torchao's enable_fsdp_float8_all_gather).
double ParamGatherBytesPerElement(const SimInput& in, double elements, double linear, double bpe);

/// ZeRO-3's view of one decoder layer of a kind (dense or MoE): the modules the data-parallel
/// group gathers, each by its own hook (a routed expert's weights too: transformers' Mixtral and
/// Qwen MoE blocks hold an nn.Linear per expert weight; AutoEP's routed experts aside, gathered
/// over edp), their elements, and the elements backward gathers again after a recomputed forward.
/// A model without a layer of the kind gives zeros.
struct Zero3Layer {
  double modules = 0;
  double elements = 0;
  double regathered_elements = 0;
};
Zero3Layer DescribeZero3Layer(const SimInput& in, bool moe);
/// ZeRO-3's gather calls in one pass over `dense_layers` dense and `moe_layers` MoE layers: each
/// layer's modules, at least one call a layer.
double Zero3LayerCalls(const SimInput& in, double dense_layers, double moe_layers);

/// FSDP2's parameter groups on one rank (sim/comm/fsdp2_comm.cc).
struct Fsdp2Groups {
  double layers = 0;    // transformer blocks on the stage: one group each
  double outside = 0;   // tok_embeddings and [norm, output] groups on the stage
  bool reshard_after_forward = false;
  // false under a pipeline (one reduce-scatter per call of the schedule) but for NeMo AutoModel's
  // MoE parallelizer, whose stage module is not an FSDPModule (fsdp2_comm.cc).
  bool sync_every_micro_batch = true;
  double dense = 0, routed = 0;        // elements per rank before sharding
  double linear = 0;                   // of dense: the decoder layers' GEMM weights
  double root = 0;      // elements of [norm, output], never resharded after forward
};
Fsdp2Groups DescribeFsdp2Groups(const SimInput& in, const RankParams& params);

/// ZeRO-1/2 parameter all-gathers after the step and ZeRO-3's per-module gathers.
void PlanZeroParameterGathers(const PlanContext& ctx, const RankParams& params, CollectivePlanner& plan);

}  // namespace dsp::sim::data_parallel
