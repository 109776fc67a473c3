// SPDX-License-Identifier: Apache-2.0
// The inputs simulate, visualize schedule and plan share: the same flags, the same validation
// (a config DeepSpeed would reject has no step time), the same plan, batch and SimInput, so the
// three commands can never disagree about what they simulate.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/ds-plan/world_options.h"
#include "core/json/document.h"
#include "core/model/model_spec.h"
#include "core/plan/plan.h"
#include "core/validate/validator.h"
#include "sim/session/evaluation.h"

namespace dsp::app {

struct SimArgs {
  std::string config;
  std::string model_path;
  std::string cluster_path;
  WorldOptions world;
  int64_t seq_len = 0;  // 0 = default
  std::string recompute = "none";
  std::string convention = "zero-paper";
  std::vector<std::string> sets;
  std::string engine = "deepspeed";
  int64_t megatron_tp = 0;       // --tp: Megatron's tensor-model-parallel size
  bool megatron_sp = false;
  int virtual_stages = 1;
  int64_t pp_schedule_micro_batches = 0;  // --pp-schedule-micro-batches (fsdp2); 0: the whole step in one call
  int64_t cp = 0;     // --cp: context-parallel size (megatron-lm, fsdp2)
  int64_t ep = 0;     // --ep: expert-parallel size (megatron-lm, fsdp2)
  bool fp8 = false;   // --fp8: FP8 linear layers (megatron-lm, fsdp2)
  bool tp_comm_overlap = false;  // --tp-comm-overlap (megatron-lm userbuffers, fsdp2 async TP)
  std::string cp_comm_type;      // --cp-comm-type (megatron-lm); empty: p2p
  int64_t etp = 0;               // --etp: expert-tensor-parallel size (megatron-lm); 0: --tp
  std::string moe_token_dispatcher = "alltoall";  // --moe-token-dispatcher (megatron-lm)
  bool moe_grouped_gemm = false;  // --moe-grouped-gemm (megatron-lm)
  bool fp8_param_gather = false;  // --fp8-param-gather (megatron-lm, fsdp2; needs --fp8)
  bool bf16_grad_buffer = false;  // --bf16-grad-buffer (megatron-lm)
  bool bf16_optimizer_states = false;  // --bf16-optimizer-states (megatron-lm; fsdp2 with --bf16-params)
  bool bf16_params = false;       // --bf16-params (fsdp2)
  bool bf16_loss = false;         // --bf16-loss (deepspeed, fsdp2)
  bool te_modules = false;        // --te-modules (fsdp2)
  bool automodel_experts = false;  // --automodel-experts (fsdp2)
  bool fake_balanced_gate = false;  // --fake-balanced-gate (fsdp2)
  bool torch_compile = false;  // --torch-compile (fsdp2)
  bool eager_loss = false;     // --eager-loss (fsdp2 with --torch-compile)
  std::string attention = "flash";
  bool fused_loss = false;        // --fused-loss
  bool tiled_mlp = false;         // --tiled-mlp
  bool expandable_segments = false;  // --expandable-segments
  std::string deepspeed_version;  // empty = the newest
  std::string attn_impl;          // --attn-impl; empty = the model config's _attn_implementation

  // Set by AddTo: which of the plan's out-of-config flags the command line gave. Those it did not
  // give come from the config's "_ds_plan" note (tune writes it) when present. check's replay
  // sets flags_are_explicit: the recompute and pp a snapshot recorded are the ones simulated.
  CLI::Option* recompute_option = nullptr;
  CLI::Option* engine_option = nullptr;
  CLI::Option* tp_option = nullptr;
  CLI::Option* megatron_sp_option = nullptr;
  CLI::Option* virtual_stages_option = nullptr;
  CLI::Option* pp_schedule_micro_batches_option = nullptr;
  CLI::Option* cp_option = nullptr;
  CLI::Option* ep_option = nullptr;
  CLI::Option* fp8_option = nullptr;
  CLI::Option* tp_comm_overlap_option = nullptr;
  CLI::Option* etp_option = nullptr;
  CLI::Option* moe_token_dispatcher_option = nullptr;
  CLI::Option* moe_grouped_gemm_option = nullptr;
  CLI::Option* fp8_param_gather_option = nullptr;
  CLI::Option* bf16_grad_buffer_option = nullptr;
  CLI::Option* bf16_optimizer_states_option = nullptr;
  CLI::Option* bf16_params_option = nullptr;
  CLI::Option* bf16_loss_option = nullptr;
  CLI::Option* te_modules_option = nullptr;
  CLI::Option* automodel_experts_option = nullptr;
  CLI::Option* fake_balanced_gate_option = nullptr;
  CLI::Option* torch_compile_option = nullptr;
  CLI::Option* eager_loss_option = nullptr;
  CLI::Option* attention_option = nullptr;
  CLI::Option* fused_loss_option = nullptr;
  CLI::Option* tiled_mlp_option = nullptr;
  CLI::Option* expandable_segments_option = nullptr;
  bool flags_are_explicit = false;

