// SPDX-License-Identifier: Apache-2.0
#include "sim/passes/from_config.h"

#include <algorithm>
#include <cctype>
#include <memory>

#include "core/config/config_view.h"
#include "core/config/parallel_config.h"
#include "core/rules/tensor_parallel_internal.h"
#include "sim/graph/builder.h"
#include "sim/passes/autoep.h"
#include "sim/passes/autosp.h"
#include "sim/passes/autotp.h"
#include "sim/passes/zero.h"
#include "sim/cost/sim_input.h"

namespace dsp::sim::passes {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool Lists(const std::vector<std::string>& passes, std::string_view name) {
  return std::find(passes.begin(), passes.end(), name) != passes.end();
}

// tensor_parallel.partition_config as the AutoTP pass reads it (validate has checked the shapes).
AutoTpOptions TpOptions(const ModelSpec& model, const Json& config, int64_t tp) {
  AutoTpOptions o = AutoTpOptions::ForModel(model, tp);
  ConfigView v(config);
  o.use_default_specs =
      v.Bool("/tensor_parallel/partition_config/use_default_specs").or_default(true);
  auto preset = v.String("/tensor_parallel/preset_model");
  if (preset.present()) o.preset = Lower(preset.value);
  if (!autotp::HasCustomPartitionConfig(v) && !autotp::KnownPreset(v)) {
    o.UseTransformersPlan(model);
    return o;
  }
  const Json* specs = v.Get("/tensor_parallel/partition_config/layer_specs");
  if (specs == nullptr || !specs->is_array()) return o;
  for (const Json& spec : *specs) {
    if (!spec.is_object()) continue;
    TpLayerSpec s;
    const std::string type = Lower(spec.value("partition_type", std::string("column")));
    s.partition = type == "row"    ? TpPartition::kRow
                  : type == "skip" ? TpPartition::kSkip
                                   : TpPartition::kColumn;
    if (auto it = spec.find("gather_output"); it != spec.end() && it->is_boolean()) {
      s.gather_output = it->get<bool>();
    }
    if (auto it = spec.find("grad_allreduce"); it != spec.end() && it->is_boolean()) {
      s.grad_allreduce = it->get<bool>();
    }
    for (const Json& p : spec.value("patterns", Json::array())) {
      if (p.is_string()) s.patterns.push_back(p.get<std::string>());
    }
    if (auto it = spec.find("model_types"); it != spec.end() && it->is_array()) {
      std::vector<std::string> types;
      for (const Json& t : *it) {
        if (t.is_string()) types.push_back(Lower(t.get<std::string>()));
      }
      s.model_types = types;
    }
    o.layer_specs.push_back(std::move(s));
  }
  return o;
}

// Size of the plan's groups of `kind`; 0 (unknown: assume peers) without a plan or that kind.
int64_t GroupSize(const Plan* plan, GroupKind kind) {
  if (plan == nullptr) return 0;
  auto it = plan->groups.groups.find(kind);
  if (it == plan->groups.groups.end() || it->second.empty()) return 0;
  return static_cast<int64_t>(it->second.front().size());
}

ZeroOptions ZeroOptionsFor(const ModelSpec& model, const Json& config, const ParallelConfig& pc,
                           const Plan* plan) {
  ZeroOptions o;
  const ZeroSettings zero = ReadZeroSettings(config);
  o.stage = zero.stage;
  if (pc.sp > 1) {
    o.dense = {"sp_dp", "SDP", GroupSize(plan, GroupKind::kSpDp)};
  } else {
    o.dense = {"dp", "DP", GroupSize(plan, GroupKind::kDp)};
  }
  if (plan != nullptr && o.dense.size == 0) o.dense.size = 1;  // a known world without the kind
  // DeepCompile's ZeRO registers every parameter with its one communicator over
  // engine.data_parallel_group (init_z1_and_2 / init_z3: dc.init): routed experts get no group of
  // their own and reduce with the dense family (validate: compile-deepcompile-expert-groups).
  if (pc.autoep_enabled && !zero.deepcompile) {
    o.experts = ZeroGroup{"edp", "EDP", GroupSize(plan, GroupKind::kEdp)};
    if (plan != nullptr && o.experts->size == 0) o.experts->size = 1;
  }
  o.fold_tp = pc.autoep_enabled && pc.tp > 1 ? pc.tp : 1;
  o.persistence_threshold = static_cast<int64_t>(zero.param_persistence_threshold);
  o.deepcompile = zero.deepcompile;
  o.values = graph::ModelSymbolValues(model, 1, 1);
  o.values["T"] = std::max<int64_t>(pc.tp, 1);
  graph::BindTensorParallelHeads(model, o.values["T"], o.values);
  o.values["EP"] = std::max<int64_t>(pc.ep, 1);
  o.values["P"] = std::max<int64_t>(pc.sp, 1);
  return o;
}

}  // namespace

