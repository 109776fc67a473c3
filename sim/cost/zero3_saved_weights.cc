// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/zero3_saved_weights.h"

namespace dsp::sim {

// ZeRO-3 releases a module's gathered parameters after its forward by pointing them at an empty
// tensor (DeepSpeed 0.19.x runtime/zero/partitioned_param_coordinator.py release_sub_module ->
// partition_parameters.py free_param: param.data = torch.empty(0)). That frees the gathered
// storage only when nothing else refers to it. Autograd's saved tensors do: DeepSpeed's own answer
// is LinearFunctionForZeroStage3, which F.linear is patched to under zero.Init so that it saves
// the Parameter itself (runtime/zero/linear.py, whose header says why), and it covers F.linear
// only. transformers 5's fused experts reach their weights through a view:
// integrations/moe.py grouped_mm_experts_forward passes gate_up_proj.transpose(-2, -1) and
// down_proj.transpose(-2, -1) to torch._grouped_mm, which saves that view for the input's
// gradient; the eager loop indexes gate_up_proj[expert] into F.linear, which saves the view too.
// A view shares the gathered storage, so each MoE layer's gathered experts stay allocated until
// that layer's backward: at the turn from forward to backward, every MoE layer's. The backward
// gathers them again regardless (the pre-backward hook), so the copy kept is pure overhead.
//
// Where it does not apply: activation checkpointing of whole layers (the checkpointed forward
// saves nothing; the recomputation's views live only through that layer's backward, when the
// experts are gathered anyway), DeepCompile (its graph gathers and releases the parameters
// itself: compile/passes/zero3_compile.py), experts whose 3D weights the grouped matmul takes
// as they are (experts_are_transposed: gpt-oss's and Llama 4's [E, H, 2I] layout), and every
// stage below 3, which never frees a parameter.
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