  // CONFIG, --model, --cluster, the world flags, --seq-len, --recompute, --convention, --set,
  // --engine, --tp, --megatron-sp, --virtual-stages, --pp-schedule-micro-batches, --cp, --ep, --etp, --moe-token-dispatcher,
  // --moe-grouped-gemm, --fp8, --fp8-param-gather, --tp-comm-overlap, --cp-comm-type, --attention,
  // --attn-impl, --deepspeed-version.
  void AddTo(CLI::App* app);
  // The same flags without CONFIG, --model and --cluster (the world flags onwards), for a command
  // that names those itself (calibrate --trace).
  void AddPlanFlags(CLI::App* app);
};

struct SimSetup {
  ModelSpec model;
  std::unique_ptr<sim::Evaluation> eval;  // points into `model`: SimSetup never moves
  std::vector<std::string> notes;  // the config's _ds_plan note, then the evaluation's assumptions
  SimArgs effective;               // the flags after the config's _ds_plan filled the ones not given
};

// tune writes what a plan needs beyond DeepSpeed's config under "_ds_plan" (a key DeepSpeed
// ignores): recompute, pipeline stages and Megatron's engine settings. Each flag the command line
// did not give takes the note's value; `notes` says which were taken.
Status ApplyPlanNote(const Json& config, SimArgs* args, std::vector<std::string>* notes);

// The layout a config's _ds_plan note records, for the commands without engine flags (validate,
// groups, visualize graph): the note's pipeline stages unless --pp was given, its engine and that
// engine's tp, cp, ep and etp. `notes` says which were taken; a note that does not parse is
// reported there and ignored (nullopt).
struct NotedLayout {
  int64_t pp = 1;
  const sim::FrameworkProfile* framework = nullptr;  // the note's engine (DeepSpeed's without one)
  int64_t mpu_tp = 0, cp = 0, ep = 0, etp = 0;       // 0: not in the note
};
std::optional<NotedLayout> ReadNotedLayout(const std::string& path, const Json& root, const WorldOptions& world,
                                           std::vector<std::string>* notes);

// Prints the report's warnings (not its notes) to stderr as validate renders them, so a command
// that draws or schedules a config says what validate would: a fallback DeepSpeed takes, a setting
// it ignores. Nothing when there are none.
void PrintWarnings(const FileReport& report);
// The passes' notes (Pipeline::Notes): drawn as DeepSpeed builds it, but it will misbehave.
// Remarks (Pipeline::Remarks: what a profile-driven pass decided) print as notes.
void PrintPassNotes(const std::string& config, const std::vector<std::string>& notes,
                    const std::vector<std::string>& remarks = {});

// The knobs of a SimArgs (after the config's _ds_plan note), for sim::Evaluate. Fails on a value
// the flags' own checks cannot catch (an unknown DeepSpeed version).
Result<sim::PlanKnobs> KnobsOf(const SimArgs& args);
// The inverse for the layout and engine flags a session's knobs carry (explore's `apply` sets
// them from a tuned plan): `args` then simulates what the session shows. World, pp, sequence and
// recompute are the caller's.
void SetLayoutFlags(const sim::PlanKnobs& k, SimArgs* args);

// Loads, validates and plans. On failure prints the errors (validate's rendering for config
// errors) and returns nullptr with `exit_code` set: 1 for config errors, 2 for usage and IO.
std::unique_ptr<SimSetup> PrepareSimulation(const SimArgs& args, int* exit_code);

}  // namespace dsp::app
