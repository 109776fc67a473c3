// SPDX-License-Identifier: Apache-2.0
// Shared between the AutoEP rule files: expert_parallel_rules.cc (the section's own keys, ZeRO-3,
// versions, --model) and folding_rules.cc (build_folding_spec and validate_folding_global).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/rules/rule.h"
#include "core/rules/rule_context.h"

namespace dsp::autoep {

inline constexpr const char* kSection = "/expert_parallel";
inline bool IsNull(const Json* j) { return j == nullptr || j->is_null(); }
inline std::string Key(std::string_view key) {
  return std::string(kSection) + "/" + std::string(key);
}

using ds_release::kAutoEpZero3;

// What the AutoEP checks read, the way DeepSpeed reads it. expert_parallel is parsed with dict
// .get: no "auto" handling, Python truthiness for flags, isinstance(int) for sizes (2.0 is not an
// int, true is 1).
struct EpFacts {
  bool enabled = false;
  // autoep_size / expert_tensor_parallel_size as Python ints; nullopt when not an int (reported by
  // ep-size-invalid). Absent keys take DeepSpeed's default 1.
  std::optional<int64_t> ep;
  std::optional<int64_t> etp;
  bool ep_given = false;
  int64_t tp = 1;  // max(tensor_parallel.autotp_size, 1)
  int64_t sp = 1;  // top-level sequence_parallel_size, as the mesh / Ulysses mpu report it
  int64_t pp = 1;  // from --pp (DeepSpeed takes it from the pipeline mpu)
  std::optional<int64_t> world;
  std::optional<int64_t> zero_stage;
  bool data_before = false;     // use_data_before_expert_parallelism (truthiness)
  bool folding_release = true;  // the targeted DeepSpeed has PR #8064

  std::string ep_pointer() const { return ep_given ? Key("autoep_size") : Key("enabled"); }
};

EpFacts ReadFacts(const RuleContext& ctx);

// Python's isinstance(v, int): integers and booleans.
std::optional<int64_t> PyInt(const Json& v);

// validate_autoep_config's per-key checks and warnings (expert_parallel_fields.cc).
void CheckFields(RuleContext& ctx, const EpFacts& f);

// build_folding_spec, validate_folding_global (a-i), the mpu-only rules (j, k) and where EP groups
// land on nodes.
void CheckFolding(RuleContext& ctx, const EpFacts& f);
std::vector<RuleInfo> FoldingRuleInfos();

// The keys of DeepSpeed master after edaa7221 (expert_parallel_comm.cc): unknown to the releases,
// checked on master (PRs #8213, #8326, #8359).
void CheckMasterKeys(RuleContext& ctx, const EpFacts& f);
std::vector<RuleInfo> MasterKeyRuleInfos();

}  // namespace dsp::autoep
