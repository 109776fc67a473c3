#include "sim/tune.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include "core/plan/plan.h"
#include "core/validate/validator.h"
#include "sim/group_links.h"
#include "sim/sim_input.h"

namespace dsp::sim {
namespace {

std::vector<int64_t> PowersOfTwoUpTo(int64_t limit) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= limit; v *= 2) out.push_back(v);
  return out;
}

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// The DeepSpeed config of one candidate. The batch triple uses DeepSpeed's world-size semantics
// (the full world under AutoTP, world / sp with sequence_parallel_size), so validate accepts it.
Json MakeConfig(const ModelSpec& model, int64_t world, int64_t tp, int64_t sp, int64_t ep, int zero,
                Offload offload, int64_t micro, int64_t gas, Recompute recompute) {
  Json c = Json::object();
  int64_t ws = sp > 1 ? world / sp : world;
  c["train_batch_size"] = micro * gas * ws;
  c["train_micro_batch_size_per_gpu"] = micro;
  c["gradient_accumulation_steps"] = gas;
  c["gradient_clipping"] = 1.0;
  c["bf16"] = {{"enabled", true}};
  c["optimizer"] = {{"type", "AdamW"}, {"params", {{"lr", 3e-4}, {"weight_decay", 0.1}}}};
  Json z = {{"stage", zero}};
  if (zero > 0) z["overlap_comm"] = true;
  if (offload != Offload::kNone) z["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  if (offload == Offload::kOptimizerAndParams) z["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  c["zero_optimization"] = z;
  if (tp > 1) c["tensor_parallel"] = {{"autotp_size", tp}};
  if (sp > 1) c["sequence_parallel_size"] = sp;
  if (model.is_moe() && ep >= 1) {
    Json e = {{"enabled", true}, {"autoep_size", ep}};
    for (const char* preset : {"mixtral", "qwen3_moe"}) {
      if (model.model_type == preset) e["preset_model"] = preset;
    }
    c["expert_parallel"] = e;
  }
  // Recompute is chosen in the training script (gradient checkpointing), not in the DeepSpeed
  // config; keys starting with "_" are comments to DeepSpeed and to validate.
  c["_ds_plan"] = {{"recompute", RecomputeName(recompute)}};
  return c;
}

bool Better(const TunedPlan& a, const TunedPlan& b) {
  if (a.tokens_per_second != b.tokens_per_second) return a.tokens_per_second > b.tokens_per_second;
  // Deterministic tie-break: less memory, then the simpler layout.
  if (a.peak_bytes != b.peak_bytes) return a.peak_bytes < b.peak_bytes;
  return std::tie(a.tp, a.sp, a.ep, a.zero_stage, a.micro_batch) <
         std::tie(b.tp, b.sp, b.ep, b.zero_stage, b.micro_batch);
}

}  // namespace

std::string_view OffloadName(Offload o) {
  switch (o) {
    case Offload::kNone: return "none";
    case Offload::kOptimizer: return "optimizer";
    case Offload::kOptimizerAndParams: return "optimizer+params";
  }
  return "none";
}

