// SPDX-License-Identifier: Apache-2.0
#include "sim/plan/snapshot.h"

#include <map>
#include <string_view>
#include <utility>

#include "core/report/validate_report.h"

namespace dsp::sim {
namespace {

Json OptionalInt(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(nullptr); }

Json FileToJson(const SnapshotFile& f) { return {{"path", f.path}, {"sha256", f.sha256}}; }

Json InputsToJson(const PlanSnapshotInputs& in) {
  Json config = FileToJson(in.config);
  config["content"] = in.config_content;
  return {{"config", std::move(config)},
          {"model", FileToJson(in.model)},
          {"cluster", FileToJson(in.cluster)},
          {"world_size", OptionalInt(in.world_size)},
          {"nodes", OptionalInt(in.nodes)},
          {"gpus_per_node", OptionalInt(in.gpus_per_node)},
          {"pp", in.pp},
          {"seq_len", OptionalInt(in.seq_len)},
          {"recompute", in.recompute},
          {"convention", in.convention},
          {"set", in.sets},
          {"engine", in.engine},
          {"tp", OptionalInt(in.megatron_tp > 0 ? std::optional<int64_t>(in.megatron_tp) : std::nullopt)},
          {"megatron_sp", in.megatron_sp},
          {"virtual_stages", in.virtual_stages},
          {"pp_schedule_micro_batches",
           OptionalInt(in.pp_schedule_micro_batches > 0 ? std::optional<int64_t>(in.pp_schedule_micro_batches)
                                                        : std::nullopt)},
          {"cp", OptionalInt(in.cp > 0 ? std::optional<int64_t>(in.cp) : std::nullopt)},
          {"ep", OptionalInt(in.ep > 0 ? std::optional<int64_t>(in.ep) : std::nullopt)},
          {"fp8", in.fp8},
          {"tp_comm_overlap", in.tp_comm_overlap},
          {"fused_loss", in.fused_loss},
          {"tiled_mlp", in.tiled_mlp},
          {"expandable_segments", in.expandable_segments},
          {"etp", OptionalInt(in.etp > 0 ? std::optional<int64_t>(in.etp) : std::nullopt)},
          {"moe_token_dispatcher", in.moe_token_dispatcher},
          {"moe_grouped_gemm", in.moe_grouped_gemm},
          {"fp8_param_gather", in.fp8_param_gather},
          {"bf16_grad_buffer", in.bf16_grad_buffer},
          {"bf16_optimizer_states", in.bf16_optimizer_states},
          {"bf16_params", in.bf16_params},
          {"bf16_loss", in.bf16_loss},
          {"te_modules", in.te_modules},
          {"automodel_experts", in.automodel_experts},
          {"fake_balanced_gate", in.fake_balanced_gate},
          {"torch_compile", in.torch_compile},
          {"eager_loss", in.eager_loss},
          {"cp_comm_type", in.cp_comm_type.empty() ? Json(nullptr) : Json(in.cp_comm_type)},
          {"attention", in.attention},
          {"attn_impl", in.attn_impl.empty() ? Json(nullptr) : Json(in.attn_impl)},
          {"deepspeed_version", in.deepspeed_version.empty() ? Json(nullptr) : Json(in.deepspeed_version)}};
}

Json GroupsToJson(const Plan& plan) {
  Json tables = Json::object();
  for (const auto& [kind, list] : plan.groups.groups) tables[std::string(GroupKindName(kind))] = list;
  return {{"rank_layout", plan.groups.layout == RankLayout::kDeepSpeed ? "deepspeed" : "megatron"},
          {"expert_layout",
           plan.sizes.expert_parallel ? Json(ExpertLayoutName(plan.groups.expert_layout)) : Json(nullptr)},
          {"zero_partition",
           {{"dense", GroupKindName(ZeroPartitionGroup(plan, false))},
            {"routed_experts",
             plan.sizes.expert_parallel ? Json(GroupKindName(ZeroPartitionGroup(plan, true))) : Json(nullptr)}}},
          {"tables", std::move(tables)}};
}

Json MemoryToJson(const MemoryReport& m) {
  return {{"peak_bytes", m.peak_bytes},
          {"parameters_bytes", m.parameters_bytes},
          {"gradients_bytes", m.gradients_bytes},
          {"optimizer_states_bytes", m.optimizer_states_bytes},
          {"activations_bytes", m.activations_bytes},
          {"buffers_bytes", m.buffers_bytes},
          {"cpu_bytes", m.cpu_bytes},
          {"hbm_bytes", m.hbm_bytes},
          {"fits", m.fits},
          {"pipeline_stage", m.pipeline_stage}};
}

Json TimeToJson(const TimeReport& t) {
  return {{"step_seconds", t.step_seconds},
          {"compute_seconds", t.compute_seconds},
          {"exposed_communication_seconds", t.exposed_communication_seconds},
          {"offload_seconds", t.offload_seconds},
          {"pipeline_bubble_seconds", t.pipeline_bubble_seconds},
          {"tokens_per_second", t.tokens_per_second},
          {"mfu", t.mfu}};
}

// Volumes per collective kind and group kind, summed over the purposes that share them (a dp
// all-reduce of gradients and one of the loss are one line): what a config change moves, without
// tying the snapshot to the cost model's purpose names.
Json CollectivesToJson(const TimeReport& t) {
  struct Volume {
    double bytes = 0, calls = 0, seconds = 0, exposed = 0;
  };
  std::map<std::string, std::map<std::string, Volume>> by_kind;
  for (const CollectiveCall& c : t.collectives) {
    Volume& v = by_kind[std::string(CollectiveKindName(c.kind))][std::string(GroupKindName(c.group))];
    v.bytes += c.bytes_per_call * c.calls_per_step;
    v.calls += c.calls_per_step;
    v.seconds += c.seconds;
    v.exposed += c.exposed_seconds;
  }
  Json out = Json::object();
  for (const auto& [kind, groups] : by_kind) {
    for (const auto& [group, v] : groups) {
      out[kind][group] = {{"bytes_per_step", v.bytes},
                          {"calls_per_step", v.calls},
                          {"seconds", v.seconds},
                          {"exposed_seconds", v.exposed}};
    }
  }
  return out;
}

// Field readers for ReadSnapshotInputs: every error names the JSON pointer.
Status ReadString(const Json& obj, const char* key, const std::string& where, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return Error{where + "/" + key + " must be a string"};
  *out = it->get<std::string>();
  return {};
}

// The recorded flags get the command line's ranges: a snapshot is an input like any other, and
// a world of 2^31 ranks would exhaust memory building its group tables.
Status ReadOptionalInt(const Json& obj, const char* key, std::optional<int64_t>* out, int64_t max) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  if (!it->is_number_integer()) return Error{std::string("/inputs/") + key + " must be an integer or null"};
  const int64_t v = it->get<int64_t>();
  if (v < 1 || v > max) {
    return Error{std::string("/inputs/") + key + " must be between 1 and " + std::to_string(max) + ", got " +
                 it->dump()};
  }
  *out = v;
  return {};
}

Status ReadFileEntry(const Json& inputs, const char* key, SnapshotFile* out) {
  auto it = inputs.find(key);
  const std::string where = std::string("/inputs/") + key;
  if (it == inputs.end() || !it->is_object()) return Error{where + " is missing"};
  if (Status s = ReadString(*it, "path", where, &out->path); !s.ok()) return s;
  return ReadString(*it, "sha256", where, &out->sha256);
}

// Collapses "[\n    0,\n    1\n  ]" into "[0, 1]". Only arrays whose contents are numbers,
// commas and whitespace qualify; a '"' ends the scan, so text inside strings is never touched (and
// dump() never puts a raw newline inside a string).
std::string CompactNumberArrays(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '[') {
      out += text[i++];
      continue;
    }
    size_t j = i + 1;
    bool numbers = false;
    while (j < text.size() && std::string_view("0123456789,.-+eE \n").find(text[j]) != std::string_view::npos) {
      numbers = numbers || (text[j] >= '0' && text[j] <= '9');
      ++j;
    }
    if (j >= text.size() || text[j] != ']' || !numbers) {
      out += text[i++];
      continue;
    }
    out += '[';
    bool pending_space = false;
    for (size_t k = i + 1; k < j; ++k) {
      char c = text[k];
      if (c == ' ' || c == '\n') {
        pending_space = pending_space || out.back() == ',';
        continue;
      }
      if (pending_space) out += ' ';
      pending_space = false;
      out += c;
    }
    out += ']';
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string RenderPlanSnapshot(const Json& snapshot) { return CompactNumberArrays(snapshot.dump(2)) + "\n"; }

Json PlanSnapshotToJson(const PlanSnapshot& s) {
  Json root = Json::object();
  root["schema_version"] = kPlanSchemaVersion;
  root["ds_plan_version"] = s.inputs.ds_plan_version;
  root["inputs"] = InputsToJson(s.inputs);
  root["resolved"] = {{"world_size", s.world_size},
                      {"gpus_per_node", s.gpus_per_node},
                      {"seq_len", s.seq_len},
                      {"micro_batch", s.micro_batch},
                      {"grad_accum", s.grad_accum},
                      {"samples_per_step", s.samples_per_step}};
  root["layout"] = LayoutToJson(s.layout);
  root["groups"] = s.plan ? GroupsToJson(*s.plan) : Json(nullptr);
  root["memory"] = MemoryToJson(s.memory);
  root["time"] = TimeToJson(s.time);
  root["collectives"] = CollectivesToJson(s.time);
  if (!s.accuracy.is_null()) root["accuracy"] = s.accuracy;
  return root;
}

Result<PlanSnapshotInputs> ReadSnapshotInputs(const Json& snapshot) {
  if (!snapshot.is_object()) return Error{"not a JSON object"};
  auto it = snapshot.find("inputs");
  if (it == snapshot.end() || !it->is_object()) return Error{"/inputs is missing"};
  const Json& in = *it;
  PlanSnapshotInputs out;
  for (auto [key, file] : {std::pair{"config", &out.config}, {"model", &out.model}, {"cluster", &out.cluster}}) {
    if (Status s = ReadFileEntry(in, key, file); !s.ok()) return s.error();
  }
  if (auto c = in["config"].find("content"); c != in["config"].end()) out.config_content = *c;
  struct IntField {
    const char* key;
    std::optional<int64_t>* field;
    int64_t max;  // as the CLI's --world-size, --nodes, --gpus-per-node, --seq-len
  };
  for (const IntField& f : {IntField{"world_size", &out.world_size, int64_t{1} << 20},
                            IntField{"nodes", &out.nodes, int64_t{1} << 16},
                            IntField{"gpus_per_node", &out.gpus_per_node, int64_t{1} << 10},
                            IntField{"seq_len", &out.seq_len, int64_t{1} << 26}}) {
    if (Status s = ReadOptionalInt(in, f.key, f.field, f.max); !s.ok()) return s.error();
  }
  std::optional<int64_t> pp;
  if (Status s = ReadOptionalInt(in, "pp", &pp, int64_t{1} << 16); !s.ok()) return s.error();
  out.pp = pp.value_or(1);
  if (Status s = ReadString(in, "recompute", "/inputs", &out.recompute); !s.ok()) return s.error();
  if (Status s = ReadString(in, "convention", "/inputs", &out.convention); !s.ok()) return s.error();
  if (auto sets = in.find("set"); sets != in.end()) {
    if (!sets->is_array()) return Error{"/inputs/set must be an array of strings"};
    for (const Json& v : *sets) {
      if (!v.is_string()) return Error{"/inputs/set must be an array of strings"};
      out.sets.push_back(v.get<std::string>());
    }
  }
  // The engine flags (absent from older snapshots: the defaults they ran with).
  for (auto [key, field] : {std::pair{"engine", &out.engine}, {"attention", &out.attention},
                            {"moe_token_dispatcher", &out.moe_token_dispatcher}}) {
    if (in.contains(key)) {
      if (Status s = ReadString(in, key, "/inputs", field); !s.ok()) return s.error();
    }
  }
  for (auto [key, field] : {std::pair{"attn_impl", &out.attn_impl}, {"deepspeed_version", &out.deepspeed_version},
                            {"cp_comm_type", &out.cp_comm_type}}) {
    if (auto v = in.find(key); v != in.end() && !v->is_null()) {
      if (Status s = ReadString(in, key, "/inputs", field); !s.ok()) return s.error();
    }
  }
  if (out.moe_token_dispatcher != "alltoall" && out.moe_token_dispatcher != "allgather") {
    return Error{"/inputs/moe_token_dispatcher must be \"alltoall\" or \"allgather\""};
  }
  std::optional<int64_t> tp, virtual_stages, cp, ep, etp, schedule_micro_batches;
  if (Status s = ReadOptionalInt(in, "tp", &tp, int64_t{1} << 20); !s.ok()) return s.error();
  if (Status s = ReadOptionalInt(in, "pp_schedule_micro_batches", &schedule_micro_batches, int64_t{1} << 30); !s.ok()) {
    return s.error();
  }
  out.pp_schedule_micro_batches = schedule_micro_batches.value_or(0);
  if (Status s = ReadOptionalInt(in, "cp", &cp, int64_t{1} << 20); !s.ok()) return s.error();
  if (Status s = ReadOptionalInt(in, "ep", &ep, int64_t{1} << 20); !s.ok()) return s.error();
  if (Status s = ReadOptionalInt(in, "etp", &etp, int64_t{1} << 20); !s.ok()) return s.error();
  out.cp = cp.value_or(0);
  out.ep = ep.value_or(0);
  out.etp = etp.value_or(0);
  for (auto [key, field] : {std::pair{"fp8", &out.fp8}, std::pair{"tp_comm_overlap", &out.tp_comm_overlap},
                            std::pair{"moe_grouped_gemm", &out.moe_grouped_gemm},
                            std::pair{"fp8_param_gather", &out.fp8_param_gather},
                            std::pair{"bf16_grad_buffer", &out.bf16_grad_buffer},
                            std::pair{"bf16_optimizer_states", &out.bf16_optimizer_states},
                            std::pair{"bf16_params", &out.bf16_params}, std::pair{"bf16_loss", &out.bf16_loss},
                            std::pair{"te_modules", &out.te_modules},
                            std::pair{"automodel_experts", &out.automodel_experts},
                            std::pair{"fake_balanced_gate", &out.fake_balanced_gate},
                            std::pair{"torch_compile", &out.torch_compile},
                            std::pair{"eager_loss", &out.eager_loss},
                            std::pair{"fused_loss", &out.fused_loss}, std::pair{"tiled_mlp", &out.tiled_mlp},
                            std::pair{"expandable_segments", &out.expandable_segments}}) {
    if (auto f = in.find(key); f != in.end()) {
      if (!f->is_boolean()) return Error{std::string("/inputs/") + key + " must be true or false"};
      *field = f->get<bool>();
    }
  }
  if (Status s = ReadOptionalInt(in, "virtual_stages", &virtual_stages, 1024); !s.ok()) return s.error();
  out.megatron_tp = tp.value_or(0);
  out.virtual_stages = virtual_stages.value_or(1);
  if (auto sp = in.find("megatron_sp"); sp != in.end()) {
    if (!sp->is_boolean()) return Error{"/inputs/megatron_sp must be true or false"};
    out.megatron_sp = sp->get<bool>();
  }
  if (auto v = snapshot.find("ds_plan_version"); v != snapshot.end() && v->is_string()) {
    out.ds_plan_version = v->get<std::string>();
  }
  return out;
}

}  // namespace dsp::sim
