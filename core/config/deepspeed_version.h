// SPDX-License-Identifier: Apache-2.0
// DeepSpeed release a config targets. Some rules changed across releases; each rule's history names
// the first release with the new behaviour (from version.txt history of deepspeedai/DeepSpeed).
#pragma once

#include <vector>

#include "core/util/result.h"

#include <optional>
#include <string>
#include <string_view>

namespace dsp {

struct DeepSpeedVersion {
  int major = 0;
  int minor = 19;
  int patch = 6;  // the default target: DeepSpeed main at edaa7221 (2026-08-22)
  // DeepSpeed master after edaa7221: the PRs merged since that change what ds-plan checks
  // (kMasterPrs), newer than every release and than the default target.
  bool master = false;

  auto operator<=>(const DeepSpeedVersion&) const = default;
  // "0.19.6", or "master".
  std::string ToString() const;
  // The default target (edaa7221); Master() is newer still.
  static DeepSpeedVersion Newest() { return {}; }
  static constexpr DeepSpeedVersion Master() { return {0, 19, 6, true}; }
  // "0.18", "0.18.3", "v0.19.4", "master"; nullopt when malformed.
  static std::optional<DeepSpeedVersion> Parse(std::string_view text);
};

// The DeepSpeed tree the rules were read from and its newest behaviour follows: not a release (the
// newest tag is v0.19.5); 0.19.6 is that commit's version.txt.
inline constexpr const char* kDeepSpeedRulesSource =
    "deepspeedai/DeepSpeed main at edaa7221 (2026-08-22, version.txt 0.19.6)";
// What --deepspeed-version master adds on top: the merged pull requests read from their diffs.
inline constexpr const char* kMasterPrs = "#8213, #8266, #8274, #8326, #8359, #8380";

// Releases where behaviour ds-plan checks changed: the first release tag containing each PR
// (`git tag --contains` in deepspeedai/DeepSpeed). The single source of these numbers.
namespace ds_release {
inline constexpr DeepSpeedVersion kAutocastWithZero{0, 17, 2};        // PR #6993: torch_autocast with ZeRO, rejecting fp16/bf16
inline constexpr DeepSpeedVersion kAutocastLowPrecision{0, 18, 3};    // PR #7700: autocast combines with fp16/bf16
inline constexpr DeepSpeedVersion kAutoEp{0, 19, 2};                  // PR #7938: AutoEP (expert_parallel section)
inline constexpr DeepSpeedVersion kGradientClippingDefault{0, 19, 3}; // PR #8068: gradient_clipping defaults to 1.0
inline constexpr DeepSpeedVersion kAutoEpFolding{0, 19, 3};           // PR #8064: AutoEP + AutoTP parallel folding
inline constexpr DeepSpeedVersion kAutoEpZero3{0, 19, 3};             // PR #8060: AutoEP under ZeRO stage 3
inline constexpr DeepSpeedVersion kAutocastRelaxed{0, 17, 6};         // PR #7543: autocast without fp32 communication
inline constexpr DeepSpeedVersion kLowPrecisionMaster{0, 18, 3};      // PR #7700: bf16 master weights / optimizer states
inline constexpr DeepSpeedVersion kAutoTpPartitionConfig{0, 18, 6};   // PR #7806: partition_config, preset_model
inline constexpr DeepSpeedVersion kCompilePasses{0, 18, 9};           // PR #7860: compile.passes (z1, z3, autosp)
inline constexpr DeepSpeedVersion kAutoTpGatherOutput{0, 19, 4};      // PR #8146: layer_specs[].gather_output
inline constexpr DeepSpeedVersion kWarmupStepsValidated{0, 19, 3};    // PR #8126: warmup_num_steps must be a positive int
inline constexpr DeepSpeedVersion kSchedulerStepGuards{0, 19, 4};     // PR #8166: LRRangeTest/OneCycle step sizes checked
// ZeRO-3's collectives (deepspeed/runtime/zero/stage3.py, partition_parameters.py):
inline constexpr DeepSpeedVersion kZero3ReduceScatterDefaultOff{0, 3, 16};   // reduce_scatter default false
inline constexpr DeepSpeedVersion kZero3ReduceScatterDefaultFixed{0, 4, 0};  // ... true again
inline constexpr DeepSpeedVersion kZero3ContiguousGradientsDefault{0, 4, 3}; // stage-3 contiguous_gradients default true
inline constexpr DeepSpeedVersion kZero3AllGatherBase{0, 5, 5};  // c0eeb69df (#1188): _all_gather_base per parameter
inline constexpr DeepSpeedVersion kZero3Coalesced{0, 6, 0};      // 4912e0ad7: one coalesced gather per fetch on its own stream
// Merged after v0.19.5: in DeepSpeed main (0.19.6 under development), the newest behaviour.
inline constexpr DeepSpeedVersion kAutoTpHfPlan{0, 18, 9};            // PR #7901: AutoTP converts transformers' tp_plan
inline constexpr DeepSpeedVersion kAutoTpHfPlanStrict{0, 19, 6};      // PR #8204: an unsupported tp_plan style raises ValueError
inline constexpr DeepSpeedVersion kCompileAutoTp{0, 19, 6};           // PR #8204: the "autotp" compile pass
inline constexpr DeepSpeedVersion kAutoTpGradAllreduce{0, 19, 6};     // PR #8204: layer_specs[].grad_allreduce
inline constexpr DeepSpeedVersion kGradientAllreduceOp{0, 19, 6};     // PR #8232: gradient_allreduce_op
inline constexpr DeepSpeedVersion kAsyncCpuCheckpointing{0, 19, 6};   // PR #8282: async cpu_checkpointing
inline constexpr DeepSpeedVersion kOffloadPinMemoryDefault{0, 19, 5}; // PR #8207: offload pin_memory defaults to true
inline constexpr DeepSpeedVersion kOneCycleGroupLists{0, 19, 6};      // PR #8201: OneCycle lists, one per param group
// Merged after edaa7221: --deepspeed-version master.
inline constexpr DeepSpeedVersion kReduceBucketPositive = DeepSpeedVersion::Master();  // PR #8266: gt=0 at read
inline constexpr DeepSpeedVersion kAutoEpDeepEp = DeepSpeedVersion::Master();          // PR #8213: comm_backend "deepep"
inline constexpr DeepSpeedVersion kAutoEpFusedCombine = DeepSpeedVersion::Master();    // PR #8326: fused_weighted_sum
inline constexpr DeepSpeedVersion kAutoEpAsyncSplitPlan = DeepSpeedVersion::Master();  // PR #8359: async_split_plan
inline constexpr DeepSpeedVersion kCompileAutoEpNonMoe = DeepSpeedVersion::Master();   // PR #8380: compile.autoep_non_moe
inline constexpr DeepSpeedVersion kZenFlowStrictBounds = DeepSpeedVersion::Master();   // PR #8274: topk_ratio, update_interval
}  // namespace ds_release

// The releases at which a behaviour ds-plan models changes (the ds_release constants), oldest
// first, without repeats.
std::vector<DeepSpeedVersion> BehaviourChanges();

// --deepspeed-version as the commands take it: X.Y or X.Y.Z between 0.1.0 (DeepSpeed's first
// release) and 0.19.6 (the default, main at edaa7221), or "master". Anything else is an error that
// says which versions the rules know and where their behaviour changes.
Result<DeepSpeedVersion> ParseKnownDeepSpeedVersion(std::string_view text);

}  // namespace dsp
