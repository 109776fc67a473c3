// SPDX-License-Identifier: Apache-2.0
// AutoEP keys merged into DeepSpeed master after edaa7221 (--deepspeed-version master), read from
// the pull requests' diffs of module_inject/auto_ep_config.py (validate_autoep_config,
// validate_autoep_post_detection) and module_inject/auto_ep_layer.py (set_deepspeed_parallelism,
// _deepep_route): the DeepEP transport (PR #8213: comm_backend, comm_num_sm, comm_qp_margin,
// comm_max_tokens_per_rank), the fused weighted-sum combine (PR #8326) and the asynchronous split
// plan (PR #8359). Releases do not know these keys: parse_autoep_config fills a dataclass and drops
// what it does not know, so there they are warnings that the setting does nothing.
#include <string>
#include <vector>

#include "core/rules/ds_semantics.h"
#include "core/rules/expert_parallel_internal.h"

namespace dsp::autoep {
namespace {

using ds_semantics::ShowValue;

struct MasterKey {
  const char* key;
  const char* pr;
  const char* effect;  // what the release does instead
};

constexpr MasterKey kMasterKeys[] = {
    {"comm_backend", "#8213", "the expert all-to-all always runs over torch.distributed"},
    {"comm_num_sm", "#8213", "there is no DeepEP transport to size"},
    {"comm_qp_margin", "#8213", "there is no DeepEP transport to size"},
    {"comm_max_tokens_per_rank", "#8213", "there is no DeepEP buffer to size"},
    {"async_split_plan", "#8359", "the split plan's device-to-host copy stays synchronous"},
};

// Python's repr() of a config value, as DeepSpeed's f"{x!r}" prints it.
using ds_semantics::PyRepr;

// comm_num_sm (>= 1), comm_qp_margin and comm_max_tokens_per_rank (>= 0): isinstance int.
void CheckCounts(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  struct Count {
    const char* key;
    int64_t min;
    const char* what;
  };
  for (const Count& c : {Count{"comm_num_sm", 1, "a positive integer"}, Count{"comm_qp_margin", 0, "a non-negative integer"},
                         Count{"comm_max_tokens_per_rank", 0, "a non-negative integer"}}) {
    const Json* j = v.Get(Key(c.key));
    if (j == nullptr) continue;
    std::optional<int64_t> n = PyInt(*j);
    if (n && *n >= c.min) continue;
    ctx.Report("ep-comm-settings", Key(c.key),
               std::string(c.key) + " must be " + c.what + ", got " + PyRepr(*j) +
                   ": validate_autoep_config raises ValueError",
               std::string("write an integer >= ") + std::to_string(c.min));
  }
}

}  // namespace

void CheckMasterKeys(RuleContext& ctx, const EpFacts& f) {
  const ConfigView& v = ctx.view();
  if (ctx.version() < ds_release::kAutoEpDeepEp) {
    for (const MasterKey& k : kMasterKeys) {
      if (!v.Has(Key(k.key))) continue;
      ctx.ReportKey("ep-key-unavailable", Key(k.key),
                    "expert_parallel." + std::string(k.key) + " does not exist in DeepSpeed " + ctx.version().ToString() +
                        ": it arrived on master (PR " + k.pr + "), and this release drops expert_parallel keys it "
                        "does not know, so " + k.effect,
                    "remove the key, or target master (--deepspeed-version master)");
    }
    return;
  }
  // Checked even when AutoEP is disabled (validate_autoep_config's type checks come first).
  if (const Json* j = v.Get(Key("async_split_plan")); j != nullptr && !j->is_boolean()) {
    ctx.Report("ep-async-split-plan", Key("async_split_plan"),
               "expert_parallel.async_split_plan is " + ShowValue(*j) +
                   ": validate_autoep_config raises ValueError(\"expert_parallel.async_split_plan must be a boolean\")",
               "write true or false");
  }
  if (!f.enabled) return;

  const Json* backend = v.Get(Key("comm_backend"));
  std::string comm = "comm";
  if (backend != nullptr) {
    if (backend->is_string() && (*backend == "comm" || *backend == "deepep")) {
      comm = backend->get<std::string>();
    } else {
      ctx.Report("ep-comm-settings", Key("comm_backend"),
                 "comm_backend must be one of ('comm', 'deepep'), got " + PyRepr(*backend) +
                     ": validate_autoep_config raises ValueError",
                 "use \"comm\" (torch.distributed all-to-all, the default) or \"deepep\"");
      comm = "";
    }
  }
  CheckCounts(ctx);
  const bool deepep = comm == "deepep";
  const int64_t ep = f.ep.value_or(1);
  if (deepep) {
    const Json* cap = v.Get(Key("comm_max_tokens_per_rank"));
    if (cap == nullptr || PyInt(*cap).value_or(-1) == 0) {
      ctx.Report("ep-deepep-unsupported", cap != nullptr ? Key("comm_max_tokens_per_rank") : Key("comm_backend"),
                 "comm_backend is \"deepep\" and comm_max_tokens_per_rank is " +
                     std::string(cap != nullptr ? "0" : "not set (default 0)") +
                     ": validate_autoep_config raises ValueError (\"comm_max_tokens_per_rank must be a positive "
                     "integer when comm_backend='deepep'\")",
                 "set it to the most tokens one rank routes: train_micro_batch_size_per_gpu x the longest padded "
                 "sequence");
    }
    if (f.tp > 1) {
      ctx.Report("ep-deepep-unsupported", Key("comm_backend"),
                 "comm_backend is \"deepep\" with tensor_parallel.autotp_size " + std::to_string(f.tp) +
                     ": AutoEPMoELayer.set_deepspeed_parallelism raises ValueError (\"comm_backend=\\\"deepep\\\" does "
                     "not support folded tensor parallelism\")",
                 "set tensor_parallel.autotp_size to 1, or comm_backend to \"comm\"");
    }
    if (ep > 1 && ds_semantics::Fp16Enabled(v)) {
      ctx.Report("ep-deepep-unsupported", Key("comm_backend"),
                 "comm_backend is \"deepep\" with fp16: the first forward raises TypeError (auto_ep_comm.py "
                 "assert_dtype_supported: DeepEP's dispatch kernel handles bfloat16 only)",
                 "train in bf16, or set comm_backend to \"comm\"");
    } else if (ep > 1 && !ds_semantics::Bf16Enabled(v)) {
      ctx.ReportAs(Severity::kWarning, "ep-deepep-unsupported", Key("comm_backend"),
                   "comm_backend is \"deepep\" without bf16: master's assert_dtype_supported accepts bfloat16 only "
                   "(an earlier master also took float32), so an fp32 model fails its first forward",
                   "enable bf16, or set comm_backend to \"comm\"");
    }
  }
  const Json* async = v.Get(Key("async_split_plan"));
  if (async != nullptr && *async == Json(true) && ep > 1 && f.tp > 1) {
    ctx.Report("ep-async-split-plan", Key("async_split_plan"),
               "async_split_plan with AutoEP+AutoTP folding (autoep_size " + std::to_string(ep) + ", autotp_size " +
                   std::to_string(f.tp) + "): validate_autoep_config raises ValueError (\"expert_parallel.async_split_plan "
                   "does not support AutoEP+AutoTP folding yet\")",
               "set tensor_parallel.autotp_size to 1, or remove async_split_plan");
  }
  const Json* combine = v.Get(Key("combine_impl"));
  if (combine == nullptr || *combine != Json("fused_weighted_sum")) return;
  auto refuse = [&](const std::string& why, const std::string& hint) {
    ctx.Report("ep-fused-combine", Key("combine_impl"), "combine_impl \"fused_weighted_sum\" " + why, hint);
  };
  if (f.tp > 1) {
    refuse("with tensor_parallel.autotp_size " + std::to_string(f.tp) +
               ": folded tensor parallelism restores tokens from assignment metadata, and validate_autoep_config "
               "raises ValueError",
           "set tensor_parallel.autotp_size to 1, or leave combine_impl unset");
  }
  if (f.etp.value_or(1) > 1) {
    refuse("requires expert_tensor_parallel_size=1, but got " + std::to_string(*f.etp) +
               ": validate_autoep_config raises ValueError",
           "set expert_tensor_parallel_size to 1, or leave combine_impl unset");
  }
  if (deepep && ep > 1) {
    refuse("cannot be used with comm_backend \"deepep\" (DeepEP already restores and reduces the routed rows): "
           "validate_autoep_config raises ValueError",
           "set comm_backend to \"comm\", or leave combine_impl unset");
  }
  const Json* apply = v.Get(Key("score_apply"));
  if (apply != nullptr && *apply == Json("pre")) {
    refuse("requires score_apply \"post\", and score_apply is \"pre\": validate_autoep_post_detection raises ValueError "
           "for every MoE layer",
           "set score_apply to \"post\" (or \"auto\" for a preset that applies scores after the experts), or leave "
           "combine_impl unset");
  }
}

std::vector<RuleInfo> MasterKeyRuleInfos() {
  return {
      {"ep-key-unavailable", Severity::kWarning, "expert_parallel", "an AutoEP key of DeepSpeed master in a release",
       "comm_backend, comm_num_sm, comm_qp_margin, comm_max_tokens_per_rank (PR #8213) and async_split_plan "
       "(PR #8359) exist only on master: a release's parse_autoep_config drops keys it does not know, so the "
       "setting does nothing.",
       "master: the keys are checked (ep-comm-settings, ep-deepep-unsupported, ep-async-split-plan)."},
      {"ep-comm-settings", Severity::kError, "expert_parallel", "comm_backend and its sizes out of range",
       "validate_autoep_config (master, PR #8213): comm_backend in ('comm', 'deepep'); comm_num_sm a positive "
       "int; comm_qp_margin and comm_max_tokens_per_rank non-negative ints (isinstance int).",
       ""},
      {"ep-deepep-unsupported", Severity::kError, "expert_parallel", "the DeepEP transport where it cannot run",
       "comm_backend \"deepep\" (master, PR #8213) needs comm_max_tokens_per_rank > 0 (validate_autoep_config), "
       "no folded tensor parallelism (set_deepspeed_parallelism) and bfloat16 rows (assert_dtype_supported, first "
       "forward, fp16 an error, fp32 a warning).",
       ""},
      {"ep-async-split-plan", Severity::kError, "expert_parallel", "async_split_plan not a boolean, or with folding",
       "validate_autoep_config (master, PR #8359): async_split_plan must be a boolean, even when AutoEP is off, "
       "and is refused with AutoEP+AutoTP folding (autoep_size > 1 and autotp_size > 1).",
       ""},
      {"ep-fused-combine", Severity::kError, "expert_parallel", "combine_impl fused_weighted_sum where it is refused",
       "combine_impl \"fused_weighted_sum\" (master, PR #8326) is refused with autotp_size > 1, "
       "expert_tensor_parallel_size > 1, comm_backend deepep with autoep_size > 1 (validate_autoep_config), and "
       "for a layer whose scores are applied before the experts (validate_autoep_post_detection).",
       ""},
  };
}

}  // namespace dsp::autoep
