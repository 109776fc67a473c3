// SPDX-License-Identifier: Apache-2.0
// One run of samples/runs/deepspeed-runs.tsv (2025-2026 DeepSpeed runs: Arctic Long Sequence
// Training on H100, DeepSpeed PR #8186's DeepCompile optimizer-state offload on H200, PR #8064's
// AutoEP on H100) simulated as `ds-plan simulate --engine deepspeed` would: the row's columns become
// the DeepSpeed config (ZeRO stage, offload, Ulysses sp, AutoTP, AutoEP, DeepCompile, the row's
// extra_config keys DeepSpeed reads), its seq_len and recompute the simulate flags.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/model/model_spec.h"
#include "sim/cost/cluster.h"
#include "sim/report/error_band.h"
#include "sim/session/evaluation.h"
#include "tests/sim/session/modern_runs_util.h"

namespace dsp::sim::deepspeed_runs {

using modern_runs::Int;
using modern_runs::Row;
using modern_runs::Source;

// The TSV writes extra_config as a quoted CSV cell ("{""a"":1}"): the JSON inside.
inline Json ExtraConfig(const Row& r) {
  std::string cell = r.at("extra_config");
  if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
    std::string unquoted;
    for (size_t i = 1; i + 1 < cell.size(); ++i) {
      unquoted += cell[i];
      if (cell[i] == '"' && cell[i + 1] == '"') ++i;
    }
    cell = unquoted;
  }
  Json extra = Json::parse(cell.empty() ? "{}" : cell, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(extra.is_discarded()) << r.at("run_id") << ": extra_config is not JSON";
  if (!extra.is_object()) return Json::object();
  // What the rows note beside the config but DeepSpeed does not read: the launcher's environment,
  // ArcticTraining's own switches (Liger, TiledMLP, its activation offload: the offload column
  // carries the last), the benchmark's torch.compile backend and schedule labels.
  for (const char* key : {"env", "arctic_training", "backend", "attn_implementation", "schedule", "variant"}) {
    extra.erase(key);
  }
  if (extra.contains("zero_optimization")) {
    Json& zero = extra["zero_optimization"];
    // PR #8064 names its leaf module in prose ("MoE block"), not as DeepSpeed's leaf_module object.
    if (zero.contains("leaf_module") && !zero["leaf_module"].is_object()) zero.erase("leaf_module");
  }
  return extra;
}

inline Json ConfigOf(const Row& r) {
  Json config = {{"train_micro_batch_size_per_gpu", Int(r, "micro_batch")},
                 {"gradient_accumulation_steps", Int(r, "grad_accum")},
                 {"bf16", {{"enabled", true}}},
                 {"zero_optimization", {{"stage", Int(r, "zero")}}},
                 {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-5}}}}},
                 {"gradient_clipping", 1.0}};
  config.merge_patch(ExtraConfig(r));
  const std::string offload = r.at("offload");
  if (offload.find("opt:cpu") != std::string::npos) {
    config["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
  }
  if (offload.find("param:cpu") != std::string::npos) {
    config["zero_optimization"]["offload_param"] = {{"device", "cpu"}};
  }
  if (offload.find("act_ckpt:cpu") != std::string::npos) {
    config["activation_checkpointing"] = {{"cpu_checkpointing", true}};
  }
  if (Int(r, "sp") > 1) config["sequence_parallel_size"] = Int(r, "sp");
  if (Int(r, "tp") > 1) config["tensor_parallel"]["autotp_size"] = Int(r, "tp");
  if (Int(r, "ep") > 1) {
    config["expert_parallel"]["enabled"] = true;
    config["expert_parallel"]["autoep_size"] = Int(r, "ep");
  }
  if (r.at("compile") == "deepcompile") config["compile"]["deepcompile"] = true;
  return config;
}

struct Outcome {
  std::string run_id, group, config_keys;
  bool measured_oom = false;
  double measured_s = 0, predicted_s = 0;    // measured_s 0: not a timed run (OOM)
  double measured_gb = 0, predicted_gb = 0;  // measured_gb 0: not published
  bool fits = false;
  std::string gpu_class;
};

// `adjust`: a change to the row's cluster preset (a what-if on a figure).
inline Outcome Simulate(const Row& r, const std::function<void(Cluster&)>& adjust = {}) {
  Outcome o;
  o.run_id = r.at("run_id");
  o.group = r.at("group");
  const Json config = ConfigOf(r);
  PlanKnobs k;
  k.gpus_per_node = std::min(Int(r, "gpus"), Int(r, "gpus_per_node"));
  k.nodes = std::max(1, Int(r, "gpus") / Int(r, "gpus_per_node"));
  k.pp = Int(r, "pp");
  k.seq_len = Int(r, "seq_len");
  // "none (inferred ...)", "unknown": the rows whose source does not say are simulated without.
  const std::string recompute = r.at("recompute").substr(0, r.at("recompute").find(' '));
  k.recompute = ParseRecompute(recompute).value_or(Recompute::kNone);
  k.engine.engine = Engine::kDeepSpeed;
  // ArcticTraining's liger_kernel: Liger's fused linear cross-entropy (--fused-loss).
  k.engine.fused_loss = r.at("extra_config").find("\"\"liger_kernel\"\":true") != std::string::npos;
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the row's environment.
  k.engine.expandable_segments = r.at("extra_config").find("expandable_segments:True") != std::string::npos;
  // ArcticTraining's tiled_mlp_compute: DeepSpeed's TiledMLP (--tiled-mlp).
  k.engine.tiled_mlp = r.at("extra_config").find("\"\"tiled_mlp_compute\"\":true") != std::string::npos;
  Cluster cluster = ParseCluster(Json::parse(Source(modern_runs::ClusterOf(r.at("hardware"))), nullptr, true, true)).value();
  if (adjust) adjust(cluster);
  auto model = ParseHfConfig(Json::parse(Source(modern_runs::ModelOf(r.at("model")))));
  EXPECT_TRUE(model.ok()) << o.run_id;
  if (!model.ok()) return o;
  auto e = Evaluate(*model, cluster, o.run_id + ".json", config.dump(), {}, k);
  EXPECT_TRUE(e->has_numbers()) << o.run_id << ": " << e->message;
  if (!e->has_numbers()) return o;
  o.measured_oom = r.at("metric") == "oom";
  if (!o.measured_oom) o.measured_s = std::stod(r.at("measured_iter_s"));
  if (!r.at("measured_peak_mem_gb").empty()) o.measured_gb = std::stod(r.at("measured_peak_mem_gb"));
  o.predicted_s = e->time.step_seconds;
  o.predicted_gb = e->memory.peak_bytes / 1e9;
  o.fits = e->memory.fits;
  o.gpu_class = GpuClass(cluster.gpu);
  return o;
}

}  // namespace dsp::sim::deepspeed_runs
