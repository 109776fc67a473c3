// SPDX-License-Identifier: Apache-2.0
// Rendering of the `ds-plan run` parity report (text for people, JSON for CI).
#include <cstdio>
#include <sstream>

#include "core/json/document.h"
#include "exec/run.h"

namespace dsp::exec {
namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// JSON numbers: round-tripping doubles would make reports differ in the last digit between
// machines; 6 significant digits is far below the tolerances and keeps reports stable.
double Six(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

}  // namespace

std::string FaultName(Fault fault) {
  switch (fault) {
    case Fault::kNone: return "none";
    case Fault::kNoCopyAllreduce: return "no-copy-allreduce";
    case Fault::kSkipTpCancel: return "skip-tp-cancel";
    case Fault::kSumRouterGrads: return "sum-router-grads";
    case Fault::kWrongEpGroup: return "wrong-ep-group";
    case Fault::kExpertGradsOverDp: return "expert-grads-over-dp";
    case Fault::kSkipTpShardOnSave: return "skip-tp-shard-on-save";
    case Fault::kPpStaleActivation: return "pp-stale-activation";
  }
  return "none";
}

bool ParseFault(const std::string& name, Fault* fault) {
  for (Fault f : {Fault::kNone, Fault::kNoCopyAllreduce, Fault::kSkipTpCancel, Fault::kSumRouterGrads,
                  Fault::kWrongEpGroup, Fault::kExpertGradsOverDp, Fault::kSkipTpShardOnSave,
                  Fault::kPpStaleActivation}) {
    if (FaultName(f) == name) {
      *fault = f;
      return true;
    }
  }
  return false;
}

std::string DtypeName(Dtype dtype) { return dtype == Dtype::kBf16 ? "bf16" : "fp32"; }

bool ParseDtype(const std::string& name, Dtype* dtype) {
  if (name == "fp32" || name == "bf16") {
    *dtype = name == "bf16" ? Dtype::kBf16 : Dtype::kFp32;
    return true;
  }
  return false;
}

Tolerances DefaultTolerances(Dtype dtype) {
  if (dtype == Dtype::kBf16) return Tolerances{0.125, 1e-3};  // 2^-7 x 16; docs/exec.md "bf16"
  return Tolerances{};
}

bool HaveTorch() {
#ifdef DSP_HAVE_TORCH
  return true;
#else
  return false;
#endif
}

bool HaveNccl() {
#ifdef DSP_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

namespace {

std::string TinyLine(const TinyConfig& t, const RunReport& r) {
  std::ostringstream out;
  out << "tiny model: " << t.layers << " layers, hidden " << t.hidden << ", heads " << t.heads << "/" << t.kv_heads
      << " kv, mlp " << t.intermediate;
  if (t.is_moe()) out << ", " << t.experts << " experts top-" << t.top_k;
  out << ", batch " << t.micro_batch << "x" << t.seq_len << " per replica, SGD, " << r.steps << " steps, seed "
      << r.seed << "\n";
  return out.str();
}

// The step blocks and the verdict line of one model.
std::string ParityText(const ModelParity& m) {
  const std::vector<std::string>&first_failing = m.first_failing_families, &failing = m.failing_families;
  std::ostringstream out;
  for (const auto& s : m.step_reports) {
    out << "step " << s.step << ": loss " << Num(s.loss) << " reference " << Num(s.ref_loss) << " diff "
        << Num(s.loss - s.ref_loss) << (s.loss_ok ? "" : "  FAIL") << "\n";
    for (const auto& f : s.families) {
      char line[256];
      std::snprintf(line, sizeof line, "  %-15s grad max abs %-9s rel %-9s  weight max abs %-9s rel %-9s %s\n",
                    f.family.c_str(), Num(f.grad_max_abs).c_str(), Num(f.grad_max_rel()).c_str(),
                    Num(f.weight_max_abs).c_str(), Num(f.weight_max_rel()).c_str(), f.ok ? "ok" : "FAIL");
      out << line;
    }
  }
  if (m.ok) {
    out << "parity: ok (" << m.step_reports.size() << " steps, every family within tolerance)\n";
  } else {
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
      return s;
    };
    out << "parity: FAILED at step " << m.first_failing_step;
    if (!first_failing.empty()) out << " in " << join(first_failing);
    if (first_failing.empty() && !m.loss_ok) out << " in the loss";
    if (failing != first_failing && !failing.empty()) out << " (over all steps: " << join(failing) << ")";
    out << "\n";
  }
  return out.str();
}

Json TinyJson(const TinyConfig& t) {
  return {{"model_type", t.model_type}, {"layers", t.layers}, {"hidden", t.hidden},
          {"heads", t.heads}, {"kv_heads", t.kv_heads}, {"head_dim", t.head_dim},
          {"intermediate", t.intermediate}, {"vocab", t.vocab},
          {"experts", t.experts}, {"top_k", t.top_k},
          {"seq_len", t.seq_len}, {"micro_batch", t.micro_batch}};
}

Json StepsJson(const std::vector<StepParity>& step_reports) {
  Json steps = Json::array();
  for (const auto& s : step_reports) {
    Json fams = Json::array();
    for (const auto& f : s.families) {
      fams.push_back({{"family", f.family},
                      {"grad_max_abs", Six(f.grad_max_abs)},
                      {"grad_max_rel", Six(f.grad_max_rel())},
                      {"weight_max_abs", Six(f.weight_max_abs)},
                      {"weight_max_rel", Six(f.weight_max_rel())},
                      {"ok", f.ok}});
    }
    steps.push_back({{"step", s.step},
                     {"loss", Six(s.loss)},
                     {"reference_loss", Six(s.ref_loss)},
                     {"loss_diff", Six(s.loss - s.ref_loss)},
                     {"loss_ok", s.loss_ok},
                     {"families", fams},
                     {"ok", s.ok}});
  }
  return steps;
}

Json FirstFailure(int step, const std::vector<std::string>& families) {
  return step == 0 ? Json(nullptr) : Json{{"step", step}, {"families", families}};
}

// One model's fields of the JSON report (the top level for the first model, each companion's).
void AddModelJson(const ModelParity& m, Json& out) {
  out["model"] = m.model_label;
  out["tiny_model"] = TinyJson(m.tiny);
  out["step_reports"] = StepsJson(m.step_reports);
  out["failing_families"] = m.failing_families;
  out["first_failure"] = FirstFailure(m.first_failing_step, m.first_failing_families);
  out["loss_ok"] = m.loss_ok;
}

}  // namespace

std::string RenderRunText(const RunReport& r) {
  std::ostringstream out;
  out << "ds-plan run: " << r.mode << " on " << r.world_size << " ranks (" << r.backend << "), model "
      << r.main.model_label << "\n";
  out << TinyLine(r.main.tiny, r);
  if (r.fault != "none") out << "injected fault: " << r.fault << "\n";
  out << "dtype: " << r.dtype << " (sharded and reference; communication " << r.comm_dtype << ")\n";
  if (r.resumed_from_step > 0) out << "resumed: from step " << r.resumed_from_step << " of a checkpoint\n";
  if (!r.saved_to.empty()) out << "saved: " << r.saved_to << "\n";
  if (r.pp > 1) {
    out << "pipeline: " << r.pp << " stages, " << r.micro_batches << " micro-batches per step, DeepSpeed's "
        << "TrainSchedule: " << r.schedule_steps << " schedule steps and " << r.pipe_transfers
        << " activation/gradient transfers between neighbouring stages per step\n";
  }
  if (r.recompute != "none") {
    out << "recompute: " << r.recompute << " (every decoder layer of the sharded model; " << r.recomputed_layers
        << " layers recomputed in backward, " << r.offloaded_inputs << " inputs kept in host copies, rank 0)\n";
  }
  out << "tolerance: |diff| <= " << Num(r.tolerances.atol) << " + " << Num(r.tolerances.rtol)
      << " * max|reference| (" << r.dtype << ")\n";
  out << ParityText(r.main);
  // Companion models (--model twice): each model's own block, after the first.
  for (const ModelParity& c : r.companions) {
    out << "second model: " << c.model_label << "\n" << TinyLine(c.tiny, r) << ParityText(c);
  }
  return out.str();
}

std::string RenderRunJson(const RunReport& r) {
  Json root = Json::object();
  root["schema_version"] = 2;
  root["world_size"] = r.world_size;
  root["backend"] = r.backend;
  root["mode"] = r.mode;
  root["sizes"] = {{"tp", r.tp}, {"dp", r.dp}, {"sp", r.sp}, {"ep", r.ep}, {"pp", r.pp}, {"zero_stage", r.zero_stage}};
  root["pipeline"] = r.pp > 1 ? Json{{"stages", r.pp},
                                     {"micro_batches", r.micro_batches},
                                     {"schedule_steps", r.schedule_steps},
                                     {"transfers_per_step", r.pipe_transfers}}
                              : Json(nullptr);
  root["fault"] = r.fault;
  root["steps"] = r.steps;
  root["seed"] = r.seed;
  root["plan_hash"] = r.plan_hash;
  root["dtype"] = r.dtype;
  root["communication"] = r.comm_dtype;
  root["resumed_from_step"] = r.resumed_from_step;
  root["saved_to"] = r.saved_to;
  root["recompute"] = {{"mode", r.recompute}, {"recomputed_layers", r.recomputed_layers},
                       {"offloaded_inputs", r.offloaded_inputs}};
  root["tolerances"] = {{"dtype", r.dtype}, {"rtol", r.tolerances.rtol}, {"atol", r.tolerances.atol}};
  AddModelJson(r.main, root);
  Json companions = Json::array();
  for (const ModelParity& c : r.companions) {
    Json one = Json::object();
    AddModelJson(c, one);
    one["ok"] = c.ok;
    companions.push_back(std::move(one));
  }
  root["companions"] = companions;
  root["ok"] = r.ok;
  return root.dump(2) + "\n";
}

double BusBandwidthFactor(const std::string& collective, int n) {
  if (n <= 1) return 0.0;
  if (collective == "all_reduce") return 2.0 * (n - 1) / n;
  if (collective == "broadcast") return 1.0;
  return static_cast<double>(n - 1) / n;  // all_gather, reduce_scatter, all_to_all
}

std::string RenderBenchText(const RunReport& r) {
  std::ostringstream out;
  out << "ds-plan run --bench: " << r.mode << " on " << r.world_size << " ranks (" << r.backend
      << "); sizes and bandwidths as nccl-tests defines them\n";
  char line[320];
  std::snprintf(line, sizeof line, "%-6s %-5s %-15s %10s %11s %12s %12s  %s\n", "group", "size", "collective", "bytes",
                "time (us)", "algbw GB/s", "busbw GB/s", "algorithm");
  out << line;
  for (const auto& b : r.bench) {
    std::snprintf(line, sizeof line, "%-6s %-5zu %-15s %10lld %11.1f %12.3f %12.3f  %s\n", b.group_kind.c_str(),
                  b.group.size(), b.collective.c_str(), static_cast<long long>(b.bytes), b.seconds * 1e6,
                  b.algbw_bytes_per_second / 1e9, b.busbw_bytes_per_second / 1e9, b.algorithm.c_str());
    out << line;
  }
  return out.str();
}

std::string RenderBenchJson(const RunReport& r) {
  Json root = Json::object();
  root["schema_version"] = 1;
  root["world_size"] = r.world_size;
  root["backend"] = r.backend;
  root["mode"] = r.mode;
  Json rows = Json::array();
  for (const auto& b : r.bench) {
    rows.push_back({{"group_kind", b.group_kind},
                    {"group", b.group},
                    {"collective", b.collective},
                    {"algorithm", b.algorithm},
                    {"bytes", b.bytes},
                    {"seconds", b.seconds},
                    {"algbw_bytes_per_second", b.algbw_bytes_per_second},
                    {"busbw_bytes_per_second", b.busbw_bytes_per_second}});
  }
  root["results"] = rows;
  return root.dump(2) + "\n";
}

}  // namespace dsp::exec
