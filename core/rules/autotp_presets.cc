// SPDX-License-Identifier: Apache-2.0
// The built-in AutoTP presets (AutoTPPresets in module_inject/autotp_config.py) as data: the layer
// specs DeepSpeed appends after the custom ones when tensor_parallel.preset_model is set, needed to
// match a --model the way DeepSpeed will.
#include <map>
#include <string>
#include <vector>

#include "core/rules/tensor_parallel_internal.h"

namespace dsp::autotp {
namespace {

struct PresetRow {
  PartitionKind kind;
  std::vector<const char*> patterns;
  std::vector<ShapeDim> shape;  // empty = none; partition_dim 0 when present
};

const std::map<std::string, std::vector<PresetRow>>& PresetTable() {
  using K = PartitionKind;
  static const auto* table = [] {
    const char* o_proj = R"(.*\.self_attn\.o_proj\.weight$)";
    const char* qkv = R"(.*\.self_attn\.[qkv]_proj\.weight$)";
    const char* down = R"(.*\.mlp\.down_proj\.weight$)";
    const char* up_gate = R"(.*\.mlp\.(up|gate)_proj\.weight$)";
    std::vector<PresetRow> llama = {{K::kRow, {o_proj}, {}},
                                    {K::kColumn, {qkv}, {}},
                                    {K::kRow, {down}, {}},
                                    {K::kColumn, {up_gate}, {}}};
    auto* t = new std::map<std::string, std::vector<PresetRow>>();
    (*t)["llama"] = llama;
    (*t)["qwen2"] = llama;
    (*t)["bloom"] = {{K::kRow, {R"(.*\.self_attention\.dense\.weight$)"}, {}},
                     {K::kColumn, {R"(.*\.self_attention\.query_key_value\.weight$)"}, {}},
                     {K::kRow, {R"(.*\.mlp\.dense_4h_to_h\.weight$)"}, {}},
                     {K::kColumn, {R"(.*\.mlp\.dense_h_to_4h\.weight$)"}, {}}};
    (*t)["chatglm"] = {
        {K::kRow, {R"(.*\.self_attention\.dense\.weight$)"}, {}},
        {K::kColumn,
         {R"(.*\.self_attention\.query_key_value\.weight$)"},
         {{false, {3}}, {false, {-1}}}},
        {K::kRow, {R"(.*\.mlp\.dense_4h_to_h\.weight$)"}, {}},
        {K::kColumn, {R"(.*\.mlp\.dense_h_to_4h\.weight$)"}, {{false, {2}}, {false, {-1}}}}};
    (*t)["mixtral"] = {{K::kRow, {o_proj}, {}},
                       {K::kColumn, {qkv}, {}},
                       {K::kRow, {R"(.*\.block_sparse_moe\.experts\.\d+\.w2\.weight$)"}, {}},
                       {K::kColumn, {R"(.*\.block_sparse_moe\.experts\.\d+\.w[13]\.weight$)"}, {}},
                       {K::kSkip, {R"(.*\.block_sparse_moe\.gate\.weight$)"}, {}}};
    (*t)["deepseek_v2"] = {
        {K::kRow, {o_proj}, {}},
        {K::kSkip, {R"(.*\.self_attn\.(q_a_proj|kv_a_proj_with_mqa)\.weight$)"}, {}},
        {K::kColumn, {R"(.*\.self_attn\.(q_b_proj|kv_b_proj)\.weight$)"}, {}},
        {K::kRow, {R"(.*\.mlp\.experts\.\d+\.down_proj\.weight$)"}, {}},
        {K::kColumn, {R"(.*\.mlp\.experts\.\d+\.(up|gate)_proj\.weight$)"}, {}},
        {K::kSkip, {R"(.*\.mlp\.gate\.weight$)"}, {}},
        {K::kRow, {R"(.*\.mlp\.shared_experts\.down_proj\.weight$)"}, {}},
        {K::kColumn, {R"(.*\.mlp\.shared_experts\.(up|gate)_proj\.weight$)"}, {}}};
    (*t)["phi3"] = {
        {K::kRow, {o_proj}, {}},
        {K::kColumn, {R"(.*\.self_attn\.qkv_proj\.weight$)"}, {{false, {3}}, {false, {-1}}}},
        {K::kRow, {down}, {}},
        {K::kColumn, {R"(.*\.mlp\.gate_up_proj\.weight$)"}, {{false, {2}}, {false, {-1}}}}};
    return t;
  }();
  return *table;
}

// Every preset pattern compiled once per process (the table is fixed; PythonRegex shares its
// compiled code): compiling them on each validate cost a third of a typical config's time.
const PythonRegex& CompiledPresetPattern(const char* pattern) {
  static const std::map<std::string, PythonRegex>* cache = [] {
    auto* m = new std::map<std::string, PythonRegex>();
    for (const auto& [name, rows] : PresetTable()) {
      for (const PresetRow& row : rows) {
        for (const char* p : row.patterns) m->emplace(p, CompilePythonRegex(p));
      }
    }
    return m;
  }();
  return cache->at(pattern);
}

}  // namespace

std::vector<LayerSpec> PresetSpecs(const std::string& preset, const std::string& pointer) {
  std::vector<LayerSpec> out;
  auto it = PresetTable().find(preset);
  if (it == PresetTable().end()) return out;
  for (size_t i = 0; i < it->second.size(); ++i) {
    const PresetRow& row = it->second[i];
    LayerSpec s;
    s.pointer = pointer;
    s.label = "preset '" + preset + "' spec " + std::to_string(i);
    s.from_preset = true;
    s.kind = row.kind;
    s.shape = row.shape;
    s.has_shape = !row.shape.empty();
    s.partition_dim = row.kind == PartitionKind::kColumn ? 0 : 1;
    for (const char* p : row.patterns) {
      SpecPattern sp;
      sp.pointer = pointer;
      sp.regex = CompiledPresetPattern(p);
      sp.digit_blind = IsIndexBlind(p);
      s.patterns.push_back(std::move(sp));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace dsp::autotp
