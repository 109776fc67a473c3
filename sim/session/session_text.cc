// SPDX-License-Identifier: Apache-2.0
#include "sim/session/session_text.h"

#include <cstdio>
#include <map>

#include "core/report/groups_report.h"
#include "core/report/validate_report.h"
#include "sim/comm/collectives.h"
#include "sim/report/error_band.h"
#include "sim/report/simulate_report.h"

namespace dsp::sim {
namespace {

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}


// "  12.34 GB  (+1.20)" with the baseline's delta when there is one.
std::string WithDelta(double now, const double* before, const char* fmt, double scale = 1) {
  std::string out = Format(fmt, now / scale);
  if (before != nullptr && *before != now) {
    out += "  (" + std::string(now > *before ? "+" : "") + Format(fmt, (now - *before) / scale) + ")";
  }
  return out;
}

// The evaluation a numbers view shows: the current one, else the last valid one, with a line
// saying so in `out` (nullptr: no valid plan yet).
const Evaluation* Shown(const Session& s, std::string* out) {
  const Evaluation& now = s.now();
  if (now.has_numbers()) return &now;
  const Evaluation* shown = s.last_good();
  *out += "no numbers for the current config: " + OneLineVerdict(now, nullptr) + "\n";
  if (shown != nullptr) *out += "showing the last valid plan (" + LayoutLine(*shown) + ")\n";
  return shown;
}


}  // namespace

std::string LayoutLine(const Evaluation& e) {
  const LayoutSummary& l = e.report.layout;
  auto v = [](const std::optional<int64_t>& x) { return x ? std::to_string(*x) : std::string("?"); };
  std::string out = "world " + std::to_string(e.world_size);
  if (e.gpus_per_node > 0 && e.world_size % e.gpus_per_node == 0) {
    out += " (" + std::to_string(e.world_size / e.gpus_per_node) + " x " + std::to_string(e.gpus_per_node) + ")";
  }
  out += ": tp=" + v(l.tp) + " dp=" + v(l.dp) + " sp=" + v(l.sp) + " pp=" + v(l.pp);
  if (l.ep && *l.ep > 1) out += " ep=" + v(l.ep) + " etp=" + v(l.etp) + " edp=" + v(l.edp);
  return out + " zero=" + v(l.zero_stage);
}

std::string RenderSummary(const Session& s) {
  const Evaluation& e = s.now();
  std::string out = "config   " + s.config_path() + (s.dirty() ? " (edited, not written)" : "") + "\n";
  out += "model    " + s.model().model_type + ", " + Format("%.2f B parameters", CountParameters(s.model()).total / 1e9) +
         "\n";
  out += "cluster  " + s.cluster().name + "\n";
  out += "layout   " + LayoutLine(e) + "\n";
  out += "verdict  " + OneLineVerdict(e, s.baseline()) + "\n";
  const Evaluation* shown = e.has_numbers() ? &e : s.last_good();
  if (shown != nullptr) {
    const TimeReport& t = shown->time;
    out += "step     " + Format("%.3f s", t.step_seconds) + ", " + Format("%.0f tokens/s", t.tokens_per_second) +
           ", MFU " + Format("%.1f %%", 100 * t.mfu) + "; seq " + std::to_string(shown->input.workload.seq_len) +
           ", micro batch " + std::to_string(shown->micro_batch) + " x " + std::to_string(shown->grad_accum) +
           " micro-steps, recompute " + std::string(RecomputeName(shown->input.workload.recompute)) +
           (shown != &e ? "  [last valid plan]" : "") + "\n";
    const Accuracy accuracy = AccuracyFor(shown->input.engine.engine, shown->cluster.gpu);
    out += "accuracy step " + BandText(accuracy, false) + "; peak " + BandText(accuracy, true) + "\n";
  }
  for (const std::string& note : e.notes) out += "note     " + note + "\n";
  if (s.baseline() != nullptr) out += "baseline " + LayoutLine(*s.baseline()) + " (pinned; `diff` compares)\n";
  return out;
}

