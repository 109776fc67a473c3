// SPDX-License-Identifier: Apache-2.0
#include "sim/session/session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/config/batch_triple.h"
#include "core/config/config_view.h"
#include "core/json/document.h"
#include "core/schema/schema_check.h"
#include "core/util/file_io.h"
#include "core/util/text.h"
#include "core/validate/validator.h"
#include "sim/frameworks/attention_kernel.h"

namespace dsp::sim {
namespace {

constexpr size_t kMaxHistory = 10000;

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

// `key` set to `value` when `keep`, else removed: a setting whose default means "off".
void SetOrErase(Json& object, const char* key, bool keep, const Json& value) {
  if (keep) {
    object[key] = value;
  } else {
    object.erase(key);
  }
}

// A `set` value: JSON read by the bounded parser every input goes through (ParseOptions'
// max_depth), else the text as a string (`set optimizer.type=AdamW`). A value nested deeper than
// that is refused: kept, it would make every later evaluation walk it (quadratic in its depth).
Result<Json> ValueOf(std::string_view text) {
  ParsedJson parsed = ParseJsonLenient("set", std::string(text));
  for (const Diagnostic& d : parsed.diagnostics) {
    if (d.rule_id == "json-too-deep") {
      return Error{"the value is nested deeper than " + std::to_string(ParseOptions{}.max_depth) +
                   " levels; no DeepSpeed setting is"};
    }
  }
  if (!parsed.ok) return Json(std::string(text));
  return std::move(parsed.doc.root);
}

Result<int64_t> IntegerKnob(const std::string& key, const Json& v, int64_t lo, int64_t hi) {
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
    return Error{key + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                 v.dump().substr(0, 40)};
  }
  return v.get<int64_t>();
}

void SetEnabled(Json& config, const char* section, bool on, bool create) {
  if (config.contains(section) && config[section].is_object()) {
    config[section]["enabled"] = on;
  } else if (create) {
    config[section] = {{"enabled", on}};
  } else {
    config.erase(section);
  }
}

// Applies one knob; the config changes only for `precision`.
Status ApplyKnob(const std::string& key, const Json& v, PlanKnobs& k, Json& config) {
  if (key == "world_size") {
    auto n = IntegerKnob(key, v, 1, int64_t{1} << 20);
    if (!n.ok()) return n.error();
    k.world_size = *n;
    k.nodes = 0;  // the world is given directly now
  } else if (key == "nodes") {
    auto n = IntegerKnob(key, v, 1, int64_t{1} << 16);
    if (!n.ok()) return n.error();
    k.nodes = *n;
    k.world_size = 0;
  } else if (key == "gpus_per_node") {
    auto n = IntegerKnob(key, v, 1, 1024);
    if (!n.ok()) return n.error();
    k.gpus_per_node = *n;
  } else if (key == "pp") {
    auto n = IntegerKnob(key, v, 1, int64_t{1} << 16);
    if (!n.ok()) return n.error();
    k.pp = *n;
  } else if (key == "seq_len") {
    auto n = IntegerKnob(key, v, 1, int64_t{1} << 26);
    if (!n.ok()) return n.error();
    k.seq_len = *n;
  } else if (key == "recompute") {
    auto r = v.is_string() ? ParseRecompute(v.get<std::string>()) : std::nullopt;
    if (!r) return Error{"recompute must be none, selective or full, got " + v.dump().substr(0, 40)};
    k.recompute = *r;
  } else if (key == "precision") {
    const std::string p = v.is_string() ? v.get<std::string>() : "";
    if (p != "bf16" && p != "fp16" && p != "fp32") {
      return Error{"precision must be bf16, fp16 or fp32, got " + v.dump().substr(0, 40)};
    }
    // DeepSpeed refuses bf16 and fp16 enabled together (runtime/config.py): one turns the other off.
    SetEnabled(config, "bf16", p == "bf16", p == "bf16");
    SetEnabled(config, "fp16", p == "fp16", p == "fp16");
    if (p != "fp32" && config.contains("torch_autocast") && config["torch_autocast"].is_object()) {
      config["torch_autocast"]["enabled"] = false;
    }
  }
  return Status::Ok();
}

std::string Delta(double now, double before) {
  if (before == 0 || now == before) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, " (%+.1f %%)", 100 * (now - before) / before);
  return buf;
}

