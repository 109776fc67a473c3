// SPDX-License-Identifier: Apache-2.0
#include "sim/calibrate/measured_runs.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "core/plan/plan.h"
#include "sim/calibrate/tsv.h"

namespace dsp::sim {
namespace {

class RunRow {
 public:
  RunRow(const std::map<std::string, size_t>& header, std::vector<std::string> cells, int line)
      : header_(header), cells_(std::move(cells)), line_(line) {}

  bool Has(const std::string& column) const {
    auto it = header_.find(column);
    return it != header_.end() && it->second < cells_.size() && !cells_[it->second].empty();
  }
  std::string Text(const std::string& column, const std::string& fallback = "") const {
    return Has(column) ? cells_[header_.at(column)] : fallback;
  }
  Result<int64_t> Int(const std::string& column, int64_t min, std::optional<int64_t> fallback = {}) const {
    if (!Has(column)) {
      if (fallback) return *fallback;
      return Fail(column, "is missing");
    }
    const std::string& t = cells_[header_.at(column)];
    char* end = nullptr;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (end == t.c_str() || *end != '\0') return Fail(column, "must be an integer, got \"" + t + "\"");
    if (v < min || v > (int64_t{1} << 40)) return Fail(column, "is out of range: " + t);
    return static_cast<int64_t>(v);
  }
  Result<double> Number(const std::string& column, std::optional<double> fallback = {}) const {
    if (!Has(column)) {
      if (fallback) return *fallback;
      return Fail(column, "is missing");
    }
    const std::string& t = cells_[header_.at(column)];
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (end == t.c_str() || *end != '\0' || !std::isfinite(v) || v < 0) {
      return Fail(column, "must be a number >= 0, got \"" + t + "\"");
    }
    return v;
  }
  Error Fail(const std::string& column, const std::string& what) const {
    return Error{"line " + std::to_string(line_) + ": column '" + column + "' " + what};
  }

