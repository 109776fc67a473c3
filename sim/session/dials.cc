// SPDX-License-Identifier: Apache-2.0
#include "sim/session/dials.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/config/batch_triple.h"
#include "core/config/config_view.h"
#include "core/rules/ds_semantics.h"

namespace dsp::sim {
namespace {

std::vector<Json> Powers(int64_t lo, int64_t hi) {
  std::vector<Json> out;
  for (int64_t v = lo; v <= hi; v *= 2) out.emplace_back(v);
  return out;
}

std::vector<Json> DivisorChoices(int64_t n, int64_t at_most) {
  std::vector<Json> out;
  for (int64_t d = 1; d <= std::min(n, at_most); ++d) {
    if (n % d == 0) out.emplace_back(d);
  }
  return out;
}

// The world the dials divide: the one evaluated, else the knobs' (the evaluation failed early).
int64_t WorldOf(const Session& s) {
  if (s.now().world_size > 0) return s.now().world_size;
  auto w = ResolveWorld(s.knobs(), s.cluster());
  return w.ok() ? w->world_size : 1;
}

const Json* At(const Json& config, const std::string& key) {
  auto pointer = OverridePointer(key);
  if (!pointer.ok()) return nullptr;
  const Json::json_pointer p(*pointer);
  return config.contains(p) ? &config[p] : nullptr;
}

std::string Compact(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= 1e6 && std::floor(d) == d) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", d);
      return buf;
    }
  }
  return v.dump();
}

// The value in effect, as JSON (numbers stay numbers so stepping can compare them).
Json Current(const Session& s, const Dial& d) {
  const Evaluation& e = s.now();
  const Evaluation* good = e.has_numbers() ? &e : nullptr;
  const LayoutSummary& l = e.report.layout;
  const std::string& k = d.key;
  if (k == "nodes") return e.gpus_per_node > 0 ? Json(WorldOf(s) / e.gpus_per_node) : Json(s.knobs().nodes);
  if (k == "gpus_per_node") return e.gpus_per_node > 0 ? e.gpus_per_node : s.cluster().gpus_per_node;
  if (k == "pp") return s.knobs().pp;
  if (k == "seq_len") {
    return s.knobs().seq_len > 0 ? s.knobs().seq_len : std::min(kDefaultSeqLen, s.model().max_position_embeddings);
  }
  if (k == "recompute") return std::string(RecomputeName(s.knobs().recompute));
  if (k == "precision") {
    ConfigView v(s.config());
    return ds_semantics::Bf16Enabled(v) ? "bf16" : ds_semantics::Fp16Enabled(v) ? "fp16" : "fp32";
  }
  if (k == "tensor_parallel.autotp_size" && l.tp) return *l.tp;
  if (k == "sequence_parallel_size" && l.sp) return *l.sp;
  if (k == "expert_parallel.autoep_size" && l.ep) return *l.ep;
  if (k == "zero_optimization.stage" && l.zero_stage) return *l.zero_stage;
  if (good) {
    if (k == "train_micro_batch_size_per_gpu") return good->micro_batch;
    if (k == "gradient_accumulation_steps") return good->grad_accum;
    if (k == "zero_optimization.overlap_comm") return good->input.zero.overlap_comm;
    if (k == "zero_optimization.reduce_bucket_size") return good->input.zero.reduce_bucket_size;
    if (k == "zero_optimization.stage3_prefetch_bucket_size") return good->input.zero.prefetch_bucket_size;
  }
  if (const Json* v = At(s.config(), k)) return *v;
  if (k.ends_with(".device")) return "none";
  return nullptr;
}

// train_batch_size = micro x accumulation x the batch world of the new layout, when the config
// states all three (runtime/config.py _batch_assertion checks exactly that product).
void KeepBatchConsistent(Json& config, const PlanKnobs& knobs, const Cluster& cluster) {
  for (const char* key : {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"}) {
    if (!config.contains(key) || !config[key].is_number_integer()) return;
  }
  auto world = ResolveWorld(knobs, cluster);
  if (!world.ok()) return;
  auto ws = BatchWorldSize(ConfigView(config), world->world_size, knobs.pp,
                           knobs.engine.framework().megatron_tp() ? std::max<int64_t>(knobs.megatron_tp, 1) : 1,
                           std::max<int64_t>(knobs.cp, 1));
  if (!ws || ws->ws < 1 || std::floor(ws->ws) != ws->ws) return;
  config["train_batch_size"] = config["train_micro_batch_size_per_gpu"].get<int64_t>() *
                               config["gradient_accumulation_steps"].get<int64_t>() * static_cast<int64_t>(ws->ws);
}

double AsNumber(const Json& v) { return v.is_number() ? v.get<double>() : v.is_boolean() ? v.get<bool>() : NAN; }

}  // namespace

