// SPDX-License-Identifier: Apache-2.0
// One run of samples/runs/modern-runs.tsv simulated as `ds-plan simulate` would (the flags of each
// row: see modern_runs_test.cc), shared by the table test and the error-band test.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "core/model/model_spec.h"
#include "sim/cost/cluster.h"
#include "sim/report/error_band.h"
#include "sim/session/evaluation.h"
#include "tests/sim/table_test_util.h"

namespace dsp::sim::modern_runs {

using Row = testing::TsvRow;

inline std::string Source(const std::string& relative) { return testing::SourceFile(relative); }

// The cluster preset of each hardware name.
inline std::string ClusterOf(const std::string& hardware) {
  static const std::map<std::string, std::string> presets = {
      {"h100-80gb-sxm", "samples/clusters/h100-sxm.json"},
      {"h100-96gb-hbm2e-500w", "samples/clusters/h100-96gb-hbm2e.json"},
      {"h200", "samples/clusters/h200.json"},
      {"a100-80gb", "samples/clusters/a100-80gb.json"}};
  auto it = presets.find(hardware);
  EXPECT_NE(it, presets.end()) << hardware;
  return it == presets.end() ? "" : it->second;
}

// models/x.json: a shared sample model, or one bundled for these runs.
inline std::string ModelOf(const std::string& column) {
  const std::string name = column.substr(column.find('/') + 1);
  const std::string shared = "samples/models/" + name;
  if (std::filesystem::exists(std::string(DSP_SOURCE_DIR) + "/" + shared)) return shared;
  return "samples/runs/modern/models/" + name;
}

inline int Int(const Row& row, const char* key) { return std::stoi(row.at(key)); }

struct Outcome {
  std::string run_id, engine, flags;
  double measured_s = 0, predicted_s = 0;
  double measured_gb = 0, predicted_gb = 0;  // 0: not published
  bool fits = false;
  std::string gpu_class;  // GpuClass of the row's cluster preset
};

inline Outcome Simulate(const Row& r) {
  Outcome o;
  o.run_id = r.at("run_id");
  const std::string framework = r.at("framework");
  const Engine engine = framework == "deepspeed"                             ? Engine::kDeepSpeed
                        : framework == "nemo" || framework == "megatron-lm" ? Engine::kMegatronLm
                                                                             : Engine::kFsdp2;
  o.engine = std::string(EngineName(engine));
  Json config = {{"train_micro_batch_size_per_gpu", Int(r, "micro_batch")},
                 {"gradient_accumulation_steps", Int(r, "grad_accum")},
                 {"gradient_clipping", 1.0},
                 {"zero_optimization", {{"stage", Int(r, "zero_or_fsdp")}}},
                 {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-4}}}}},
                 {r.at("precision") == "fp16" ? "fp16" : "bf16", {{"enabled", true}}}};
  PlanKnobs k;
  k.nodes = Int(r, "gpus") / Int(r, "gpus_per_node");
  k.gpus_per_node = Int(r, "gpus_per_node");
  k.pp = Int(r, "pp");
  k.seq_len = Int(r, "seq_len");
  // "unknown" (the Megatron-LM README does not say): selective, Megatron's default since 2022.
  k.recompute = ParseRecompute(r.at("recompute")).value_or(Recompute::kSelective);
  k.engine.engine = engine;
  std::ostringstream flags;
  if (engine == Engine::kDeepSpeed) {
    if (Int(r, "tp") > 1) config["tensor_parallel"] = {{"autotp_size", Int(r, "tp")}};
    if (Int(r, "ep") > 1) config["expert_parallel"] = {{"enabled", true}, {"autoep_size", Int(r, "ep")}};
  } else {
    k.megatron_tp = Int(r, "tp");
    if (Int(r, "tp") > 1) flags << " --tp " << Int(r, "tp");
    if (Int(r, "cp") > 1) k.cp = Int(r, "cp"), flags << " --cp " << k.cp;
    if (Int(r, "ep") > 1) k.ep = Int(r, "ep"), flags << " --ep " << k.ep;
    k.engine.megatron_sp = engine == Engine::kMegatronLm && r.at("sequence_parallel") == "1";
    if (k.engine.megatron_sp) flags << " --megatron-sp";
    // The runs whose recipe or README says TP communication overlap (userbuffers) is on.
    k.engine.tp_comm_overlap = k.engine.megatron_sp && r.at("tp_comm_overlap") == "1";
    if (k.engine.tp_comm_overlap) flags << " --tp-comm-overlap";
  }
  // NeMo AutoModel's MoE benchmark configs (examples/benchmark/configs/*_te_deepep.yaml) set
  // BackendConfig attn: te, TransformerEngine's cuDNN attention; GPT-OSS's set attn: flex
  // (FlexAttention's Triton kernels, priced as fsdp2's FlashAttention-2 default).
  if (r.at("group") == "automodel-fsdp2-h100" && r.at("source").find("_te_deepep") != std::string::npos &&
      r.at("model").find("gpt-oss") == std::string::npos) {
    k.engine.attention = AttentionKernel::kCudnn;
    flags << " --attention cudnn";
  }
  if (k.pp > 1) flags << " --pp " << k.pp;
  if (Int(r, "vp") > 1) k.engine.virtual_stages = Int(r, "vp"), flags << " --virtual-stages " << Int(r, "vp");
  k.engine.fp8 = r.at("precision") == "fp8";
  if (k.engine.fp8) flags << " --fp8";
  k.engine.fp8_param_gather = k.engine.fp8 && r.at("fp8_param_gather") == "1";
  if (k.engine.fp8_param_gather) flags << " --fp8-param-gather";
  o.flags = flags.str().empty() ? "" : flags.str().substr(1);
  const Cluster cluster = ParseCluster(Json::parse(Source(ClusterOf(r.at("hardware"))), nullptr, true, true)).value();
  auto model = ParseHfConfig(Json::parse(Source(ModelOf(r.at("model")))));
  EXPECT_TRUE(model.ok()) << o.run_id;
  if (!model.ok()) return o;
  auto e = Evaluate(*model, cluster, o.run_id + ".json", config.dump(), {}, k);
  EXPECT_TRUE(e->has_numbers()) << o.run_id << ": " << e->message;
  if (!e->has_numbers()) return o;
  o.measured_s = std::stod(r.at("measured_iter_s"));
  o.predicted_s = e->time.step_seconds;
  if (!r.at("measured_peak_mem_gb").empty()) o.measured_gb = std::stod(r.at("measured_peak_mem_gb"));
  o.predicted_gb = e->memory.peak_bytes / 1e9;
  o.fits = e->memory.fits;
  o.gpu_class = GpuClass(cluster.gpu);
  return o;
}

}  // namespace dsp::sim::modern_runs
