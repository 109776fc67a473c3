// SPDX-License-Identifier: Apache-2.0
// Which passes a DeepSpeed config implies, with their options: the one place that turns the
// config's parallel sections (expert_parallel, tensor_parallel, sequence_parallel_size,
// zero_optimization) and compile.passes into a Pipeline. visualize graph uses it; the schedule
// simulation will too, so both always see the same rewritten graph.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json/document.h"
#include "core/model/model_spec.h"
#include "core/plan/plan.h"
#include "core/util/result.h"
#include "sim/passes/deepcompile_z3.h"
#include "sim/passes/pipeline.h"

namespace dsp::sim::passes {

struct PipelineRequest {
  const ModelSpec* model = nullptr;  // required
  const Json* config = nullptr;      // required, a config validate accepted
  // Group sizes from the plan's tables when the world size is known; without it every group is
  // assumed to have peers (shapes stay symbolic either way).
  const Plan* plan = nullptr;
  // --passes: exactly these (registered names), run in the registry's order; nullopt = chosen
  // from the config.
  std::optional<std::vector<std::string>> forced = {};
  std::optional<int64_t> seq_len = {};
  // DeepCompile ZeRO-3 after WARMUP: with a budget (memory and the comm predictor, from a
  // cluster) the selective_gather and prefetch passes run; without one the picture is step 0.
  const DeepCompileBudget* deepcompile_budget = nullptr;
};

// Chosen from the config: autoep when expert_parallel.enabled; autotp when autotp_size > 1 or
// compile.passes lists "autotp"; autosp when the sequence-parallel size is > 1 or compile.passes
// lists "autosp"; zero when zero_optimization.stage >= 1 or compile.passes lists "z1"/"z3";
// selective_gather and prefetch under DeepCompile's ZeRO-3 when a budget is given and no
// compile.offload_* option replaces them (compile/init_z3.py's default schedule).
// Errors: an unknown name in `forced` (the message lists the registered passes).
Result<Pipeline> PipelineForConfig(const PipelineRequest& request);

// "autotp,zero" -> {"autotp", "zero"}; an error for an empty list or an unknown name.
Result<std::vector<std::string>> ParsePassList(std::string_view text);

}  // namespace dsp::sim::passes
