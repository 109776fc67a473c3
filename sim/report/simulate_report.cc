// SPDX-License-Identifier: Apache-2.0
// Text and JSON renderings of a simulate run. Sizes are decimal (1 GB = 1e9 bytes) because the
// cluster file and GPU datasheets are; seconds switch to ms / us so small collectives stay legible.
#include "sim/report/simulate_report.h"

#include "sim/report/error_band.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <utility>

#include "core/report/validate_report.h"
#include "core/util/text.h"

namespace dsp::sim {
namespace {

constexpr CollectiveKind kAllKinds[] = {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                                        CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll,
                                        CollectiveKind::kBroadcast, CollectiveKind::kSendRecv};

std::string GbValue(double bytes) { return FormatNumber("%.2f", bytes / 1e9); }

// Bytes with a unit that keeps three significant figures readable: "512 B", "64.0 MB", "1.20 GB".
std::string HumanBytes(double bytes) {
  if (bytes < 1e3) return FormatNumber("%.0f B", bytes);
  if (bytes < 1e6) return FormatNumber("%.1f KB", bytes / 1e3);
  if (bytes < 1e9) return FormatNumber("%.1f MB", bytes / 1e6);
  return FormatNumber("%.2f GB", bytes / 1e9);
}

std::string HumanSeconds(double s) {
  if (s == 0) return "0";
  if (s < 1e-3) return FormatNumber("%.1f us", s * 1e6);
  if (s < 1) return FormatNumber("%.2f ms", s * 1e3);
  return FormatNumber("%.3f s", s);
}

std::string HumanCount(double n) {
  if (n >= 1e9) return FormatNumber("%.2f B", n / 1e9);
  if (n >= 1e6) return FormatNumber("%.2f M", n / 1e6);
  return FormatNumber("%.0f", n);
}

std::string PercentSpaced(double fraction) { return FormatNumber("%.1f %%", fraction * 100); }

// Pads or right-aligns to a column width.
std::string Left(const std::string& s, size_t w) { return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' '); }
std::string Right(const std::string& s, size_t w) { return s.size() >= w ? " " + s : std::string(w - s.size(), ' ') + s; }

std::string LayoutText(const LayoutSummary& l) {
  auto f = [](const char* k, const std::optional<int64_t>& v) {
    return std::string(k) + "=" + (v ? std::to_string(*v) : "?");
  };
  std::string out = l.world_size ? "world " + std::to_string(*l.world_size) + ": " : "world ?: ";
  out += f("tp", l.tp) + " " + f("dp", l.dp) + " " + f("sp", l.sp) + " " + f("pp", l.pp);
  if (l.ep && *l.ep > 1) out += " " + f("ep", l.ep) + " " + f("etp", l.etp) + " " + f("edp", l.edp);
  return out + " " + f("zero", l.zero_stage);
}

void RenderHeader(const SimulateResult& r, std::ostringstream& out) {
  const Cluster& c = *r.cluster;
  int64_t nodes = r.gpus_per_node > 0 ? (r.world_size + r.gpus_per_node - 1) / r.gpus_per_node : 1;
  int64_t tokens = r.samples_per_step * r.workload.seq_len;
  out << "simulate " << r.config_path << "\n";
  out << "  model    " << r.model_type << ", " << HumanCount(static_cast<double>(r.params.total))
      << " parameters, " << HumanCount(static_cast<double>(r.params.active_per_token))
      << " active per token (" << r.model_path << ")\n";
  for (const std::string& part : r.model_left_out) {
    out << "  left out " << part;
    if (r.params.mtp > 0 && part.find("multi-token") != std::string::npos) {
      out << ": " << HumanCount(static_cast<double>(r.params.mtp)) << " parameters";
    }
    out << "\n";
  }
  out << "  cluster  " << c.name << ": " << r.gpus_per_node << " x " << c.gpu.name << " per node, " << nodes
      << (nodes == 1 ? " node" : " nodes") << "\n";
  out << "  layout   " << LayoutText(r.layout) << "\n";
  out << "  step     seq " << r.workload.seq_len << ", micro batch " << r.workload.micro_batch << ", "
      << r.workload.grad_accum << (r.workload.grad_accum == 1 ? " micro-step" : " micro-steps") << ": "
      << r.samples_per_step << " samples, " << tokens << " tokens per step; recompute "
      << RecomputeName(r.workload.recompute) << ", convention " << ConventionName(r.workload.convention)
      << "\n";
  // The attention kernel changes the step by up to 2x (FlashAttention-2 against cuDNN's on
  // Hopper): always shown, as resolved for this engine and GPU.
  out << "  engine   " << EngineName(r.engine.engine);
  if (r.engine.megatron_sp) out << ", Megatron SP";
  if (r.engine.virtual_stages > 1) out << ", " << r.engine.virtual_stages << " virtual stages";
  if (const int64_t n = r.engine.pipeline_schedule_micro_batches; n > 0) {
    const int64_t calls = r.engine.pipeline_schedule_calls(r.workload.grad_accum);
    out << ", " << calls << (calls == 1 ? " pipeline schedule call" : " pipeline schedule calls") << " of " << n
        << (n == 1 ? " micro-batch" : " micro-batches");
  }
  out << ", attention " << AttentionKernelName(r.engine.attention);
  if (r.engine.fused_loss) out << ", fused loss";
  if (r.engine.tiled_mlp) out << ", tiled MLP";
  if (r.engine.expandable_segments) out << ", expandable segments";
  out << "\n";
  for (const auto& n : r.notes) out << "  note: " << n << "\n";
}

void MemorySection(const SimulateResult& r, std::ostringstream& out) {
  const MemoryReport& m = r.memory;
  out << "\nMemory per rank (GB = 1e9 bytes";
  if (r.layout.pp && *r.layout.pp > 1) out << "; pipeline stage " << m.pipeline_stage << ", the most loaded";
  out << ")\n";
  const std::pair<const char*, double> rows[] = {
      {"parameters", m.parameters_bytes},   {"gradients", m.gradients_bytes},
      {"optimizer states", m.optimizer_states_bytes}, {"activations", m.activations_bytes},
      {"buffers", m.buffers_bytes},         {"peak", m.peak_bytes}};
  for (const auto& [label, bytes] : rows) {
    out << "  " << Left(label, 18) << Right(GbValue(bytes), 10) << "\n";
  }
  if (m.reserved_peak_bytes > m.peak_bytes) {
    out << "  " << Left("reserved", 18) << Right(GbValue(m.reserved_peak_bytes), 10)
        << "   what the caching allocator holds: " << GbValue(m.loss_cached_bytes)
        << " GB more, freed blocks too small for the loss's gradients\n";
  }
  if (m.cpu_bytes > 0) {
    out << "  " << Left("offloaded to CPU", 18) << Right(GbValue(m.cpu_bytes), 10);
    if (m.host_memory_bytes > 0) {
      out << "   (node: " << GbValue(m.node_host_bytes) << " of " << GbValue(m.host_memory_bytes) << " GB host memory)";
    }
    out << "\n";
  }
  if (m.zero3_saved_weights_bytes > 0) {
    out << "  " << Left("  of activations:", 18) << Right(GbValue(m.zero3_saved_weights_bytes), 10)
        << "   ZeRO-3's gathered expert weights, held by autograd until backward\n";
  }
  if (m.hpz_secondary_bytes > 0) {
    out << "  " << Left("  of parameters:", 18) << Right(GbValue(m.hpz_secondary_bytes), 10)
        << "   the hpZ secondary partition\n";
  }
  if (m.optimizer_step_peak_bytes > 0 && m.optimizer_step_peak_bytes >= m.peak_bytes) {
    out << "  note: the peak is the optimizer step's: " << GbValue(m.optimizer_step_transient_bytes)
        << " GB of gradients flattened and cast to fp32 on top of the model states\n";
  }

  out << "\n  " << Left("family", 18) << Right("parameters", 12) << Right("gradients", 12) << Right("optimizer", 12)
      << "\n";
  for (ParamFamily fam : kAllParamFamilies) {
    auto p = r.params.by_family.find(fam);
    if (p == r.params.by_family.end() || p->second == 0) continue;  // the model has none
    FamilyMemory fm;
    if (auto it = m.by_family.find(fam); it != m.by_family.end()) fm = it->second;
    out << "  " << Left(std::string(ParamFamilyName(fam)), 18) << Right(GbValue(fm.parameters_bytes), 12)
        << Right(GbValue(fm.gradients_bytes), 12) << Right(GbValue(fm.optimizer_states_bytes), 12) << "\n";
  }

  double hbm = m.hbm_bytes;
  const double needed = m.peak_bytes + m.allowance_bytes;
  // The allowance (fragmentation, CUDA context, NCCL) is part of the verdict: say so when present.
  const std::string allowance =
      m.allowance_bytes > 0 ? " + " + GbValue(m.allowance_bytes) + " GB allowance" : std::string();
  if (!m.host_fits) {
    out << "\n  verdict: DOES NOT FIT: the " << m.node_host_bytes / std::max(m.cpu_bytes, 1.0)
        << " ranks of a node need " << GbValue(m.node_host_bytes) << " GB of host memory, the node has "
        << GbValue(m.host_memory_bytes) << " GB\n";
  } else if (m.fits) {
    out << "\n  verdict: FITS: peak " << GbValue(m.peak_bytes) << " GB" << allowance << " of " << GbValue(hbm)
        << " GB HBM (" << FormatNumber("%.0f %%", hbm > 0 ? 100 * needed / hbm : 0) << "), "
        << GbValue(hbm - needed) << " GB free\n";
  } else {
    out << "\n  verdict: DOES NOT FIT: peak " << GbValue(m.peak_bytes) << " GB" << allowance << " exceeds "
        << GbValue(hbm) << " GB HBM by " << GbValue(needed - hbm) << " GB\n";
  }
  if (r.cluster != nullptr) {
    out << "  accuracy " << BandText(AccuracyFor(r.engine.engine, r.cluster->gpu), true) << "\n";
  }
}

void TimeSection(const SimulateResult& r, std::ostringstream& out) {
  const TimeReport& t = r.time;
  out << "\nStep time\n";
  out << "  step " << HumanSeconds(t.step_seconds) << ", " << FormatNumber("%.0f", t.tokens_per_second)
      << " tokens/s, MFU " << PercentSpaced(t.mfu) << "\n";
  if (r.cluster != nullptr) out << "  accuracy " << BandText(AccuracyFor(r.engine.engine, r.cluster->gpu), false) << "\n";
  out << "\n";
  out << "  " << Left("breakdown", 28) << Right("seconds", 12) << Right("share", 10) << "\n";
  auto row = [&](const std::string& label, double s) {
    double share = t.step_seconds > 0 ? s / t.step_seconds : 0;
    out << "  " << Left(label, 28) << Right(HumanSeconds(s), 12) << Right(PercentSpaced(share), 10) << "\n";
  };
  row("compute", t.compute_seconds - t.host_wait_seconds);
  // A phase whose kernels are shorter than the host takes to issue them (the cluster's host figures).
  if (t.host_wait_seconds > 0) row("GPU waiting on the host", t.host_wait_seconds);
  double exposed = 0;
  for (const auto& [kind, s] : ExposedByKind(t)) {
    exposed += s;
    if (s > 0) row("exposed " + kind, s);
  }
  if (t.offload_seconds > 0) row("CPU offload (PCIe, CPU Adam)", t.offload_seconds);
  if (t.optimizer_seconds > 0) row("optimizer step", t.optimizer_seconds);
  if (t.checkpoint_offload_seconds > 0) row("checkpoint copies (PCIe)", t.checkpoint_offload_seconds);
  // Whatever the step holds beyond compute and exposed communication (the 1F1B pipeline bubble).
  double other = t.step_seconds - t.compute_seconds - exposed - t.offload_seconds - t.optimizer_seconds -
                 t.checkpoint_offload_seconds;
  if (other > 1e-9 * std::max(1.0, t.step_seconds)) row("pipeline bubble / other", other);
  row("step", t.step_seconds);
  if (t.checkpoint_copy_bytes > 0) {
    out << "\n  cpu_checkpointing: " << FormatNumber("%.2f", t.checkpoint_copy_bytes / 1e9)
        << " GB over PCIe per step (both ways), " << HumanSeconds(t.checkpoint_copy_seconds) << " on the link, "
        << (t.checkpoint_offload_seconds > 0 ? HumanSeconds(t.checkpoint_offload_seconds) + " of it exposed"
                                             : std::string("hidden behind compute"))
        << "\n";
  }
}

void CollectivesSection(const SimulateResult& r, std::ostringstream& out) {
  out << "\nCollectives per step (one rank)\n";
  if (r.time.collectives.empty()) {
    out << "  none\n";
    return;
  }
  out << "  " << Left("purpose", 34) << Left("kind", 15) << Left("group", 7) << Right("ranks", 5)
      << Right("bytes/call", 12) << Right("calls/step", 11) << "  " << Left("link", 6) << Right("seconds", 11)
      << Right("exposed", 11) << "\n";
  for (const CollectiveCall& c : r.time.collectives) {
    out << "  " << Left(std::string(c.purpose), 34) << Left(std::string(CollectiveKindName(c.kind)), 15)
        << Left(std::string(GroupKindName(c.group)), 7) << Right(std::to_string(c.group_size), 5)
        << Right(HumanBytes(c.bytes_per_call), 12) << Right(FormatNumber("%g", c.calls_per_step), 11) << "  "
        << Left(c.inter_node ? "inter" : "intra", 6) << Right(HumanSeconds(c.seconds), 11)
        << Right(HumanSeconds(c.exposed_seconds), 11) << "\n";
  }
}

Json FamilyCounts(const ParamCounts& params) {
  Json j = Json::object();
  for (ParamFamily fam : kAllParamFamilies) {
    auto it = params.by_family.find(fam);
    j[std::string(ParamFamilyName(fam))] = it == params.by_family.end() ? 0 : it->second;
  }
  return j;
}

}  // namespace