 private:
  const std::map<std::string, size_t>& header_;
  std::vector<std::string> cells_;
  int line_;
};

#define DSP_TRY(lhs, expr)                 \
  do {                                     \
    auto dsp_r_ = (expr);                  \
    if (!dsp_r_.ok()) return dsp_r_.error(); \
    lhs = *dsp_r_;                         \
  } while (false)

Result<MeasuredRun> ReadRow(const RunRow& r) {
  MeasuredRun run;
  run.run_id = r.Text("run_id");
  if (run.run_id.empty()) return r.Fail("run_id", "is missing");
  run.source = r.Text("source");
  run.model_type = r.Text("model_type", "gpt2");
  if (run.model_type != "gpt2" && run.model_type != "bloom") {
    return r.Fail("model_type", "must be gpt2 or bloom, got \"" + run.model_type + "\"");
  }
  DSP_TRY(run.layers, r.Int("layers", 1));
  DSP_TRY(run.hidden, r.Int("hidden", 1));
  DSP_TRY(run.heads, r.Int("heads", 1));
  DSP_TRY(run.ffn, r.Int("ffn", 1, 4 * run.hidden));
  DSP_TRY(run.vocab, r.Int("vocab", 1));
  DSP_TRY(run.seq_len, r.Int("seq_len", 1));
  DSP_TRY(run.gpus, r.Int("gpus", 1));
  DSP_TRY(run.tp, r.Int("tp", 1, 1));
  DSP_TRY(run.pp, r.Int("pp", 1, 1));
  DSP_TRY(run.dp, r.Int("dp", 1, run.gpus / (run.tp * run.pp)));
  int64_t flag = 0;
  DSP_TRY(flag, r.Int("megatron_sp", 0, 0));
  run.megatron_sp = flag != 0;
  int64_t v = 1;
  DSP_TRY(v, r.Int("pipeline_interleave", 1, 1));
  run.virtual_stages = static_cast<int>(v);
  DSP_TRY(run.micro_batch, r.Int("micro_batch", 1));
  DSP_TRY(run.global_batch, r.Int("global_batch", 1));
  const std::string rc = r.Text("recompute", "none");
  if (rc == "full") {
    run.recompute = Recompute::kFull;
  } else if (rc == "selective") {
    run.recompute = Recompute::kSelective;
  } else if (rc == "none") {
    run.recompute = Recompute::kNone;
  } else {
    return r.Fail("recompute", "must be none, selective or full, got \"" + rc + "\"");
  }
  run.precision = r.Text("precision", "fp16");
  if (run.precision != "fp16" && run.precision != "bf16") {
    return r.Fail("precision", "must be fp16 or bf16, got \"" + run.precision + "\"");
  }
  DSP_TRY(run.dropout, r.Number("dropout", run.model_type == "bloom" ? 0.0 : 0.1));
  if (run.dropout >= 1) return r.Fail("dropout", "must be below 1");
  const std::string engine = r.Text("engine", "megatron-lm");
  const std::optional<Engine> parsed = ParseEngineName(engine);
  if (!parsed) {
    return r.Fail("engine", "must be megatron-lm, megatron-deepspeed or deepspeed, got \"" + engine + "\"");
  }
  run.engine = *parsed;
  int64_t zero = 0;
  DSP_TRY(zero, r.Int("zero_stage", 0, 0));
  if (zero > 3) return r.Fail("zero_stage", "must be 0-3");
  run.zero_stage = static_cast<int>(zero);
  const std::string attention = r.Text("attention", "materialized");
  if (attention != "flash" && attention != "materialized") {
    return r.Fail("attention", "must be flash or materialized, got \"" + attention + "\"");
  }
  run.flash_attention = attention == "flash";
  run.deepspeed_version = r.Text("deepspeed_version");
  if (!run.deepspeed_version.empty() && !DeepSpeedVersion::Parse(run.deepspeed_version)) {
    return r.Fail("deepspeed_version", "must be X.Y or X.Y.Z");
  }
  DSP_TRY(run.measured_seconds, r.Number("measured_iter_s"));
  DSP_TRY(run.calculon_seconds, r.Number("calculon_iter_s", 0.0));
  // One optimizer step of a training run: from a millisecond (a small model on one GPU) to a day.
  // Outside that it is a unit mistake, and a fit to it would write a cluster no machine has.
  if (!(run.measured_seconds >= 1e-3 && run.measured_seconds <= 86400)) {
    return r.Fail("measured_iter_s", "must be one step's seconds, between 0.001 and 86400 (a unit mistake?)");
  }
  if (run.tp * run.pp * run.dp != run.gpus) {
    return r.Fail("dp", "tp x pp x dp (" + std::to_string(run.tp * run.pp * run.dp) +
                            ") must equal gpus (" + std::to_string(run.gpus) + ")");
  }
  if (run.global_batch % (run.micro_batch * run.dp) != 0) {
    return r.Fail("global_batch", "must be a multiple of micro_batch x dp");
  }
  if (run.hidden % run.heads != 0) return r.Fail("heads", "must divide hidden");
  return run;
}

#undef DSP_TRY

}  // namespace

Result<std::vector<MeasuredRun>> ParseMeasuredRuns(const std::string& tsv) {
  std::istringstream in(tsv);
  std::string line;
  std::map<std::string, size_t> header;
  std::vector<MeasuredRun> runs;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells = SplitTabs(line);
    if (header.empty()) {
      for (size_t i = 0; i < cells.size(); ++i) header[cells[i]] = i;
      if (!header.contains("run_id") || !header.contains("measured_iter_s")) {
        return Error{"line " + std::to_string(number) +
                     ": the header must name the columns (run_id ... measured_iter_s)"};
      }
      continue;
    }
    auto run = ReadRow(RunRow(header, std::move(cells), number));
    if (!run.ok()) return run.error();
    runs.push_back(std::move(run).value());
  }
  if (runs.empty()) return Error{"no runs: the file needs a header line and at least one row"};
  return runs;
}