const std::vector<Dial>& Dials() {
  static const std::vector<Dial> dials = {
      {"nodes", "nodes"},
      {"GPUs per node", "gpus_per_node"},
      {"tensor parallel", "tensor_parallel.autotp_size"},
      {"sequence parallel", "sequence_parallel_size"},
      {"expert parallel", "expert_parallel.autoep_size"},
      {"pipeline stages", "pp"},
      {"ZeRO stage", "zero_optimization.stage"},
      {"offload optimizer", "zero_optimization.offload_optimizer.device"},
      {"offload params", "zero_optimization.offload_param.device"},
      {"micro batch", "train_micro_batch_size_per_gpu"},
      {"grad accumulation", "gradient_accumulation_steps"},
      {"sequence length", "seq_len"},
      {"recompute", "recompute"},
      {"precision", "precision"},
      {"overlap_comm", "zero_optimization.overlap_comm"},
      {"reduce bucket", "zero_optimization.reduce_bucket_size"},
      {"prefetch bucket", "zero_optimization.stage3_prefetch_bucket_size"},
  };
  return dials;
}

std::string DialValue(const Session& s, const Dial& d) {
  const Json v = Current(s, d);
  if (d.key == "expert_parallel.autoep_size" && !s.model().is_moe()) return "-";
  return v.is_null() ? "-" : Compact(v);
}

bool DialIsSet(const Session& s, const Dial& d) {
  if (IsKnobKey(d.key)) {
    const PlanKnobs& k = s.knobs();
    if (d.key == "nodes") return k.nodes > 0 || k.world_size > 0;
    if (d.key == "gpus_per_node") return k.gpus_per_node > 0;
    if (d.key == "pp") return k.pp > 1;
    if (d.key == "seq_len") return k.seq_len > 0;
    if (d.key == "recompute") return k.recompute != Recompute::kNone;
    return s.config().contains("bf16") || s.config().contains("fp16");
  }
  return At(s.config(), d.key) != nullptr;
}

std::vector<Json> DialChoices(const Session& s, const Dial& d) {
  const std::string& k = d.key;
  const int64_t world = WorldOf(s);
  if (k == "nodes") return Powers(1, 8192);
  if (k == "gpus_per_node") return Powers(1, 16);
  if (k == "tensor_parallel.autotp_size" || k == "sequence_parallel_size") return DivisorChoices(world, 512);
  if (k == "expert_parallel.autoep_size") {
    if (!s.model().is_moe()) return {};
    return DivisorChoices(world, std::max<int64_t>(s.model().num_experts, 1));
  }
  if (k == "pp") return DivisorChoices(world, std::max<int64_t>(s.model().num_hidden_layers, 1));
  if (k == "zero_optimization.stage") return {0, 1, 2, 3};
  if (k.ends_with(".device")) return {"none", "cpu", "nvme"};
  if (k == "train_micro_batch_size_per_gpu") return Powers(1, 256);
  if (k == "gradient_accumulation_steps") return Powers(1, 4096);
  if (k == "seq_len") return Powers(256, int64_t{1} << 20);
  if (k == "recompute") return {"none", "selective", "full"};
  if (k == "precision") return {"fp32", "fp16", "bf16"};
  if (k == "zero_optimization.overlap_comm") return {false, true};
  if (k.ends_with("bucket_size")) return {1e7, 5e7, 1e8, 2e8, 5e8, 1e9, 2e9};
  return {};
}

Result<std::string> StepDial(Session& s, const Dial& d, int direction) {
  const std::vector<Json> choices = DialChoices(s, d);
  if (choices.empty()) return Error{d.label + " does not apply to this model"};
  const Json now = Current(s, d);
  std::optional<Json> next;
  const double x = AsNumber(now);
  if (!std::isnan(x) && !now.is_string()) {
    // Numbers step to the nearest choice beyond the current value, so a value off the list
    // (micro batch 3) steps to 4 or 2.
    if (direction > 0) {
      for (const Json& c : choices) {
        if (AsNumber(c) > x) { next = c; break; }
      }
    } else {
      for (auto it = choices.rbegin(); it != choices.rend(); ++it) {
        if (AsNumber(*it) < x) { next = *it; break; }
      }
    }
  } else {
    auto it = std::find(choices.begin(), choices.end(), now);
    const ptrdiff_t i = it == choices.end() ? (direction > 0 ? -1 : static_cast<ptrdiff_t>(choices.size()))
                                            : it - choices.begin();
    const ptrdiff_t j = i + (direction > 0 ? 1 : -1);
    if (j >= 0 && j < static_cast<ptrdiff_t>(choices.size())) next = choices[static_cast<size_t>(j)];
  }
  if (!next) return Error{d.label + " is at its " + (direction > 0 ? "largest" : "smallest") + " value"};
  return s.SetAll({{d.key, *next}}, d.label + ": " + Compact(now) + " to " + Compact(*next), KeepBatchConsistent);
}

Result<std::string> SetDial(Session& s, const Dial& d, const std::string& value) {
  Json v = Json::parse(value, nullptr, false);
  if (v.is_discarded()) v = value;
  return s.SetAll({{d.key, v}}, d.label + " = " + value, KeepBatchConsistent);
}

}  // namespace dsp::sim