// The findings an edit brought: warnings and errors of `now` that `before` did not have (same rule,
// pointer and message), wherever they point (a misspelt section is reported at the section).
std::string NewFindings(const Evaluation* before, const Evaluation& now) {
  std::string out;
  for (const Diagnostic& d : now.report.diagnostics) {
    if (d.severity == Severity::kNote) continue;
    const bool known = before != nullptr && std::any_of(before->report.diagnostics.begin(),
                                                        before->report.diagnostics.end(), [&](const Diagnostic& b) {
                                                          return b.rule_id == d.rule_id && b.pointer == d.pointer &&
                                                                 b.message == d.message;
                                                        });
    if (known) continue;
    out += std::string("\n  ") + (d.severity == Severity::kError ? "error" : "warning") + "[" + d.rule_id +
           "]: " + d.message;
    if (!d.hint.empty()) out += " (" + d.hint + ")";
  }
  return out;
}

// A bare word that is neither a knob nor a top-level DeepSpeed key but close to a knob.
std::string KnobSuggestion(const std::string& key) {
  if (key.find_first_of("./") != std::string::npos) return "";
  const Json& properties = DeepSpeedConfigSchema()["properties"];
  if (properties.contains(key)) return "";
  const std::string guess = ClosestMatch(key, KnobKeys());
  return guess.empty() ? "" : "\n  note: \"" + key + "\" is not a knob: did you mean " + guess + "?";
}

}  // namespace

const std::vector<std::string>& KnobKeys() {
  static const std::vector<std::string> keys = {"world_size", "nodes",     "gpus_per_node", "pp",
                                                "seq_len",    "recompute", "precision"};
  return keys;
}

bool IsKnobKey(std::string_view key) {
  for (const std::string& k : KnobKeys()) {
    if (k == key) return true;
  }
  return false;
}

Session::Session(std::string config_path, std::string config_text, ModelSpec model, Cluster cluster,
                 PlanKnobs knobs)
    : config_path_(std::move(config_path)),
      original_text_(std::move(config_text)),
      model_(std::move(model)),
      cluster_(std::move(cluster)) {
  Entry first;
  first.knobs = knobs;
  first.what = "open " + config_path_;
  first.evaluation = Evaluate(model_, cluster_, config_path_, original_text_, {}, knobs);
  first.config = first.evaluation->config;
  history_.push_back(std::move(first));
  saved_config_ = ConfigToWrite();
  saved_knobs_ = knobs;
}

std::shared_ptr<const Evaluation> Session::EvaluateState(const Json& config, const PlanKnobs& knobs) const {
  // Diagnostics point into the document as `show config` prints it.
  return Evaluate(model_, cluster_, config_path_, config.dump(2) + "\n", {}, knobs);
}

const Evaluation& Session::EvaluationAt(size_t i) const {
  Entry& e = history_[i];
  if (!e.evaluation) e.evaluation = EvaluateState(e.config, e.knobs);
  return *e.evaluation;
}

size_t Session::evaluations_held() const {
  return static_cast<size_t>(std::count_if(history_.begin(), history_.end(),
                                           [](const Entry& e) { return e.evaluation != nullptr; }));
}

const Evaluation* Session::last_good() const {
  for (size_t i = at_ + 1; i-- > 0;) {
    if (EvaluationAt(i).has_numbers()) return history_[i].evaluation.get();
  }
  return nullptr;
}

Result<std::string> Session::Commit(Json config, PlanKnobs knobs, std::string what) {
  if (config == entry().config && knobs == entry().knobs) return what + ": no change";
  Entry next{std::move(config), knobs, what, nullptr};
  next.evaluation = EvaluateState(next.config, next.knobs);
  // The numbers the edit is compared with (the pinned baseline, else the last good state before
  // the edit) stay alive while history is trimmed.
  std::shared_ptr<const Evaluation> before;
  if (baseline_ && baseline_->evaluation->has_numbers()) before = baseline_->evaluation;
  for (size_t i = at_ + 1; i-- > 0 && !before;) {
    if (EvaluationAt(i).has_numbers()) before = history_[i].evaluation;
  }
  history_.resize(at_ + 1);
  history_.push_back(std::move(next));
  if (history_.size() > kMaxHistory) history_.erase(history_.begin());
  at_ = history_.size() - 1;
  // Let go of the evaluations of all but the newest edits (the first entry keeps its own: its
  // diagnostics point into the file as opened, which a recomputation would not reproduce).
  for (size_t i = 1; i + kHeldEvaluations <= at_; ++i) history_[i].evaluation.reset();
  return what + " -> " + OneLineVerdict(now(), before.get());
}

