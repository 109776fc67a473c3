// SPDX-License-Identifier: Apache-2.0
// The parallelism a DeepSpeed config asks for, read once from its several spellings. Rules check
// these settings; the layout and group tables are built from them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config_view.h"

namespace dsp {

// One place a sequence-parallel size can be written.
struct SpForm {
  std::string pointer;  // "/sequence_parallel_size", "/sequence_parallel/autosp_size", "/compile/sp_size"
  int64_t size = 1;
  bool proposed_only = false;  // a form from the AutoSP design discussion that DeepSpeed does not read
};

struct ParallelConfig {
  Setting<int64_t> zero_stage;      // legacy boolean form folded in (true -> 1, false -> 0)
  bool zero_legacy_bool = false;
  Setting<int64_t> autotp_size;     // tensor_parallel.autotp_size
  int64_t tp = 1;                   // autotp_size, with 0 and 1 both meaning "off"
  std::vector<SpForm> sp_forms;     // every SP spelling present with an integer value
  int64_t sp = 1;                   // the size DeepSpeed uses: top-level sequence_parallel_size, else a proposed form
  Setting<int64_t> dp_declared_top;      // top-level data_parallel_size
  Setting<int64_t> dp_declared_compile;  // compile.dp_size (proposed form)
  bool autoep_enabled = false;      // expert_parallel.enabled
  Setting<int64_t> autoep_size;
  int64_t ep = 1;
  Setting<int64_t> etp_setting;
  int64_t etp = 1;
  bool data_before_expert = false;  // use_data_before_expert_parallelism
  // AutoTP (tp > 1) with neither tensor_parallel.preset_model nor a non-empty partition_config:
  // DeepSpeed converts transformers' tp_plan (engine.py _get_hf_tp_plan, from 0.18.9).
  bool autotp_transformers_plan = false;
  bool deepcompile = false;         // compile.deepcompile
  std::vector<std::string> compile_passes;
};

ParallelConfig ReadParallelConfig(const ConfigView& view);

}  // namespace dsp
