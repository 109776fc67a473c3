// SPDX-License-Identifier: Apache-2.0
#include "apps/ds-plan/plan_setup.h"

#include "apps/ds-plan/data_files.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "apps/ds-plan/command.h"
#include "core/json/hjson_parser.h"
#include "core/util/file_io.h"
#include "core/util/sha256.h"
#include "sim/session/snapshot_of.h"

namespace dsp::app {
namespace {

std::optional<int64_t> GivenOrAbsent(int64_t v) { return v > 0 ? std::optional<int64_t>(v) : std::nullopt; }

// check reads only files inside the directory it runs in (cmd_check.cc RecordedPathInside): record
// an input inside the working directory relative to it, and say so when one is not.
std::string RecordablePath(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (ec) return path;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec).lexically_normal();
  if (ec) return path;
  const std::filesystem::path rel = abs.lexically_relative(cwd.lexically_normal());
  if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
  std::cerr << "ds-plan: note: " << path << " is outside the working directory: `ds-plan check` run here "
            << "will refuse this snapshot (it reads only files inside the directory it runs in)\n";
  return path;
}

}  // namespace

std::optional<Json> ComputeSnapshot(const SimArgs& args, int* exit_code) {
  // The snapshot is only useful if check can read the same file again.
  if (args.config == "-") {
    *exit_code = UsageError("plan needs a config file path, not standard input: check re-reads it");
    return std::nullopt;
  }
  std::unique_ptr<SimSetup> s = PrepareSimulation(args, exit_code);
  if (!s) return std::nullopt;

  sim::PlanSnapshotInputs in;
  // PrepareSimulation read every file successfully a moment ago; reading again for the hash keeps
  // SimSetup free of raw bytes it does not need.
  for (auto [file, path] : {std::pair{&in.config, &args.config}, {&in.model, &args.model_path},
                            {&in.cluster, &args.cluster_path}}) {
    auto bytes = ReadFile(*path);
    if (!bytes.ok()) {
      *exit_code = UsageError(bytes.error().message);
      return std::nullopt;
    }
    // A preset given by its name (--cluster h100-sxm) is recorded by that name, which check finds
    // again on any machine with ds-plan installed.
    const std::string preset = file == &in.config ? "" : PresetNameGivenFor(*path);
    *file = {preset.empty() ? RecordablePath(*path) : preset, Sha256Hex(bytes.value())};
    if (file == &in.config) in.config_content = ParseDeepSpeedConfig(*path, std::move(bytes).value()).doc.root;
  }
  in.world_size = GivenOrAbsent(args.world.world_size);
  in.nodes = GivenOrAbsent(args.world.nodes);
  in.gpus_per_node = GivenOrAbsent(args.world.gpus_per_node);
  in.pp = s->effective.world.pp;  // after the config's _ds_plan: what was simulated
  in.seq_len = GivenOrAbsent(args.seq_len);
  in.recompute = s->effective.recompute;
  in.convention = args.convention;
  in.sets = args.sets;
  const SimArgs& e = s->effective;  // after the config's _ds_plan note: what was simulated
  in.engine = e.engine;
  in.megatron_tp = e.megatron_tp;
  in.megatron_sp = e.megatron_sp;
  in.virtual_stages = e.virtual_stages;
  in.pp_schedule_micro_batches = e.pp_schedule_micro_batches;
  in.cp = e.cp;
  in.ep = e.ep;
  in.fp8 = e.fp8;
  in.tp_comm_overlap = e.tp_comm_overlap;
  in.fused_loss = e.fused_loss;
  in.tiled_mlp = e.tiled_mlp;
  in.expandable_segments = e.expandable_segments;
  in.etp = e.etp;
  in.moe_token_dispatcher = e.moe_token_dispatcher;
  in.moe_grouped_gemm = e.moe_grouped_gemm;
  in.fp8_param_gather = e.fp8_param_gather;
  in.bf16_grad_buffer = e.bf16_grad_buffer;
  in.bf16_optimizer_states = e.bf16_optimizer_states;
  in.bf16_params = e.bf16_params;
  in.bf16_loss = e.bf16_loss;
  in.te_modules = e.te_modules;
  in.automodel_experts = e.automodel_experts;
  in.fake_balanced_gate = e.fake_balanced_gate;
  in.torch_compile = e.torch_compile;
  in.eager_loss = e.eager_loss;
  in.cp_comm_type = e.cp_comm_type;
  in.attention = e.attention;
  in.attn_impl = e.attn_impl;
  in.deepspeed_version = e.deepspeed_version;
  in.ds_plan_version = kVersion;

  *exit_code = kExitOk;
  return sim::PlanSnapshotToJson(sim::SnapshotOf(*s->eval, std::move(in)));
}

SimArgs SimArgsFromInputs(const sim::PlanSnapshotInputs& in) {
  SimArgs a;
  a.config = in.config.path;
  a.model_path = in.model.path;
  a.cluster_path = in.cluster.path;
  a.world.world_size = in.world_size.value_or(0);
  a.world.nodes = in.nodes.value_or(0);
  a.world.gpus_per_node = in.gpus_per_node.value_or(0);
  a.world.pp = in.pp;
  a.seq_len = in.seq_len.value_or(0);
  a.recompute = in.recompute;
  a.convention = in.convention;
  a.sets = in.sets;
  a.engine = in.engine;
  a.megatron_tp = in.megatron_tp;
  a.megatron_sp = in.megatron_sp;
  a.virtual_stages = static_cast<int>(in.virtual_stages);
  a.pp_schedule_micro_batches = in.pp_schedule_micro_batches;
  a.cp = in.cp;
  a.ep = in.ep;
  a.fp8 = in.fp8;
  a.tp_comm_overlap = in.tp_comm_overlap;
  a.fused_loss = in.fused_loss;
  a.tiled_mlp = in.tiled_mlp;
  a.expandable_segments = in.expandable_segments;
  a.etp = in.etp;
  a.moe_token_dispatcher = in.moe_token_dispatcher;
  a.moe_grouped_gemm = in.moe_grouped_gemm;
  a.fp8_param_gather = in.fp8_param_gather;
  a.bf16_grad_buffer = in.bf16_grad_buffer;
  a.bf16_optimizer_states = in.bf16_optimizer_states;
  a.bf16_params = in.bf16_params;
  a.bf16_loss = in.bf16_loss;
  a.te_modules = in.te_modules;
  a.automodel_experts = in.automodel_experts;
  a.fake_balanced_gate = in.fake_balanced_gate;
  a.torch_compile = in.torch_compile;
  a.eager_loss = in.eager_loss;
  a.cp_comm_type = in.cp_comm_type;
  a.attention = in.attention;
  a.attn_impl = in.attn_impl;
  a.deepspeed_version = in.deepspeed_version;
  a.flags_are_explicit = true;  // the recorded values are the ones simulated
  return a;
}

}  // namespace dsp::app