Result<std::string> Session::Set(std::string_view assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) return Error{"expected KEY=VALUE, got \"" + std::string(assignment) + "\""};
  const std::string key = Trim(assignment.substr(0, eq));
  const std::string value = Trim(assignment.substr(eq + 1));
  if (key.empty()) return Error{"expected KEY=VALUE: the key is empty"};
  auto parsed = ValueOf(value);
  if (!parsed.ok()) return Error{"set " + key + ": " + parsed.error().message};
  return SetAll({{key, std::move(parsed).value()}}, "set " + key + "=" + value);
}

Result<std::string> Session::SetAll(const std::vector<std::pair<std::string, Json>>& assignments, std::string what,
                                    const Adjust& adjust) {
  Json config = entry().config;
  PlanKnobs knobs = entry().knobs;
  std::string suggestions;
  for (const auto& [key, value] : assignments) {
    if (IsKnobKey(key)) {
      if (Status s = ApplyKnob(key, value, knobs, config); !s.ok()) return s.error();
      continue;
    }
    auto pointer = OverridePointer(key);
    if (!pointer.ok()) return pointer.error();
    if (pointer->empty()) return Error{"the whole config cannot be replaced by set: name a key"};
    ApplyOverride(config, Override{*pointer, value});
    suggestions += KnobSuggestion(key);
  }
  if (adjust) adjust(config, knobs, cluster_);
  now();  // evaluated again if undo led to an entry whose evaluation was let go
  const std::shared_ptr<const Evaluation> before = entry().evaluation;
  auto done = Commit(std::move(config), knobs, std::move(what));
  if (done.ok() && before != history_[at_].evaluation) *done += NewFindings(before.get(), now()) + suggestions;
  return done;
}

Result<std::string> Session::Unset(std::string_view key_text) {
  const std::string key = Trim(key_text);
  PlanKnobs knobs = entry().knobs;
  Json config = entry().config;
  if (IsKnobKey(key)) {
    const PlanKnobs defaults;
    if (key == "world_size" || key == "nodes") {
      knobs.world_size = 0;
      knobs.nodes = 0;
    } else if (key == "gpus_per_node") {
      knobs.gpus_per_node = 0;
    } else if (key == "pp") {
      knobs.pp = 1;
    } else if (key == "seq_len") {
      knobs.seq_len = 0;
    } else if (key == "recompute") {
      knobs.recompute = Recompute::kNone;
    } else {
      config.erase("bf16");
      config.erase("fp16");
    }
    return Commit(std::move(config), knobs, "unset " + key);
  }
  auto pointer = OverridePointer(key);
  if (!pointer.ok()) return pointer.error();
  if (pointer->empty()) return Error{"unset needs a key"};
  const Json::json_pointer ptr(*pointer);
  if (!config.contains(ptr)) return Error{key + " is not set"};
  config[ptr.parent_pointer()].erase(ptr.back());
  return Commit(std::move(config), knobs, "unset " + key);
}

Result<std::string> Session::Undo() {
  if (!can_undo()) return Error{"nothing to undo"};
  const std::string what = entry().what;
  --at_;
  return "undid " + what + " -> " + OneLineVerdict(now(), nullptr);
}

Result<std::string> Session::Redo() {
  if (!can_redo()) return Error{"nothing to redo"};
  ++at_;
  return "redid " + entry().what + " -> " + OneLineVerdict(now(), nullptr);
}

void Session::Pin() {
  now();  // the pinned entry keeps its evaluation
  baseline_ = std::make_shared<const Entry>(entry());
}