ModelSpec RunModel(const MeasuredRun& run) {
  ModelSpec m;
  m.model_type = run.model_type;
  m.family = run.model_type == "gpt2" ? ModelFamily::kGpt2 : ModelFamily::kBloom;
  m.hidden_size = run.hidden;
  m.num_hidden_layers = run.layers;
  m.num_attention_heads = m.num_key_value_heads = run.heads;
  m.head_dim = run.hidden / run.heads;
  m.intermediate_size = run.ffn;
  m.vocab_size = run.vocab;
  m.max_position_embeddings = run.seq_len;
  m.tie_word_embeddings = true;
  m.gated_mlp = false;
  m.layer_norm = true;
  m.attention_bias = m.o_proj_bias = m.mlp_bias = true;
  m.hidden_dropout = m.attention_dropout = run.dropout;
  if (run.model_type == "gpt2") {
    m.learned_positions = run.seq_len;
  } else {
    m.embedding_norm = true;
  }
  return m;
}

Result<std::unique_ptr<RunSetup>> SetUpRun(const MeasuredRun& run, const Cluster& cluster) {
  auto setup = std::make_unique<RunSetup>();
  Json& config = setup->config;
  config = Json::object();
  const int64_t gas = run.global_batch / (run.micro_batch * run.dp);
  config["train_batch_size"] = run.global_batch;
  config["train_micro_batch_size_per_gpu"] = run.micro_batch;
  config["gradient_accumulation_steps"] = gas;
  config[run.precision] = {{"enabled", true}};
  config["zero_optimization"] = {{"stage", run.zero_stage}};
  PlanInputs pin;
  pin.world_size = run.gpus;
  pin.gpus_per_node = cluster.gpus_per_node;
  pin.pp = run.pp;
  pin.mpu_tp = run.tp;
  pin.layout = RankLayout::kMegatron;
  auto plan = BuildPlan(config, pin);
  if (!plan.ok()) return Error{run.run_id + ": " + plan.error().message};
  setup->plan = std::move(plan).value();
  setup->model = RunModel(run);

  SimInput& in = setup->input;
  in.plan = &setup->plan;
  in.model = &setup->model;
  in.cluster = &cluster;
  in.workload.seq_len = run.seq_len;
  in.workload.micro_batch = run.micro_batch;
  in.workload.grad_accum = gas;
  in.workload.recompute = run.recompute;
  in.engine.engine = run.engine;
  in.engine.megatron_sp = run.megatron_sp;
  in.engine.virtual_stages = run.virtual_stages;
  in.engine.attention = run.flash_attention ? AttentionKernel::kFramework : AttentionKernel::kMaterialized;
  // Every published run trained Megatron's GPT model (Megatron-LM, or Megatron-DeepSpeed and
  // DeepSpeedExamples' Megatron-GPT2 under DeepSpeed's engine), never transformers' modules.
  in.engine.transformers_modules = false;
  if (!run.deepspeed_version.empty()) {
    in.engine.deepspeed_version = *DeepSpeedVersion::Parse(run.deepspeed_version);
  }
  in.zero = ReadZeroSettings(config, in.engine.deepspeed_version);
  if (Fp32GradientBuffer(run.engine, run.precision == "bf16", run.zero_stage)) {
    in.workload.gradient_bytes_per_element = 4;
  }
  return setup;
}

Result<RunPrediction> PredictRun(const MeasuredRun& run, const Cluster& cluster) {
  auto setup = SetUpRun(run, cluster);
  if (!setup.ok()) return setup.error();
  const SimInput& in = (*setup)->input;
  RunPrediction p;
  p.memory = EstimateMemory(in);
  p.time = EstimateStepTime(in);
  p.seconds = p.time.step_seconds;
  p.error = (p.seconds - run.measured_seconds) / run.measured_seconds;
  return p;
}

}  // namespace dsp::sim
