// SPDX-License-Identifier: Apache-2.0
#include "sim/session/reference_runs.h"

#include <iterator>
#include <sstream>
#include <tuple>

#include "sim/calibrate/tsv.h"

namespace dsp::sim {
namespace {

const std::string& Cell(const TsvRecord& row, const std::string& key) {
  static const std::string empty;
  auto it = row.find(key);
  return it == row.end() ? empty : it->second;
}

Result<int64_t> Int(const TsvRecord& row, const std::string& key) {
  const std::string& cell = Cell(row, key);
  try {
    size_t used = 0;
    const long long v = std::stoll(cell, &used);
    if (used == cell.size()) return static_cast<int64_t>(v);
  } catch (...) {
  }
  return Error{"column " + key + ": '" + cell + "' is not an integer"};
}

Result<double> RecordNumber(const TsvRecord& row, const std::string& key) {
  const std::string& cell = Cell(row, key);
  try {
    size_t used = 0;
    const double v = std::stod(cell, &used);
    if (used == cell.size() && v >= 0) return v;
  } catch (...) {
  }
  return Error{"column " + key + ": '" + cell + "' is not a number"};
}

}  // namespace

Result<std::vector<TsvRecord>> ParseTsvRecords(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  std::vector<TsvRecord> rows;
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> cells = SplitTabs(line);
    if (header.empty()) {
      header = cells;
      continue;
    }
    TsvRecord row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = i < cells.size() ? cells[i] : "";
    rows.push_back(std::move(row));
  }
  if (header.empty()) return Error{"no header line: the file is empty"};
  return rows;
}

bool IsModernRunsTable(const std::vector<TsvRecord>& rows) {
  return !rows.empty() && rows.front().count("framework") > 0 && rows.front().count("model") > 0 &&
         rows.front().count("hardware") > 0;
}

namespace {

// torchtitan's runs that say torch.compile (the row's compile column: its benchmark table's title
// or command line) compile each decoder block, and the loss too ("torch.compile") but at releases
// before April 2025 ("torch.compile:model": the December 2024 benchmark's torchtitan 9dec370 left
// train.py's `torch.compile(loss_fn)` commented out; from bbb1b616 components/loss.py
// build_cross_entropy_loss compiles it under training.compile).
void ReadTorchCompile(const std::string& compile, EngineSettings& e, std::ostringstream& flags) {
  e.torch_compile = compile == "torch.compile" || compile == "torch.compile:model";
  e.eager_loss = e.torch_compile && compile == "torch.compile:model";
  if (e.torch_compile) flags << " --torch-compile";
  if (e.eager_loss) flags << " --eager-loss";
}

// Column pp_schedule_micro_batches (optional): the micro-batches of one call of the pipeline
// schedule where the framework calls it once per local batch (NeMo AutoModel's benchmark configs:
// local_batch_size / pp_microbatch_size); empty: the step's micro-batches in one call.
Status ReadScheduleCalls(const TsvRecord& r, EngineSettings& e, std::ostringstream& flags) {
  if (Cell(r, "pp_schedule_micro_batches").empty()) return Status::Ok();
  auto n = Int(r, "pp_schedule_micro_batches");
  if (!n.ok()) return n.error();
  if (*n < 1) return Error{"column pp_schedule_micro_batches: must be 1 or more"};
  e.pipeline_schedule_micro_batches = *n;
  flags << " --pp-schedule-micro-batches " << *n;
  return Status::Ok();
}

// A row that says TP communication overlap must be one its engine can overlap
// (TpCommOverlapBlocker: Megatron-Core's userbuffers need sequence parallelism, torchtitan's async
// TP torch.compile, and DeepSpeed's AutoTP has none).
Status CheckTpCommOverlap(const TsvRecord& r, const PlanKnobs& k) {
  if (Cell(r, "tp_comm_overlap") != "1") return Status::Ok();
  const FrameworkProfile& fw = k.engine.framework();
  const std::string column = "column tp_comm_overlap: ";
  switch (TpCommOverlapBlocker(fw, k.megatron_tp, k.engine.megatron_sp, k.engine.torch_compile, k.engine.te_modules)) {
    case TpOverlapBlocker::kNone: return Status::Ok();
    case TpOverlapBlocker::kNoOverlap: return Error{column + std::string(fw.name) + " has no TP communication overlap"};
    case TpOverlapBlocker::kNoTensorParallel: return Error{column + "1 needs a tp of 2 or more"};
    case TpOverlapBlocker::kNeedsSequenceParallel:
      return Error{column + std::string(fw.name) + " overlaps TP only with sequence_parallel 1"};
    case TpOverlapBlocker::kNeedsCompile: return Error{column + "torchtitan's async TP needs a compile column"};
    case TpOverlapBlocker::kTeModules: return Error{column + "async TP fuses PyTorch's matmuls, not TransformerEngine's"};
  }
  return Status::Ok();
}

}  // namespace

