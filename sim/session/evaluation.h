// SPDX-License-Identifier: Apache-2.0
// One evaluation of a plan: a DeepSpeed config (its text, so diagnostics carry line:column), the
// model, the cluster and the knobs that live outside the config (world, pipeline stages, sequence
// length, recompute, engine) -> validate's findings, the layout, the exact group tables, memory per
// rank and step time. simulate, plan, check, visualize schedule and explore all evaluate through
// here, so they can never disagree about a plan.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/json/document.h"
#include "core/model/model_spec.h"
#include "core/plan/plan.h"
#include "core/validate/validator.h"
#include "sim/cost/cluster.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/sim_input.h"
#include "sim/cost/step_time.h"
#include "sim/cost/workload.h"

namespace dsp::sim {

// What a plan needs beyond DeepSpeed's config (the command line's flags).
struct PlanKnobs {
  int64_t world_size = 0;     // 0: nodes x gpus_per_node, else one node of the cluster
  int64_t nodes = 0;          // 0: not given
  int64_t gpus_per_node = 0;  // 0: the cluster's
  int64_t pp = 1;             // pipeline stages (PipelineModule; not in the config)
  int64_t seq_len = 0;        // 0: 4096, or the model's max_position_embeddings when smaller
  Recompute recompute = Recompute::kNone;
  MemoryConvention convention = MemoryConvention::kZeroPaper;
  EngineSettings engine;
  int64_t megatron_tp = 0;    // Megatron's tensor-model-parallel size (megatron engines, fsdp2)
  int64_t cp = 0;             // --cp: context-parallel size (0: none, or the config's Ulysses)
  int64_t ep = 0;             // --ep: expert-parallel size (0: the config's AutoEP, if any)
  int64_t etp = 0;            // --etp: expert-tensor-parallel size (0: the engine's default)
  std::string attn_implementation;  // --attn-impl; empty: the model config's

  bool operator==(const PlanKnobs& other) const;
};

inline constexpr int64_t kDefaultSeqLen = 4096;
// The inverse of RecomputeName (sim/cost/workload.h).
std::optional<Recompute> ParseRecompute(std::string_view name);

struct ResolvedWorld {
  int64_t world_size = 0;
  int64_t gpus_per_node = 0;
  bool world_given = false;  // false: one node of the cluster was assumed
};
// --world-size / --nodes / --gpus-per-node with the cluster's node size as the default; a
// contradiction (world 8 with 2 nodes of 8) or a pp that does not divide the world is an error.
Result<ResolvedWorld> ResolveWorld(const PlanKnobs& knobs, const Cluster& cluster);

struct Evaluation {
  enum class Outcome {
    kNumbers,       // valid config, a plan, memory and step time
    kConfigErrors,  // validate found errors: report.diagnostics say which
    kNoPlan,        // the config passes but no plan can be built (message)
    kBadBatch,      // the config's batch cannot be simulated ("auto", beyond the model's range)
    kBadKnobs,      // the knobs (world, engine) contradict each other, or the figures overflow
  };
  Outcome outcome = Outcome::kBadKnobs;
  std::string message;           // every outcome but kNumbers and kConfigErrors: why
  FileReport report;             // validate's findings (always present)
  std::vector<std::string> notes;  // assumptions the numbers rest on
  Json config;                   // as validated, overrides applied
  int64_t world_size = 0;
  int64_t gpus_per_node = 0;
  int64_t micro_batch = 0;
  int64_t grad_accum = 0;
  Cluster cluster;               // the given cluster with the world's node size
  Plan plan;
  SimInput input;                // points into this object and the model: an Evaluation never moves
  MemoryReport memory;
  // With pipeline stages: every stage's peak memory per rank, stage 0 first (ranks of different
  // stages differ); empty without a pipeline.
  std::vector<double> stage_peak_bytes;
  TimeReport time;

  bool has_numbers() const { return outcome == Outcome::kNumbers; }
  int64_t samples_per_step() const { return micro_batch * grad_accum * plan.derived.dp; }
  Evaluation() = default;
  Evaluation(const Evaluation&) = delete;
  Evaluation& operator=(const Evaluation&) = delete;
};

// Validates `config_text` (named `config_path` in diagnostics) with `overrides` applied, then plans
// and estimates. `model` must outlive the result.
std::unique_ptr<Evaluation> Evaluate(const ModelSpec& model, const Cluster& cluster,
                                     const std::string& config_path, std::string config_text,
                                     const std::vector<Override>& overrides, const PlanKnobs& knobs);

}  // namespace dsp::sim