Json Session::ConfigToWrite() const {
  Json config = entry().config;
  Json note = config.contains("_ds_plan") && config["_ds_plan"].is_object() ? config["_ds_plan"] : Json::object();
  const PlanKnobs& k = entry().knobs;
  SetOrErase(note, "recompute", k.recompute != Recompute::kNone, RecomputeName(k.recompute));
  SetOrErase(note, "pipeline_stages", k.pp > 1, k.pp);
  // The engine's own layout (what tune's _ds_plan carries), so the file simulates as explored.
  const bool other_engine = k.engine.engine != Engine::kDeepSpeed;
  SetOrErase(note, "engine", other_engine, EngineName(k.engine.engine));
  SetOrErase(note, "tensor_model_parallel_size", other_engine && k.megatron_tp > 0, k.megatron_tp);
  SetOrErase(note, "sequence_parallel", other_engine && k.engine.megatron_sp, true);
  SetOrErase(note, "virtual_pipeline_stages", other_engine && k.engine.virtual_stages > 1, k.engine.virtual_stages);
  SetOrErase(note, "pp_schedule_micro_batches", k.engine.pipeline_schedule_micro_batches > 0,
             k.engine.pipeline_schedule_micro_batches);
  SetOrErase(note, "context_parallel_size", k.cp > 1, k.cp);
  SetOrErase(note, "expert_parallel_size", k.ep > 1, k.ep);
  SetOrErase(note, "fp8", k.engine.fp8, true);
  SetOrErase(note, "tp_comm_overlap", k.engine.tp_comm_overlap, true);
  SetOrErase(note, "expert_tensor_parallel_size", k.etp > 0, k.etp);
  SetOrErase(note, "moe_token_dispatcher_type", k.engine.moe_dispatcher == MoeDispatcher::kAllGather, "allgather");
  SetOrErase(note, "moe_grouped_gemm", k.engine.moe_grouped_gemm, true);
  SetOrErase(note, "fp8_param_gather", k.engine.fp8_param_gather, true);
  SetOrErase(note, "bf16_grad_buffer", k.engine.bf16_grad_buffer, true);
  SetOrErase(note, "bf16_optimizer_states", k.engine.bf16_optimizer_states, true);
  SetOrErase(note, "bf16_params", k.engine.bf16_params, true);
  SetOrErase(note, "bf16_loss", k.engine.bf16_loss, true);
  SetOrErase(note, "te_modules", k.engine.te_modules, true);
  SetOrErase(note, "automodel_experts", k.engine.automodel_experts, true);
  SetOrErase(note, "fake_balanced_gate", k.engine.fake_balanced_gate, true);
  SetOrErase(note, "torch_compile", k.engine.torch_compile, true);
  SetOrErase(note, "eager_loss", k.engine.eager_loss, true);
  // What the training script changes (kernels, Liger, TiledMLP, the allocator's setting).
  SetOrErase(note, "attention", k.engine.attention != AttentionKernel::kFramework,
             std::string(AttentionKernelName(k.engine.attention)));
  SetOrErase(note, "fused_loss", k.engine.fused_loss, true);
  SetOrErase(note, "tiled_mlp", k.engine.tiled_mlp, true);
  SetOrErase(note, "expandable_segments", k.engine.expandable_segments, true);
  if (note.empty()) {
    config.erase("_ds_plan");
  } else {
    config["_ds_plan"] = note;
  }
  return config;
}

std::string Session::ConfigTextToWrite() const {
  // Unchanged since it was opened: the file as the user wrote it, comments and key order kept.
  if (at_ == 0 || (entry().config == history_[0].config && entry().knobs == history_[0].knobs)) {
    if (ConfigToWrite() == saved_config_ && written_path_.empty()) return original_text_;
  }
  return ConfigToWrite().dump(2) + "\n";
}

bool Session::dirty() const { return ConfigToWrite() != saved_config_ || !(entry().knobs == saved_knobs_); }

Status Session::Write(const std::string& path, bool force) {
  const DiagnosticCounts counts = Count(now().report.diagnostics);
  if (counts.errors > 0) {
    return Error{"the config has " + std::to_string(counts.errors) + " error" + (counts.errors == 1 ? "" : "s") +
                 " (show diagnostics): fix or undo them first; ds-plan never writes a config DeepSpeed rejects"};
  }
  // The one output policy every writer follows (core/util/file_io.h): no device, FIFO or
  // directory is ever replaced, a link or an existing file only with --force.
  if (path == "-") return Error{"write PATH: name a file (simulate and check read it back)"};
  if (Status s = CheckOutputPath("write", path, force); !s.ok()) return s;
  if (Status s = WriteFileAtomic(path, ConfigTextToWrite(), /*replace=*/force); !s.ok()) return s;
  saved_config_ = ConfigToWrite();
  saved_knobs_ = entry().knobs;
  written_path_ = path;
  return Status::Ok();
}