std::vector<std::pair<std::string, double>> ExposedByKind(const TimeReport& time) {
  std::vector<std::pair<std::string, double>> out;
  for (CollectiveKind kind : kAllKinds) {
    double s = 0;
    for (const CollectiveCall& c : time.collectives) {
      if (c.kind == kind) s += c.exposed_seconds;
    }
    out.emplace_back(std::string(CollectiveKindName(kind)), s);
  }
  return out;
}

std::string RenderSimulateText(const SimulateResult& result) {
  std::ostringstream out;
  RenderHeader(result, out);
  MemorySection(result, out);
  TimeSection(result, out);
  CollectivesSection(result, out);
  return out.str();
}

Json SimulateToJson(const SimulateResult& r) {
  Json root = Json::object();
  root["schema_version"] = 8;
  root["layout"] = LayoutToJson(r.layout);
  root["engine"] = {{"name", std::string(EngineName(r.engine.engine))},
                    {"megatron_sp", r.engine.megatron_sp},
                    {"virtual_stages", r.engine.virtual_stages},
                    {"pipeline_schedule_calls", r.engine.pipeline_schedule_calls(r.workload.grad_accum)},
                    {"attention", std::string(AttentionKernelName(r.engine.attention))},
                    {"fused_loss", r.engine.fused_loss},
                    {"tiled_mlp", r.engine.tiled_mlp},
                    {"expandable_segments", r.engine.expandable_segments},
                    {"deepspeed_version", r.engine.deepspeed_version.ToString()}};
  root["params"] = {{"total", r.params.total},
                    {"active_per_token", r.params.active_per_token},
                    {"by_family", FamilyCounts(r.params)}};
  if (!r.model_left_out.empty()) {
    root["params"]["left_out"] = r.model_left_out;
    root["params"]["mtp"] = r.params.mtp;
  }

  const MemoryReport& m = r.memory;
  Json families = Json::object();
  for (ParamFamily fam : kAllParamFamilies) {
    FamilyMemory fm;
    if (auto it = m.by_family.find(fam); it != m.by_family.end()) fm = it->second;
    families[std::string(ParamFamilyName(fam))] = {{"parameters_bytes", fm.parameters_bytes},
                                                   {"gradients_bytes", fm.gradients_bytes},
                                                   {"optimizer_states_bytes", fm.optimizer_states_bytes}};
  }
  root["memory"] = {{"parameters_bytes", m.parameters_bytes},
                    {"gradients_bytes", m.gradients_bytes},
                    {"optimizer_states_bytes", m.optimizer_states_bytes},
                    {"activations_bytes", m.activations_bytes},
                    {"buffers_bytes", m.buffers_bytes},
                    {"peak_bytes", m.peak_bytes},
                    {"reserved_peak_bytes", m.reserved_peak_bytes},
                    {"allowance_bytes", m.allowance_bytes},
                    {"host_activations_bytes", m.host_activations_bytes},
                    {"cpu_bytes", m.cpu_bytes},
                    {"node_host_bytes", m.node_host_bytes},
                    {"host_memory_bytes", m.host_memory_bytes > 0 ? Json(m.host_memory_bytes) : Json()},
                    {"host_fits", m.host_fits},
                    {"optimizer_step_peak_bytes", m.optimizer_step_peak_bytes},
                    {"hpz_secondary_bytes", m.hpz_secondary_bytes},
                    {"zero3_saved_weights_bytes", m.zero3_saved_weights_bytes},
                    {"hbm_bytes", m.hbm_bytes},
                    {"fits", m.fits},
                    {"by_family", std::move(families)}};

  Json exposed = Json::object();
  for (const auto& [kind, s] : ExposedByKind(r.time)) exposed[kind] = s;
  root["time"] = {{"compute_seconds", r.time.compute_seconds},
                  {"exposed_communication_seconds", std::move(exposed)},
                  {"offload_seconds", r.time.offload_seconds},
                  {"optimizer_seconds", r.time.optimizer_seconds},
                  {"host_wait_seconds", r.time.host_wait_seconds},
                  {"checkpoint_offload_seconds", r.time.checkpoint_offload_seconds},
                  {"checkpoint_copy_bytes", r.time.checkpoint_copy_bytes},
                  {"checkpoint_copy_seconds", r.time.checkpoint_copy_seconds},
                  {"pipeline_bubble_seconds", r.time.pipeline_bubble_seconds},
                  {"step_seconds", r.time.step_seconds},
                  {"tokens_per_second", r.time.tokens_per_second},
                  {"mfu", r.time.mfu}};

  Json calls = Json::array();
  for (const CollectiveCall& c : r.time.collectives) {
    calls.push_back({{"kind", std::string(CollectiveKindName(c.kind))},
                     {"group", std::string(GroupKindName(c.group))},
                     {"bytes_per_call", c.bytes_per_call},
                     {"calls_per_step", c.calls_per_step},
                     {"inter_node", c.inter_node},
                     {"seconds", c.seconds}});
  }
  root["collectives"] = std::move(calls);
  if (r.cluster != nullptr) root["accuracy"] = AccuracyToJson(AccuracyFor(r.engine.engine, r.cluster->gpu));
  return root;
}

}  // namespace dsp::sim