Result<std::vector<std::string>> ParsePassList(std::string_view text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string name(text.substr(start, comma - start));
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty()) {
      const auto& known = RegisteredPasses();
      const bool ok = std::any_of(known.begin(), known.end(),
                                  [&](const PassInfo& p) { return p.name == name; });
      if (!ok) {
        std::string list;
        for (const PassInfo& p : known) list += (list.empty() ? "" : ", ") + std::string(p.name);
        return Error{"unknown pass '" + name + "' (known: " + list + ")"};
      }
      if (!Lists(names, name)) names.push_back(name);
    }
    start = comma + 1;
  }
  if (names.empty()) return Error{"the pass list is empty (known passes: see `ds-plan passes`)"};
  return names;
}

Result<Pipeline> PipelineForConfig(const PipelineRequest& r) {
  const ModelSpec& model = *r.model;
  const Json& config = *r.config;
  const ParallelConfig pc = ReadParallelConfig(ConfigView(config));
  std::vector<std::string> wanted;
  if (r.forced) {
    for (const std::string& name : *r.forced) {
      if (!Lists(wanted, name)) wanted.push_back(name);
    }
  } else {
    const ZeroSettings zero = ReadZeroSettings(config);
    if (pc.autoep_enabled) wanted.push_back("autoep");
    if (pc.tp > 1 || Lists(pc.compile_passes, "autotp")) wanted.push_back("autotp");
    // AutoSP with ZeRO-2/3 under DeepCompile falls back to plain torch.compile: no rewrite.
    if ((pc.sp > 1 || Lists(pc.compile_passes, "autosp")) && !AutoSpFallsBack(pc)) wanted.push_back("autosp");
    // Every stage reduces gradients: ZeRO-0's engine all-reduces them after backward
    // (engine.py allreduce_gradients), which the zero pass draws as it does for stages 1-3.
    wanted.push_back("zero");
    // init_z3.py: the offload_parameters / offload_opt_states / offload_activation schedules run
    // in place of prefetch and selective_gather (ZeroSettings::deepcompile_gathers_in_place).
    if (zero.deepcompile && zero.stage == 3 && !zero.deepcompile_gathers_in_place && r.deepcompile_budget != nullptr) {
      wanted.push_back("selective_gather");
      wanted.push_back("prefetch");
    }
  }
  Pipeline pipeline;
  for (const PassInfo& info : RegisteredPasses()) {
    if (!Lists(wanted, info.name)) continue;
    if (info.name == "autoep") {
      AutoEpOptions o =
          AutoEpOptions::ForModel(model, pc.ep, pc.tp, autoep::ReadDetectionKeys(ConfigView(config)));
      pipeline.Add(std::make_unique<AutoEpPass>(std::move(o)));
    } else if (info.name == "autotp") {
      AutoTpOptions o = TpOptions(model, config, pc.tp);
      o.compiled = pc.deepcompile && Lists(pc.compile_passes, "autotp");
      o.tp_overlap_comm = ConfigView(config).Bool("/tensor_parallel/tp_overlap_comm").or_default(false);
      pipeline.Add(std::make_unique<AutoTpPass>(std::move(o)));
    } else if (info.name == "autosp") {
      AutoSpOptions o = AutoSpOptions::ForModel(model, pc.sp, r.seq_len);
      o.compiled = pc.deepcompile && Lists(pc.compile_passes, "autosp");
      if (pc.tp > 1) {  // AutoSP after AutoTP sees tp rank 0's head counts
        graph::SymbolValues heads;
        graph::BindTensorParallelHeads(model, pc.tp, heads);
        o.num_heads = heads.contains("N0") ? heads["N0"] : o.num_heads / pc.tp;
        o.num_kv_heads = heads.contains("G0") ? heads["G0"] : o.num_kv_heads / pc.tp;
      }
      pipeline.Add(std::make_unique<AutoSpPass>(std::move(o)));
    } else if (info.name == "zero") {
      pipeline.Add(std::make_unique<ZeroPass>(ZeroOptionsFor(model, config, pc, r.plan)));
    } else if (info.name == "selective_gather" || info.name == "prefetch") {
      if (r.deepcompile_budget == nullptr) {
        return Error{"the " + std::string(info.name) + " pass decides from memory and gather times: give --cluster"};
      }
      if (info.name == "selective_gather") {
        pipeline.Add(std::make_unique<SelectiveGatherPass>(*r.deepcompile_budget));
      } else {
        pipeline.Add(std::make_unique<PrefetchPass>(*r.deepcompile_budget));
      }
    }
  }
  for (const std::string& name : wanted) {
    const auto& known = RegisteredPasses();
    if (std::none_of(known.begin(), known.end(),
                     [&](const PassInfo& p) { return p.name == name; })) {
      return Error{"unknown pass '" + name + "'"};
    }
  }
  return pipeline;
}

}  // namespace dsp::sim::passes