Result<TuneResult> Session::Tune(int top, const std::function<void(int64_t, int64_t)>& progress) const {
  const PlanKnobs& k = entry().knobs;
  auto world = ResolveWorld(k, cluster_);
  if (!world.ok()) return world.error();
  TuneOptions o;
  o.world_size = world->world_size;
  o.gpus_per_node = world->gpus_per_node;
  o.seq_len = k.seq_len > 0 ? k.seq_len : std::min(kDefaultSeqLen, model_.max_position_embeddings);
  // The batch the user plans for, when the config has one that resolves.
  if (const Evaluation* good = last_good()) o.global_batch = good->samples_per_step();
  o.top = top;
  o.convention = k.convention;
  o.engine = k.engine.engine;
  o.attention = k.engine.attention;
  o.fused_loss = k.engine.fused_loss;
  o.tiled_mlp = k.engine.tiled_mlp;
  o.expandable_segments = k.engine.expandable_segments;
  o.bf16_grad_buffer = k.engine.bf16_grad_buffer;
  o.bf16_optimizer_states = k.engine.bf16_optimizer_states;
  o.bf16_params = k.engine.bf16_params;
  o.bf16_loss = k.engine.bf16_loss;
  o.te_modules = k.engine.te_modules;
  o.automodel_experts = k.engine.automodel_experts;
  o.fake_balanced_gate = k.engine.fake_balanced_gate;
  o.torch_compile = k.engine.torch_compile;
  o.eager_loss = k.engine.eager_loss;
  o.deepspeed_version = k.engine.deepspeed_version;
  return sim::Tune(model_, cluster_, o, progress);
}

Result<std::string> Session::Apply(const TunedPlan& plan) {
  Json c = entry().config;
  PlanKnobs k = entry().knobs;
  const bool megatron = k.engine.framework().megatron_tp();
  // The batch triple: micro and accumulation from the plan, train_batch_size kept consistent when
  // the config states it (tune's own config carries the value DeepSpeed checks against).
  c["train_micro_batch_size_per_gpu"] = plan.micro_batch;
  c["gradient_accumulation_steps"] = plan.grad_accum;
  if (c.contains("train_batch_size")) c["train_batch_size"] = plan.config.value("train_batch_size", Json());
  // Precision.
  if (plan.torch_autocast) {
    c["torch_autocast"] = {{"enabled", true}, {"dtype", "bfloat16"}};
    c.erase("bf16");
    c.erase("fp16");
  } else {
    SetEnabled(c, "bf16", true, true);
    SetEnabled(c, "fp16", false, false);
    if (c.contains("torch_autocast") && c["torch_autocast"].is_object()) c["torch_autocast"]["enabled"] = false;
  }
  // ZeRO and offload.
  if (!c.contains("zero_optimization") || !c["zero_optimization"].is_object()) c["zero_optimization"] = Json::object();
  Json& z = c["zero_optimization"];
  z["stage"] = plan.zero_stage;
  auto offload = [&z](const char* section, bool on) {
    if (on) {
      if (!z.contains(section) || !z[section].is_object()) z[section] = {{"pin_memory", true}};
      z[section]["device"] = "cpu";
    } else if (z.contains(section) && z[section].is_object()) {
      z[section]["device"] = "none";
    }
  };
  offload("offload_optimizer", plan.offload != Offload::kNone);
  offload("offload_param", plan.offload == Offload::kOptimizerAndParams);
  if (plan.cpu_checkpointing) {
    c["activation_checkpointing"]["cpu_checkpointing"] = true;
  } else if (c.contains("activation_checkpointing") && c["activation_checkpointing"].is_object()) {
    c["activation_checkpointing"].erase("cpu_checkpointing");
  }
  // Parallel sizes.
  if (!megatron && plan.tp > 1) {
    c["tensor_parallel"]["autotp_size"] = plan.tp;
  } else {
    c.erase("tensor_parallel");
  }
  // Context parallelism (megatron-lm, fsdp2) is a knob like --cp, not the config's Ulysses.
  const FrameworkProfile& fw = k.engine.framework();
  const bool context_parallel = fw.context_parallel != ContextParallel::kNone;
  SetOrErase(c, "sequence_parallel_size", plan.sp > 1 && !context_parallel, plan.sp);
  if (plan.config.contains("expert_parallel")) {
    if (c.contains("expert_parallel") && c["expert_parallel"].is_object()) {
      c["expert_parallel"]["enabled"] = true;
      c["expert_parallel"]["autoep_size"] = plan.ep;
    } else {
      c["expert_parallel"] = plan.config["expert_parallel"];
    }
  }
  k.pp = plan.pp;
  k.recompute = plan.recompute;
  // --pp-schedule-micro-batches stays where the tuned plan can still run that local batch (a
  // pipeline, a step of whole calls); otherwise the step runs as one call, as tune priced it.
  std::string calls_note;
  if (const int64_t n = k.engine.pipeline_schedule_micro_batches;
      n > 0 && (plan.pp <= 1 || plan.grad_accum % n != 0)) {
    k.engine.pipeline_schedule_micro_batches = 0;
    calls_note = " (pipeline schedule: one call of the step's micro-batches, not calls of " + std::to_string(n) + ")";
  }
  if (megatron) {
    k.megatron_tp = plan.tp;
    k.engine.megatron_sp = plan.megatron_sp;
    k.engine.virtual_stages = plan.virtual_stages;
    k.cp = context_parallel && plan.sp > 1 ? plan.sp : 0;
    k.ep = fw.expert_parallel_flag && plan.ep > 1 ? plan.ep : 0;
    k.engine.fp8 = plan.fp8;
    k.engine.tp_comm_overlap = plan.tp_comm_overlap;
    k.etp = k.ep > 0 && fw.megatron_moe_options ? plan.etp : 0;
    // What tune priced: grouped experts on every Megatron MoE plan, the all-to-all dispatcher, no
    // FP8 parameters.
    k.engine.moe_grouped_gemm = fw.megatron_moe_options && model_.is_moe();
    k.engine.moe_dispatcher = MoeDispatcher::kAllToAll;
    k.engine.fp8_param_gather = false;
    k.engine.cp_comm = ContextParallel::kNone;  // tune priced the engine's default exchange
  }
  const std::string what = "apply tp=" + std::to_string(plan.tp) + " sp=" + std::to_string(plan.sp) +
                           " ep=" + std::to_string(plan.ep) + " pp=" + std::to_string(plan.pp) +
                           " zero=" + std::to_string(plan.zero_stage) + " micro=" + std::to_string(plan.micro_batch) +
                           " accum=" + std::to_string(plan.grad_accum) + " recompute=" +
                           std::string(RecomputeName(plan.recompute)) + calls_note;
  return Commit(std::move(c), k, what);
}

