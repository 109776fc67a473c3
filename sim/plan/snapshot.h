// SPDX-License-Identifier: Apache-2.0
// The plan snapshot `ds-plan plan` writes and `ds-plan check` compares
// (schemas/plan.schema.json): the inputs it was computed from, so it can be recomputed, and what
// the plan implies (layout, group tables, memory, step time, collective volumes). The bytes depend
// only on the inputs: no timestamps, no host names, keys sorted. Format: docs/plan.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json/document.h"
#include "core/plan/plan.h"
#include "core/util/result.h"
#include "core/validate/layout_summary.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/step_time.h"

namespace dsp::sim {

inline constexpr int kPlanSchemaVersion = 1;

struct SnapshotFile {
  std::string path;    // as given on the command line (check resolves it against its own cwd)
  std::string sha256;  // of the file's bytes
};

/// What `plan` was run with: enough to run it again.
struct PlanSnapshotInputs {
  SnapshotFile config, model, cluster;
  Json config_content;  // the config as parsed (before --set), to show which keys changed
  std::optional<int64_t> world_size, nodes, gpus_per_node;  // the flags as given (absent = not given)
  int64_t pp = 1;
  std::optional<int64_t> seq_len;  // absent = the default
  std::string recompute = "none";
  std::string convention = "zero-paper";
  std::vector<std::string> sets;  // --set KEY=VALUE, in command-line order
  // Every other flag that moves a number, as simulated (after the config's _ds_plan note). Absent
  // from snapshots written before they were recorded: the defaults below, what those ran with.
  std::string engine = "deepspeed";
  int64_t megatron_tp = 0;         // --tp (0: not given)
  bool megatron_sp = false;
  int64_t virtual_stages = 1;
  int64_t pp_schedule_micro_batches = 0;  // --pp-schedule-micro-batches (0: not given)
  int64_t cp = 0;                  // --cp (0: not given)
  int64_t ep = 0;                  // --ep (0: not given)
  bool fp8 = false;                // --fp8
  bool tp_comm_overlap = false;    // --tp-comm-overlap
  bool fused_loss = false;         // --fused-loss
  bool tiled_mlp = false;          // --tiled-mlp
  bool expandable_segments = false;  // --expandable-segments
  int64_t etp = 0;                 // --etp (0: not given)
  std::string moe_token_dispatcher = "alltoall";  // --moe-token-dispatcher
  bool moe_grouped_gemm = false;   // --moe-grouped-gemm
  bool fp8_param_gather = false;   // --fp8-param-gather
  bool bf16_grad_buffer = false;   // --bf16-grad-buffer
  bool bf16_optimizer_states = false;  // --bf16-optimizer-states
  bool bf16_params = false;        // --bf16-params
  bool bf16_loss = false;          // --bf16-loss
  bool te_modules = false;         // --te-modules
  bool automodel_experts = false;  // --automodel-experts
  bool fake_balanced_gate = false;  // --fake-balanced-gate
  bool torch_compile = false;  // --torch-compile
  bool eager_loss = false;     // --eager-loss
  std::string cp_comm_type;        // --cp-comm-type ("": not given)
  std::string attention = "flash";
  std::string attn_impl;           // --attn-impl ("" : the model config's)
  std::string deepspeed_version;   // --deepspeed-version ("" : the newest)
  std::string ds_plan_version;
};

/// What the inputs imply.
struct PlanSnapshot {
  PlanSnapshotInputs inputs;
  const Plan* plan = nullptr;  // group tables
  LayoutSummary layout;        // as validate reports it
  int64_t world_size = 0;      // resolved (the cluster's node when no world flag was given)
  int64_t gpus_per_node = 0;
  int64_t seq_len = 0;
  int64_t micro_batch = 0;
  int64_t grad_accum = 0;
  int64_t samples_per_step = 0;
  MemoryReport memory;
  TimeReport time;
  // How close validation came for this engine on this GPU (AccuracyToJson); informative, never
  // compared by check. Null: not written.
  Json accuracy;
};

Json PlanSnapshotToJson(const PlanSnapshot& snapshot);

/// The file's text: two-space indented JSON with every array of numbers on one line, so a group
/// is one line of the committed snapshot and its diff in review reads like the groups table.
std::string RenderPlanSnapshot(const Json& snapshot);

/// Reads the "inputs" object back. Errors name the missing or mistyped field.
Result<PlanSnapshotInputs> ReadSnapshotInputs(const Json& snapshot);

}  // namespace dsp::sim
