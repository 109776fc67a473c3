// SPDX-License-Identifier: Apache-2.0
// AutoEP (deepspeed/module_inject/auto_ep_layer.py, moe/ep_tp_dispatch.py): every MoE block
// keeps E/EP routed experts per rank and trades tokens for experts with all-to-alls over the ep
// group. DeepSpeed does this by module injection at engine start rather than as a compile pass;
// here it is a pass so the graph shows it next to the AutoTP and AutoSP rewrites.
#pragma once

#include <cstdint>
#include <string>

#include "core/model/model_spec.h"
#include "core/rules/autoep_detection.h"
#include "sim/passes/pass.h"

namespace dsp::sim::passes {

struct AutoEpOptions {
  int64_t ep_size = 1;         // expert_parallel.autoep_size; 1 = experts stay local
  // tensor_parallel.autotp_size: above 1 the EP groups fold onto the TP lanes (DeepSpeed PR
  // #8064): route-full, partition-dispatch and the restore all-gather.
  int64_t tp_size = 1;
  std::string symbol = "EP";   // the symbol the expert dimension is divided by: E/EP
  std::string tp_symbol = "T";
  int64_t num_experts = 0;     // E as an integer: experts must split evenly over ep
  // What AutoEP's detection finds (core/rules/autoep_detection.h, validate's verdict too):
  // kNotFound (gpt_oss's `mlp.router`, llama4's `feed_forward`, Qwen3-VL-MoE's
  // model.language_model. blocks, without the user's patterns): DeepSpeed logs "AutoEP: no MoE
  // layers detected" and trains without expert parallelism, so the pass changes nothing;
  // kAmbiguous (GLM-4.5, Qwen3-Next without preset_model) and kPresetMatchesNone: DeepSpeed
  // raises, so does the pass.
  autoep::Detection detection = autoep::Detection::kFound;

  // The options for `spec` with the detection keys of `expert_parallel` (null: none given).
  static AutoEpOptions ForModel(const ModelSpec& spec, int64_t ep_size, int64_t tp_size,
                                const autoep::DetectionKeys& keys = {});
};

// For every `experts` node (one MoE block; its module's parent is the block, e.g.
// model.layers.3.mlp):
//   router and top_k stay replicated ("route-full": with folding every TP peer routes the same
//   tokens);
//   `dispatch(x, top_k)` (group "ep"), the all-to-all that sends each token to the ranks owning
//   its K experts: [B, S, H] -> [E/EP, B*S*K*EP/E, H], E/EP local experts with their expected
//   (uniform-routing) rows; with folding each TP peer dispatches 1/T of the assignments
//   ("partition-dispatch"): [E/EP, B*S*K*EP/E/T, H];
//   `experts(dispatch)` on the local experts, whose param_shape becomes [E/EP, 3, FE, H];
//   `combine(experts, top_k)` (group "ep"), the reverse all-to-all and the weighted sum:
//   [B, S, H]; with folding the combined rows of this TP peer, [B*S*K/T, H], followed by the
//   restore `all_gather` (group "tp") back to the replicated [B, S, H].
// Names: <block>_dispatch, <block>_combine, <block>_restore (layers_3_mlp_dispatch, ...).
// Nothing to do when ep_size is 1 and there is no folding. Errors, graph untouched: no experts
// node; E not divisible by ep_size or ep_size > E; folding (tp > 1) with ep_size 1; sizes < 1.
class AutoEpPass : public Pass {
 public:
  explicit AutoEpPass(AutoEpOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "autoep"; }
  std::string_view description() const override;
  Result<bool> Run(graph::Graph& graph) override;

 private:
  AutoEpOptions options_;
};

}  // namespace dsp::sim::passes