std::string OneLineVerdict(const Evaluation& now, const Evaluation* before) {
  switch (now.outcome) {
    case Evaluation::Outcome::kConfigErrors: {
      const int n = Count(now.report.diagnostics).errors;
      return "invalid: " + std::to_string(n) + " error" + (n == 1 ? "" : "s") + " (show diagnostics)";
    }
    case Evaluation::Outcome::kNoPlan:
    case Evaluation::Outcome::kBadBatch:
    case Evaluation::Outcome::kBadKnobs:
      return "no plan: " + now.message;
    case Evaluation::Outcome::kNumbers:
      break;
  }
  const DiagnosticCounts counts = Count(now.report.diagnostics);
  const bool compare = before != nullptr && before != &now && before->has_numbers();
  std::string out = counts.warnings ? "valid, " + std::to_string(counts.warnings) + " warning" +
                                          (counts.warnings == 1 ? "" : "s")
                                    : std::string("valid");
  out += std::string("; ") + (now.memory.fits ? "FITS" : "DOES NOT FIT") + " peak " + FormatGb(now.memory.peak_bytes) +
         (compare ? Delta(now.memory.peak_bytes, before->memory.peak_bytes) : "");
  char step[64];
  std::snprintf(step, sizeof step, "; step %.3f s", now.time.step_seconds);
  out += step;
  if (compare) out += Delta(now.time.step_seconds, before->time.step_seconds);
  // Tokens per second too: a layout that changes dp changes the samples per step, so step time
  // alone would mislead.
  char tokens[64];
  std::snprintf(tokens, sizeof tokens, ", %.0f tokens/s", now.time.tokens_per_second);
  out += tokens;
  if (compare) out += Delta(now.time.tokens_per_second, before->time.tokens_per_second);
  char mfu[32];
  std::snprintf(mfu, sizeof mfu, ", MFU %.1f %%", 100 * now.time.mfu);
  return out + mfu;
}

}  // namespace dsp::sim