std::string RenderMemory(const Session& s) {
  std::string out;
  const Evaluation* e = Shown(s, &out);
  if (e == nullptr) return out;
  const MemoryReport& m = e->memory;
  const Evaluation* base = s.baseline() != nullptr && s.baseline()->has_numbers() ? s.baseline() : nullptr;
  const MemoryReport* b = base ? &base->memory : nullptr;
  out += "memory per rank (GB = 1e9 bytes)" + std::string(b ? ", (delta against the baseline)" : "") + "\n";
  const std::pair<const char*, double MemoryReport::*> rows[] = {
      {"parameters", &MemoryReport::parameters_bytes},
      {"gradients", &MemoryReport::gradients_bytes},
      {"optimizer states", &MemoryReport::optimizer_states_bytes},
      {"activations", &MemoryReport::activations_bytes},
      {"buffers", &MemoryReport::buffers_bytes},
      {"peak", &MemoryReport::peak_bytes},
      {"allowance", &MemoryReport::allowance_bytes},
      {"HBM", &MemoryReport::hbm_bytes},
      {"offloaded to host", &MemoryReport::cpu_bytes}};
  for (const auto& [name, field] : rows) {
    const double before = b ? (*b).*field : 0;
    out += "  " + Pad(name, 20) + WithDelta(m.*field, b ? &before : nullptr, "%8.2f", 1e9) + "\n";
  }
  if (!e->stage_peak_bytes.empty()) {
    out += "  (pipeline stage " + std::to_string(m.pipeline_stage) + ", the most loaded; " +
           std::to_string(m.in_flight_micro_batches) + " micro-batches in flight)\n  peak by stage:";
    for (size_t i = 0; i < e->stage_peak_bytes.size(); ++i) {
      out += " " + std::to_string(i) + ":" + Format("%.2f", e->stage_peak_bytes[i] / 1e9);
    }
    out += " GB\n";
  }
  // Ranks differ by family only when routed experts are partitioned over their own group.
  if (s.model().is_moe()) {
    out += "  by family          parameters   gradients   optimizer   (experts over edp " +
           std::to_string(m.expert_zero_group_size) + ", dense over " + std::to_string(m.zero_group_size) + ")\n";
    for (const auto& [family, fm] : m.by_family) {
      if (fm.parameters_bytes + fm.gradients_bytes + fm.optimizer_states_bytes == 0) continue;
      out += "  " + Pad(std::string(ParamFamilyName(family)), 18) + Format("%10.2f", fm.parameters_bytes / 1e9) +
             Format("%12.2f", fm.gradients_bytes / 1e9) + Format("%12.2f", fm.optimizer_states_bytes / 1e9) + "\n";
    }
  }
  const double need = m.peak_bytes + m.allowance_bytes;
  out += std::string("  verdict: ") + (m.fits ? "FITS" : "DOES NOT FIT") + ": peak + allowance " +
         Format("%.2f", need / 1e9) + " of " + Format("%.2f", m.hbm_bytes / 1e9) + " GB HBM" +
         (m.host_fits ? "" : "; host memory of the node exceeded") + "\n";
  return out;
}

std::string RenderTime(const Session& s) {
  std::string out;
  const Evaluation* e = Shown(s, &out);
  if (e == nullptr) return out;
  const TimeReport& t = e->time;
  const Evaluation* base = s.baseline() != nullptr && s.baseline()->has_numbers() ? s.baseline() : nullptr;
  std::map<std::string, double> before;
  if (base) {
    before["compute"] = base->time.compute_seconds;
    for (const auto& [kind, secs] : ExposedByKind(base->time)) before["exposed " + kind] = secs;
    before["CPU offload"] = base->time.offload_seconds;
    before["pipeline bubble"] = base->time.pipeline_bubble_seconds;
    before["step"] = base->time.step_seconds;
  }
  auto row = [&](const std::string& name, double secs) {
    auto it = before.find(name);
    const double b = it != before.end() ? it->second : 0;
    if (secs == 0 && b == 0 && name != "step") return;  // a kind this plan and the baseline lack
    out += "  " + Pad(name, 26) + Format("%10.3f s", secs) +
           Format("%8.1f %%", t.step_seconds > 0 ? 100 * secs / t.step_seconds : 0);
    if (base && b != secs) out += Format("   (%+.3f s)", secs - b);
    out += "\n";
  };
  out += "step time" + std::string(base ? " (delta against the baseline)" : "") + "\n";
  row("compute", t.compute_seconds);
  for (const auto& [kind, secs] : ExposedByKind(t)) row("exposed " + kind, secs);
  if (t.offload_seconds > 0) row("CPU offload", t.offload_seconds);
  if (t.pipeline_bubble_seconds > 0) row("pipeline bubble", t.pipeline_bubble_seconds);
  row("step", t.step_seconds);
  out += "  " + Format("%.0f tokens/s", t.tokens_per_second) + ", MFU " + Format("%.1f %%", 100 * t.mfu) +
         (base ? ", baseline MFU " + Format("%.1f %%", 100 * base->time.mfu) : "") + "\n";
  return out;
}

std::string RenderCollectives(const Session& s) {
  std::string out;
  const Evaluation* e = Shown(s, &out);
  if (e == nullptr) return out;
  out += "  " + Pad("purpose", 32) + Pad("kind", 15) + Pad("group", 6) + Pad("ranks", 6) + Pad("bytes/call", 12) +
         Pad("calls", 8) + Pad("link", 6) + Pad("seconds", 11) + "exposed\n";
  for (const CollectiveCall& c : e->time.collectives) {
    out += "  " + Pad(std::string(c.purpose), 32) + Pad(std::string(CollectiveKindName(c.kind)), 15) +
           Pad(std::string(GroupKindName(c.group)), 6) + Pad(std::to_string(c.group_size), 6) +
           Pad(Format("%.1f MB", c.bytes_per_call / 1e6), 12) + Pad(Format("%.0f", c.calls_per_step), 8) +
           Pad(c.inter_node ? "inter" : "intra", 6) + Pad(Format("%.3f s", c.seconds), 11) +
           Format("%.3f s", c.exposed_seconds) + "\n";
  }
  if (e->time.collectives.empty()) out += "  (no collectives: one rank, nothing to exchange)\n";
  return out;
}