Result<ModernRunPlan> PlanModernRun(const TsvRecord& r) {
  ModernRunPlan o;
  o.run_id = Cell(r, "run_id");
  o.group = Cell(r, "group");
  o.hardware = Cell(r, "hardware");
  o.model = Cell(r, "model");
  const std::string& framework = Cell(r, "framework");
  o.engine = framework == "deepspeed"                             ? Engine::kDeepSpeed
             : framework == "nemo" || framework == "megatron-lm" ? Engine::kMegatronLm
                                                                  : Engine::kFsdp2;
  int64_t v[13] = {};
  const char* ints[] = {"micro_batch", "grad_accum", "zero_or_fsdp", "gpus", "gpus_per_node", "pp",
                        "seq_len", "tp", "cp", "ep", "vp"};
  for (size_t i = 0; i < std::size(ints); ++i) {
    auto x = Int(r, ints[i]);
    if (!x.ok()) return Error{o.run_id + ": " + x.error().message};
    v[i] = *x;
  }
  const auto [micro, accum, zero, gpus, per_node, pp, seq, tp, cp, ep, vp] =
      std::tuple{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10]};
  if (per_node <= 0 || gpus % per_node != 0) return Error{o.run_id + ": gpus is not a multiple of gpus_per_node"};
  auto measured = RecordNumber(r, "measured_iter_s");
  if (!measured.ok()) return Error{o.run_id + ": " + measured.error().message};
  if (*measured <= 0) return Error{o.run_id + ": column measured_iter_s: a step takes more than 0 s"};
  o.measured_seconds = *measured;
  if (!Cell(r, "measured_peak_mem_gb").empty()) {
    auto peak = RecordNumber(r, "measured_peak_mem_gb");
    if (!peak.ok()) return Error{o.run_id + ": " + peak.error().message};
    o.measured_peak_gb = *peak;
  }
  o.measured_peak_reserved = framework == "torchtitan";
  const std::string& precision = Cell(r, "precision");
  o.config = {{"train_micro_batch_size_per_gpu", micro},
              {"gradient_accumulation_steps", accum},
              {"gradient_clipping", 1.0},
              {"zero_optimization", {{"stage", zero}}},
              {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-4}}}}},
              {precision == "fp16" ? "fp16" : "bf16", {{"enabled", true}}}};
  PlanKnobs& k = o.knobs;
  k.nodes = gpus / per_node;
  k.gpus_per_node = per_node;
  k.pp = pp;
  k.seq_len = seq;
  // "unknown" (the Megatron-LM README does not say): selective, Megatron's default since 2022.
  k.recompute = ParseRecompute(Cell(r, "recompute")).value_or(Recompute::kSelective);
  k.engine.engine = o.engine;
  std::ostringstream flags;
  if (o.engine == Engine::kDeepSpeed) {
    // DeepSpeed takes TP and EP from its config (AutoTP, AutoEP).
    if (tp > 1) o.config["tensor_parallel"] = {{"autotp_size", tp}};
    if (ep > 1) o.config["expert_parallel"] = {{"enabled", true}, {"autoep_size", ep}};
  } else {
    k.megatron_tp = tp;
    if (tp > 1) flags << " --tp " << tp;
    if (cp > 1) k.cp = cp, flags << " --cp " << cp;
    if (ep > 1) k.ep = ep, flags << " --ep " << ep;
    k.engine.megatron_sp = o.engine == Engine::kMegatronLm && Cell(r, "sequence_parallel") == "1";
    // NeMo's recipes (NVIDIA/dgxc-benchmarking v24.11.1 llama3.1_*.yaml, gpt3_175b_hydra.yaml,
    // nemotron4-*-synth.yaml) train with optim distributed_fused_adam, grad_sync_dtype bf16 and
    // contiguous_grad_buffer: a bf16 gradient buffer, not Megatron-LM's fp32 main_grad.
    k.engine.bf16_grad_buffer = framework == "nemo";
    if (k.engine.bf16_grad_buffer) flags << " --bf16-grad-buffer";
    // nemotron4-340b-synth.yaml alone also sets the optimizer's dtype: bf16.
    k.engine.bf16_optimizer_states =
        k.engine.bf16_grad_buffer && Cell(r, "source").find("nemotron4-340b-synth.yaml") != std::string::npos;
    if (k.engine.bf16_optimizer_states) flags << " --bf16-optimizer-states";
    if (k.engine.megatron_sp) flags << " --megatron-sp";
    // The runs whose recipe or README says TP communication overlap is on: userbuffers under
    // Megatron-Core, async TP under torchtitan (CheckTpCommOverlap refuses what the engine cannot).
    k.engine.tp_comm_overlap = Cell(r, "tp_comm_overlap") == "1";
    if (k.engine.tp_comm_overlap) flags << " --tp-comm-overlap";
    if (k.engine.framework().gradients == GradientSync::kFsdp2) ReadTorchCompile(Cell(r, "compile"), k.engine, flags);
  }
  // NeMo AutoModel's MoE benchmark configs (examples/benchmark/configs/*_te_deepep.yaml) set
  // BackendConfig attn: te, TransformerEngine's cuDNN attention; GPT-OSS's set attn: flex
  // (FlexAttention's Triton kernels, priced as fsdp2's FlashAttention-2 default).
  if (o.group == "automodel-fsdp2-h100" && Cell(r, "source").find("_te_deepep") != std::string::npos &&
      o.model.find("gpt-oss") == std::string::npos) {
    k.engine.attention = AttentionKernel::kCudnn;
    flags << " --attention cudnn";
  }
  // The same configs build AutoModel's own MoE models, which cast themselves to bf16 before
  // fully_shard (nemo_automodel/components/models/*/model.py initialize_weights(dtype=
  // torch.bfloat16): self.to(dtype)), and step them with torch.optim.Adam (moments like the
  // parameters); their loss is MaskedCrossEntropy with fp32_upcast: false. The Llama 3.1 70B config
  // loads transformers' model with torch_dtype: bf16 but steps it with TransformerEngine's FusedAdam
  // (fp32 moments by default) and upcasts its loss.
  if (o.group == "automodel-fsdp2-h100") {
    const bool moe_benchmark = Cell(r, "source").find("_te_deepep") != std::string::npos;
    k.engine.bf16_params = true;
    k.engine.bf16_optimizer_states = moe_benchmark;
    k.engine.bf16_loss = moe_benchmark;
    // Their BackendConfig sets rms_norm: te, linear: te and enable_deepep (GroupedExpertsDeepEP:
    // moe_permute_fusion, weighted_bias_swiglu_impl); attn: te but for GPT-OSS's FlexAttention
    // (its quick_geglu_deepep activation is @torch.compile'd: one fused kernel, as the SwiGLU's).
    k.engine.te_modules = moe_benchmark;
    // Their MoE models go through AutoModel's moe/parallelizer.py (apply_fsdp: experts outside FSDP
    // where EP covers the data-parallel ranks).
    k.engine.automodel_experts = moe_benchmark;
    // ... and route with FakeBalancedGate (BackendConfig fake_balanced_gate: true).
    k.engine.fake_balanced_gate = moe_benchmark;
    flags << " --bf16-params"
          << (moe_benchmark ? " --bf16-optimizer-states --bf16-loss --te-modules --automodel-experts --fake-balanced-gate"
                          : "");
  }
  if (pp > 1) flags << " --pp " << pp;
  if (vp > 1) k.engine.virtual_stages = static_cast<int>(vp), flags << " --virtual-stages " << vp;
  if (Status s = ReadScheduleCalls(r, k.engine, flags); !s.ok()) return Error{o.run_id + ": " + s.error().message};
  if (Status s = CheckTpCommOverlap(r, k); !s.ok()) return Error{o.run_id + ": " + s.error().message};
  k.engine.fp8 = precision == "fp8";
  if (k.engine.fp8) flags << " --fp8";
  k.engine.fp8_param_gather = k.engine.fp8 && Cell(r, "fp8_param_gather") == "1";
  if (k.engine.fp8_param_gather) flags << " --fp8-param-gather";
  o.flags = flags.str().empty() ? "" : flags.str().substr(1);
  return o;
}

}  // namespace dsp::sim