Result<TuneResult> Tune(const ModelSpec& model, const Cluster& cluster, const TuneOptions& options,
                        const std::function<void(int64_t, int64_t)>& progress) {
  auto start = std::chrono::steady_clock::now();
  const int64_t world = options.world_size;
  if (world <= 0) return Error{"tune needs --world-size (or --nodes and --gpus-per-node)"};
  const int64_t gpn = options.gpus_per_node > 0 ? options.gpus_per_node : cluster.gpus_per_node;
  // The cost model reads the node size from the cluster: keep it in step with --gpus-per-node.
  Cluster machines = cluster;
  machines.gpus_per_node = static_cast<int>(gpn);
  if (options.seq_len <= 0) return Error{"--seq-len must be positive"};
  TuneResult result;
  result.global_batch = options.global_batch > 0
                            ? options.global_batch
                            : std::max<int64_t>(1, (int64_t{4} << 20) / options.seq_len);

  // Layout candidates: AutoTP inside a node, Ulysses SP up to the world, EP over the experts.
  std::vector<std::tuple<int64_t, int64_t, int64_t>> layouts;
  for (int64_t tp : PowersOfTwoUpTo(std::min(gpn, world))) {
    for (int64_t sp : PowersOfTwoUpTo(world / tp)) {
      if (tp > 1 && sp > 1) continue;  // no DeepSpeed layout combines AutoTP and Ulysses
      std::vector<int64_t> eps = {1};
      if (model.is_moe()) eps = Divisors(model.num_experts);
      for (int64_t ep : eps) {
        if (world % (tp * sp) != 0 || world % ep != 0) continue;
        layouts.emplace_back(tp, sp, ep);
      }
    }
  }

  ValidateOptions vopt;
  vopt.world_size = world;
  vopt.gpus_per_node = gpn;
  vopt.model = &model;
  vopt.seq_len = options.seq_len;

  std::vector<TunedPlan> kept;
  int64_t done = 0;
  for (const auto& [tp, sp, ep] : layouts) {
    if (progress) progress(done, static_cast<int64_t>(layouts.size()));
    ++done;
    PlanInputs pin;
    pin.world_size = world;
    pin.gpus_per_node = gpn;
    Json layout_config = MakeConfig(model, world, tp, sp, ep, 0, Offload::kNone, 1, 1, Recompute::kNone);
    auto plan = BuildPlan(layout_config, pin);
    if (!plan.ok()) continue;
    const int64_t dp = plan->derived.dp;
    if (result.global_batch % dp != 0) continue;
    const int64_t per_rank = result.global_batch / dp;
    GroupLinkCache links;  // one plan, one cluster: shared by all its evaluations

    for (int zero = 0; zero <= 3; ++zero) {
      for (Offload offload : {Offload::kNone, Offload::kOptimizer, Offload::kOptimizerAndParams}) {
        if (offload != Offload::kNone && zero == 0) continue;
        if (offload == Offload::kOptimizerAndParams && zero != 3) continue;
        // The validate rules decide; batch values are representative (micro 1) and re-derived below.
        Json config = MakeConfig(model, world, tp, sp, ep, zero, offload, 1, per_rank, Recompute::kNone);
        std::vector<std::pair<Recompute, int64_t>> variants;
        for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
          for (int64_t micro = 1; micro <= std::min(per_rank, options.max_micro_batch); micro *= 2) {
            if (per_rank % micro == 0) variants.emplace_back(recompute, micro);
          }
        }
        result.evaluated += static_cast<int64_t>(variants.size());
        FileReport report = ValidateText("tune.json", config.dump(), vopt);
        if (!report.valid()) continue;
        result.valid += static_cast<int64_t>(variants.size());
        SimInput input;
        input.link_cache = &links;
        input.plan = &*plan;
        input.model = &model;
        input.cluster = &machines;
        input.zero = ReadZeroSettings(config);
        input.workload.seq_len = options.seq_len;
        input.workload.convention = options.convention;
        for (const auto& [recompute, micro] : variants) {
          {
            input.workload.micro_batch = micro;
            input.workload.grad_accum = per_rank / micro;
            input.workload.recompute = recompute;
            MemoryReport mem = EstimateMemory(input);
            if (!mem.fits) continue;
            ++result.fitting;
            TimeReport time = EstimateStepTime(input);
            TunedPlan p;
            p.tp = tp;
            p.sp = sp;
            p.ep = ep;
            p.dp = dp;
            p.edp = plan->derived.edp;
            p.zero_stage = zero;
            p.offload = offload;
            p.recompute = recompute;
            p.micro_batch = micro;
            p.grad_accum = per_rank / micro;
            p.peak_bytes = mem.peak_bytes;
            p.hbm_bytes = mem.hbm_bytes;
            p.step_seconds = time.step_seconds;
            p.tokens_per_second = time.tokens_per_second;
            p.mfu = time.mfu;
            kept.push_back(std::move(p));
            // Keep the candidate list small: only the best `top` can be printed.
            if (kept.size() > static_cast<size_t>(4 * std::max(options.top, 1))) {
              std::sort(kept.begin(), kept.end(), Better);
              kept.resize(static_cast<size_t>(std::max(options.top, 1)));
            }
          }
        }
      }
    }
  }
  if (progress) progress(done, static_cast<int64_t>(layouts.size()));
  std::sort(kept.begin(), kept.end(), Better);
  if (kept.size() > static_cast<size_t>(std::max(options.top, 0))) kept.resize(static_cast<size_t>(options.top));
  for (auto& p : kept) {
    p.config = MakeConfig(model, world, p.tp, p.sp, p.ep, p.zero_stage, p.offload, p.micro_batch,
                          p.grad_accum, p.recompute);
  }
  result.plans = std::move(kept);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace dsp::sim
