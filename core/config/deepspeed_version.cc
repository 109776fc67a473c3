// SPDX-License-Identifier: Apache-2.0
#include "core/config/deepspeed_version.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace dsp {

std::string DeepSpeedVersion::ToString() const {
  if (master) return "master";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::optional<DeepSpeedVersion> DeepSpeedVersion::Parse(std::string_view text) {
  if (text == "master") return Master();
  if (!text.empty() && (text.front() == 'v' || text.front() == 'V')) text.remove_prefix(1);
  std::vector<int> parts;
  while (!text.empty()) {
    int value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || value < 0) return std::nullopt;
    parts.push_back(value);
    text.remove_prefix(static_cast<size_t>(ptr - text.data()));
    if (text.empty()) break;
    if (text.front() != '.') return std::nullopt;
    text.remove_prefix(1);
    if (text.empty()) return std::nullopt;
  }
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  DeepSpeedVersion v{parts[0], parts[1], parts.size() == 3 ? parts[2] : 0};
  return v;
}

std::vector<DeepSpeedVersion> BehaviourChanges() {
  using namespace ds_release;
  std::vector<DeepSpeedVersion> v = {
      kAutocastWithZero,      kAutocastLowPrecision,   kAutoEp,          kGradientClippingDefault,
      kAutoEpFolding,         kAutoEpZero3,            kAutocastRelaxed, kLowPrecisionMaster,
      kAutoTpPartitionConfig, kCompilePasses,          kAutoTpGatherOutput, kWarmupStepsValidated, kSchedulerStepGuards, kZero3ReduceScatterDefaultOff,
      kZero3ReduceScatterDefaultFixed, kZero3ContiguousGradientsDefault, kZero3AllGatherBase, kZero3Coalesced,
      kCompileAutoTp,         kAutoTpGradAllreduce,    kGradientAllreduceOp, kAsyncCpuCheckpointing,
      kOffloadPinMemoryDefault, kOneCycleGroupLists, kReduceBucketPositive};
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

Result<DeepSpeedVersion> ParseKnownDeepSpeedVersion(std::string_view text) {
  std::string changes;
  for (const DeepSpeedVersion& v : BehaviourChanges()) changes += (changes.empty() ? "" : ", ") + v.ToString();
  const std::string known = "ds-plan knows DeepSpeed 0.1.0 to " + DeepSpeedVersion::Newest().ToString() +
                            " (main at edaa7221) and master (PRs " + kMasterPrs +
                            "); behaviour it checks changes at " + changes;
  const std::string shown = text.size() > 40 ? std::string(text.substr(0, 40)) + "..." : std::string(text);
  auto v = DeepSpeedVersion::Parse(text);
  if (!v) return Error{"--deepspeed-version \"" + shown + "\" is not a version (X.Y, X.Y.Z or master): " + known};
  if (v->master) return *v;
  if (*v > DeepSpeedVersion::Newest()) {
    return Error{"--deepspeed-version " + v->ToString() + " is newer than any release the rules know: " + known +
                 "; leave the flag out to check against " + DeepSpeedVersion::Newest().ToString() +
                 ", or give master"};
  }
  if (*v < DeepSpeedVersion{0, 1, 0}) {
    return Error{"--deepspeed-version " + v->ToString() + " is older than DeepSpeed's first release: " + known};
  }
  return *v;
}

}  // namespace dsp
