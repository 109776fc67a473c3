// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/zero3_saved_weights.h"

namespace dsp::sim {

// ZeRO-3 releases a module's gathered parameters after its forward by pointing them at an empty
// tensor (DeepSpeed 0.19.x runtime/zero/partitioned_param_coordinator.py release_sub_module ->
// partition_parameters.py free_param: param.data = torch.empty(0)). That frees the gathered
// storage only when nothing else refers to it. A Parameter autograd saves whole is re-pointed with
// it; a view of it is not. DeepSpeed's guard is for F.linear, which zero.Init patches to
// LinearFunctionForZeroStage3 (runtime/zero/linear.py), saving the Parameter itself; models built
// under zero.Init (as transformers builds them for ZeRO-3) are assumed. The fused experts reach
// their weights through a transposed view instead: transformers 5's default grouped_mm
// implementation (integrations/moe.py grouped_mm_experts_forward passes
// gate_up_proj.transpose(-2, -1) and down_proj.transpose(-2, -1) to torch._grouped_mm) and AutoEP's
// GroupedExperts (moe/ep_experts.py, w1/w2/w3 .transpose(-2, -1)). torch._grouped_mm saves that
// view for the input's gradient, so each MoE layer's gathered experts stay allocated until that
// layer's backward: at the turn from forward to backward, every MoE layer's. The backward gathers
// them again regardless (the pre-backward hook), so the copy kept is pure overhead.
//
// Where it does not apply: activation checkpointing of whole layers (the checkpointed forward
// saves nothing; the recomputation's views live only through that layer's backward, when the
// experts are gathered anyway), DeepCompile (its graph gathers and releases the parameters
// itself), experts whose 3D weights grouped_mm takes whole (experts_are_transposed: gpt-oss's and
// Llama 4's [E, H, 2I] layout; their eager loop, not the default, would index views too), and
// every stage below 3, which never frees a parameter.
double Zero3SavedExpertWeightBytes(const SimInput& in, double routed_params) {
  if (!in.engine.framework().zero3_release_keeps_viewed_experts || in.zero.stage != 3 || in.zero.deepcompile) {
    return 0;
  }
  if (in.workload.recompute == Recompute::kFull || in.model == nullptr || routed_params <= 0) return 0;
  if (in.model->family == ModelFamily::kGptOss || in.model->family == ModelFamily::kLlama4) return 0;
  return routed_params * in.workload.bytes_per_param;
}

void AddZero3SavedWeights(const SimInput& in, double routed_params, bool last_stage, MemoryReport& r) {
  r.zero3_saved_weights_bytes = Zero3SavedExpertWeightBytes(in, routed_params);
  r.activations_bytes += r.zero3_saved_weights_bytes;
  if (last_stage) r.loss_activations_bytes += r.zero3_saved_weights_bytes;
}

}  // namespace dsp::sim
