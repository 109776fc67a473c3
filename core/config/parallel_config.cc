// SPDX-License-Identifier: Apache-2.0
#include "core/config/parallel_config.h"

namespace dsp {

ParallelConfig ReadParallelConfig(const ConfigView& view) {
  ParallelConfig pc;
  const Json* zero = view.Get("/zero_optimization");
  if (zero != nullptr && zero->is_boolean()) {
    pc.zero_legacy_bool = true;
    pc.zero_stage.state = ValueState::kPresent;
    pc.zero_stage.value = zero->get<bool>() ? 1 : 0;
    pc.zero_stage.pointer = "/zero_optimization";
  } else {
    pc.zero_stage = view.Int("/zero_optimization/stage");
  }

  pc.autotp_size = view.Int("/tensor_parallel/autotp_size");
  if (pc.autotp_size.present() && pc.autotp_size.value > 1) pc.tp = pc.autotp_size.value;
  {
    // TPTrainingConfig.get_partition_config_object tests `if self.partition_config:`, so {} is none.
    const Json* preset = view.Get("/tensor_parallel/preset_model");
    const Json* partition = view.Get("/tensor_parallel/partition_config");
    const bool custom = partition != nullptr && partition->is_object() && !partition->empty();
    pc.autotp_transformers_plan = pc.tp > 1 && (preset == nullptr || preset->is_null()) && !custom;
  }

  for (const auto& [pointer, proposed] :
       {std::pair<const char*, bool>{"/sequence_parallel_size", false},
        {"/sequence_parallel/autosp_size", true},
        {"/compile/sp_size", true}}) {
    auto s = view.Int(pointer);
    if (s.present()) pc.sp_forms.push_back(SpForm{pointer, s.value, proposed});
  }
  // DeepSpeed reads only the top-level key; the proposed forms stand in when it is absent.
  for (const auto& f : pc.sp_forms) {
    if (!f.proposed_only) pc.sp = f.size;
  }
  if (pc.sp_forms.size() > 0 && pc.sp_forms.front().proposed_only) pc.sp = pc.sp_forms.front().size;
  if (pc.sp < 1) pc.sp = 1;

  pc.dp_declared_top = view.Int("/data_parallel_size");
  pc.dp_declared_compile = view.Int("/compile/dp_size");

  pc.autoep_enabled = view.Bool("/expert_parallel/enabled").or_default(false);
  pc.autoep_size = view.Int("/expert_parallel/autoep_size");
  pc.etp_setting = view.Int("/expert_parallel/expert_tensor_parallel_size");
  if (pc.autoep_enabled) {
    pc.ep = pc.autoep_size.or_default(1);
    pc.etp = pc.etp_setting.or_default(1);
  }
  pc.data_before_expert = view.Bool("/use_data_before_expert_parallelism").or_default(false);
  pc.deepcompile = view.Bool("/compile/deepcompile").or_default(false);
  if (const Json* passes = view.Get("/compile/passes"); passes != nullptr && passes->is_array()) {
    for (const auto& p : *passes) {
      if (p.is_string()) pc.compile_passes.push_back(p.get<std::string>());
    }
  }
  return pc;
}

}  // namespace dsp