std::string RenderRankGroups(const Session& s, int64_t rank) {
  std::string out;
  const Evaluation* e = Shown(s, &out);
  if (e == nullptr) return out;
  if (rank < 0 || rank >= e->world_size) {
    return out + "rank " + std::to_string(rank) + " is outside the world (0.." + std::to_string(e->world_size - 1) +
           ")\n";
  }
  GroupsView view;
  view.rank = static_cast<int>(rank);
  return out + RenderGroups(e->plan, GroupsFormat::kTable, view);
}

std::string RenderDiagnostics(const Session& s) {
  const Evaluation& e = s.now();
  if (e.report.diagnostics.empty()) return s.config_path() + ": valid (no findings)\n";
  std::string out = RenderText({e.report}, TextStyle::kPlain);
  if (!e.message.empty()) out += "no plan: " + e.message + "\n";
  return out;
}

std::string RenderDiff(const Session& s) {
  const Evaluation* base = s.baseline();
  if (base == nullptr) return "no baseline: `pin` the current plan first\n";
  const Evaluation& e = s.now();
  std::string out = "baseline " + LayoutLine(*base) + "\nnow      " + LayoutLine(e) + "\n";
  if (base->has_numbers() && e.has_numbers()) {
    auto line = [&](const char* name, double now, double before, const char* fmt, double scale) {
      out += "  " + Pad(name, 14) + Pad(Format(fmt, before / scale), 14) + " -> " + Pad(Format(fmt, now / scale), 14) +
             (before != 0 && now != before ? Format("%+.1f %%", 100 * (now - before) / before) : "") + "\n";
    };
    line("peak GB", e.memory.peak_bytes, base->memory.peak_bytes, "%.2f", 1e9);
    line("step s", e.time.step_seconds, base->time.step_seconds, "%.3f", 1);
    line("tokens/s", e.time.tokens_per_second, base->time.tokens_per_second, "%.0f", 1);
    line("MFU %", 100 * e.time.mfu, 100 * base->time.mfu, "%.1f", 1);
    out += std::string("  fits          ") + (base->memory.fits ? "yes" : "no") + " -> " +
           (e.memory.fits ? "yes" : "no") + "\n";
  } else {
    out += "  verdict       " + OneLineVerdict(*base, nullptr) + " -> " + OneLineVerdict(e, nullptr) + "\n";
  }
  const Json patch = Json::diff(*s.baseline_config(), s.config());
  if (patch.empty()) {
    out += "config: unchanged\n";
  } else {
    out += "config changes (JSON patch, RFC 6902):\n";
    for (const Json& op : patch) {
      out += "  " + op["op"].get<std::string>() + " " + op["path"].get<std::string>();
      if (op.contains("value")) out += " " + op["value"].dump();
      out += "\n";
    }
  }
  return out;
}

std::string RenderTune(const TuneResult& r) {
  std::string out = std::to_string(r.evaluated) + " plans evaluated, " + std::to_string(r.fitting) + " fit, " +
                    std::to_string(r.valid) + " valid; global batch " + std::to_string(r.global_batch) +
                    " samples\n";
  if (r.plans.empty()) return out + "no plan fits: more GPUs, offload or a shorter sequence\n";
  // As `ds-plan tune` prints them: "full+cpu" is full recompute with the checkpointed layer inputs
  // in host memory (activation_checkpointing.cpu_checkpointing); autocast is torch_autocast.
  out += "   #  tp  sp  ep  pp zero offload           prec     micro accum recompute   peak GB    step s  tokens/s   MFU\n";
  for (size_t i = 0; i < r.plans.size(); ++i) {
    const TunedPlan& p = r.plans[i];
    char buf[256];
    const std::string recompute = std::string(RecomputeName(p.recompute)) + (p.cpu_checkpointing ? "+cpu" : "");
    std::snprintf(buf, sizeof buf, "  %2zu %3lld %3lld %3lld %3lld %4d %-17s %-8s %5lld %5lld %-9s %9.2f %9.3f %9.0f %5.1f%%\n",
                  i + 1, static_cast<long long>(p.tp), static_cast<long long>(p.sp), static_cast<long long>(p.ep),
                  static_cast<long long>(p.pp), p.zero_stage, std::string(OffloadName(p.offload)).c_str(),
                  p.torch_autocast ? "autocast" : "bf16", static_cast<long long>(p.micro_batch),
                  static_cast<long long>(p.grad_accum), recompute.c_str(), p.peak_bytes / 1e9, p.rank_seconds(),
                  p.tokens_per_second, 100 * p.mfu);
    out += buf;
  }
  return out + "`apply N` makes the config realise plan N\n";
}

}  // namespace dsp::sim
