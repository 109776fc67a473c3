// SPDX-License-Identifier: Apache-2.0
// AutoTP as a compiler pass (deepspeed/compile/passes/tp_compile.py): column-parallel linears
// split their output features over the tp group and row-parallel linears their input features,
// with Megatron's f (`copy_to_tp`: identity forward, all-reduce backward) before each shared
// input of column linears and g (`reduce_from_tp`: all-reduce forward) after each row linear.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/model_spec.h"
#include "sim/passes/pass.h"

namespace dsp::sim::passes {

enum class TpPartition { kColumn, kRow, kSkip };

// One entry of tensor_parallel.partition_config.layer_specs.
struct TpLayerSpec {
  TpPartition partition = TpPartition::kColumn;
  // Python `re` patterns, matched with re.match semantics against the parameter name
  // ("model.layers.0.self_attn.q_proj.weight").
  std::vector<std::string> patterns;
  // Lower-cased model types the spec applies to; nullopt = every model.
  std::optional<std::vector<std::string>> model_types;
  // Column specs: the output is all-gathered over tp (LinearLayer(gather_output=True)), so the
  // layer's readers see whole features and no row partner is needed.
  bool gather_output = false;
  // Skip specs: the parameter stays whole but its gradient is summed over tp by a hook
  // (auto_tp.py register_replicated_grad_hooks; transformers' replicated_with_grad_allreduce,
  // Qwen3's q_norm/k_norm, which normalize the rank's own heads).
  bool grad_allreduce = false;
};

struct AutoTpOptions {
  int64_t tp_size = 1;         // tensor_parallel.autotp_size; 0 and 1 mean off
  std::string symbol = "T";    // the symbol shapes are divided by: "N*D/T"
  std::string model_type;      // for the model_types filter and the default plan
  // N and G as integers. When G does not divide over tp the graph shows tp rank 0, the busiest
  // (get_shard_size): N0 and G0 heads, bound by BindTensorParallelHeads.
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  // The DeepCompile autotp pass (compile.passes lists "autotp" with compile.deepcompile) rather
  // than eager AutoTP: it refuses LmHeadLinearAllreduce and tp_overlap_comm (tp_compile.py).
  bool compiled = false;
  bool tp_overlap_comm = false;
  // partition_config.layer_specs, in DeepSpeed's matching order (first match wins), or the
  // converted transformers tp_plan (ForModelPlan). When empty, the leaf names DeepSpeed's heuristic
  // AutoTP.tp_parser shards (q/k/v/gate/up and w1/w3 column, o/down and w2 row), for model types
  // transformers gives no plan.
  std::vector<TpLayerSpec> layer_specs;
  // Non-empty: DeepSpeed refuses this model's plan (TPPlanConverter's ValueError) and the pass
  // fails with this message.
  std::string refusal;
  // partition_config.use_default_specs: append the preset's specs (tensor_parallel.preset_model,
  // lower-cased) after layer_specs.
  bool use_default_specs = false;
  std::string preset;

  static AutoTpOptions ForModel(const ModelSpec& spec, int64_t tp_size);
  // With neither preset_model nor partition_config: the model's transformers tp_plan as DeepSpeed
  // 0.19.6 converts it (layer_specs, minus the lm_head / embed_out entries: the head's gathered
  // logits are not drawn), or its refusal; nothing when the type has no plan.
  void UseTransformersPlan(const ModelSpec& spec);
};

// Classifies every linear (and every MoE `experts` node, as a column+row pair of its own), then
// rewrites: shapes sharded (column output dim /T, heads and MLP widths /T between a column and its
// row partner), ONE copy_to_tp per input activation shared by column linears and one
// reduce_from_tp after each row linear and experts node, all in group "tp". A row-parallel
// lm_head is LmHeadLinearAllreduce: a local H/T slice of its input, then reduce_from_tp. A
// parameter a grad_allreduce skip spec claims gets tp_grad_allreduce_<param>, an all_reduce of
// its gradient over tp (a gradient reduction, after its first reader).
// Errors (graph untouched) are DeepSpeed's own: a refused transformers plan, gpt2, and under
// the compile pass LmHeadLinearAllreduce or tp_overlap_comm. Pairing mismatches DeepSpeed does
// not check (a column output read by something other than a row linear, ...) are drawn as built
// and listed in notes().
class AutoTpPass : public Pass {
 public:
  explicit AutoTpPass(AutoTpOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "autotp"; }
  std::string_view description() const override;
  Result<bool> Run(graph::Graph& graph) override;
  std::vector<std::string> notes() const override { return notes_; }

 private:
  AutoTpOptions options_;
  std::vector<std::string> notes_;
};

}  // namespace dsp::sim::passes
