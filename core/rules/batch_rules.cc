// SPDX-License-Identifier: Apache-2.0
// The batch triple (deepspeed/runtime/config.py _set_batch_related_parameters): DeepSpeed's fill-in table, its assertions in order,
// and the world size it really divides by.
#include <cmath>
#include <string>
#include <vector>

#include "core/config/batch_triple.h"
#include "core/rules/rule_context.h"
#include "core/rules/rule_sets.h"
#include "core/util/text.h"

namespace dsp {
namespace {

constexpr const char* kBatch = "/train_batch_size";
constexpr const char* kMicro = "/train_micro_batch_size_per_gpu";
constexpr const char* kGas = "/gradient_accumulation_steps";

// Data-parallel sizes (1..limit) that make the given keys consistent after DeepSpeed's fill-in.
std::vector<int64_t> ConsistentSizes(std::optional<int64_t> b, std::optional<int64_t> m,
                                     std::optional<int64_t> g, int64_t limit) {
  std::vector<int64_t> out;
  for (int64_t ws = 1; ws <= limit; ++ws) {
    int64_t B = b.value_or(0), M = m.value_or(0), G = g.value_or(0);
    if (b && m && g) {
    } else if (b && m) {
      G = (B / M) / ws;
    } else if (b && g) {
      M = (B / ws) / G;
    } else if (m && g) {
      B = M * G * ws;
    } else if (b) {
      G = 1;
      M = B / ws;
    } else if (m) {
      G = 1;
      B = M * ws;
    }
    if (B > 0 && M > 0 && G > 0 && B == M * G * ws) out.push_back(ws);
  }
  return out;
}

void CheckBatch(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  auto b = v.IntNullUnset(kBatch), m = v.IntNullUnset(kMicro), g = v.IntNullUnset(kGas);

  std::vector<std::string> deferred;
  for (const auto* s : {&b, &m, &g}) {
    if (s->is_auto()) deferred.push_back(DottedName(s->pointer));
  }
  if (!deferred.empty()) {
    ctx.Report("batch-deferred", b.is_auto() ? b.pointer : (m.is_auto() ? m.pointer : g.pointer),
               JoinList(deferred) + (deferred.size() > 1 ? " are" : " is") +
                   " \"auto\": the batch check is deferred until the Hugging Face Trainer fills "
                   "them in at launch",
               "check now with --set " + deferred.front() + "=VALUE");
    return;
  }

  if (v.Bool("/elasticity/enabled").or_default(false)) {
    bool any = !b.absent() || !m.absent() || !g.absent();
    if (any && !v.Bool("/elasticity/ignore_non_elastic_batch_info").or_default(false)) {
      const std::string& p = !b.absent() ? b.pointer : (!m.absent() ? m.pointer : g.pointer);
      ctx.Report("batch-elasticity", p,
                 "elasticity is enabled and computes the batch sizes itself, but the config also "
                 "sets " + DottedName(p) + ": DeepSpeed raises ElasticityConfigError",
                 "remove the batch keys, or set elasticity.ignore_non_elastic_batch_info to true");
    }
    return;
  }

  // Wrong types are the schema's finding; do not pile on.
  for (const auto* s : {&b, &m, &g}) {
    if (s->state == ValueState::kWrongType) return;
  }
  if (!b.present() && !m.present()) {
    ctx.ReportIf(Condition::kBatchKeysAsWritten, "batch-missing", "",
               "neither train_batch_size nor train_micro_batch_size_per_gpu is set: DeepSpeed "
               "asserts \"Either train_batch_size or train_micro_batch_size_per_gpu needs to be "
               "provided\"",
               "set train_micro_batch_size_per_gpu (and gradient_accumulation_steps)");
    return;
  }
  // Values written as non-positive fail whatever the world size.
  for (const auto* s : {&b, &m, &g}) {
    if (s->present() && s->value <= 0) {
      ctx.Report("batch-nonpositive", s->pointer,
                 DottedName(s->pointer) + " is " + std::to_string(s->value) +
                     ": DeepSpeed asserts it has to be greater than 0",
                 "use a positive integer");
      return;
    }
  }

  auto world = BatchWorldSize(ctx.view(), ctx.world(), ctx.options().pp, ctx.options().mpu_tp,
                              ctx.options().context_parallel);
  if (!world) {
    auto sizes = ConsistentSizes(b.opt(), m.opt(), g.opt(), 4096);
    if (sizes.empty()) {
      ctx.Report("batch-mismatch", b.present() ? b.pointer : m.pointer,
                 "no data-parallel size makes the batch triple consistent: train_batch_size must "
                 "equal train_micro_batch_size_per_gpu x gradient_accumulation_steps x dp",
                 "make train_batch_size a multiple of micro batch x accumulation steps");
      return;
    }
    bool unconstrained = static_cast<int64_t>(sizes.size()) == 4096;
    if (!unconstrained) {
      std::vector<std::string> shown;
      for (size_t i = 0; i < sizes.size() && i < 16; ++i) shown.push_back(std::to_string(sizes[i]));
      std::string list = JoinList(shown, ", ") + (sizes.size() > 16 ? ", ..." : "");
      ctx.Report("batch-dp-candidates", b.present() ? b.pointer : m.pointer,
                 "without a world size the batch triple can only be checked in part: it is "
                 "consistent for a data-parallel size of " + list,
                 "pass --world-size N (or --nodes and --gpus-per-node) for the full check");
    }
    return;
  }

  const BatchTriple t = FillBatchTriple(b.opt(), m.opt(), g.opt(), world->ws);
  const double ws = world->ws, B = t.batch, M = t.micro, G = t.gas;
  const std::string& derived = t.derived;
  std::string where = " (ws = " + world->how + (derived.empty() ? "" : "; " + derived) + ")";

  struct Check {
    double value;
    const char* label;
    const std::string& pointer;
  };
  const std::string& anchor = b.present() ? b.pointer : m.pointer;
  for (const Check& c : {Check{B, "Train batch size", b.present() ? b.pointer : anchor},
                         Check{M, "Micro batch size per gpu", m.present() ? m.pointer : anchor},
                         Check{G, "Gradient accumulation steps", g.present() ? g.pointer : anchor}}) {
    if (c.value <= 0) {
      ctx.Report("batch-nonpositive", c.pointer,
                 std::string(c.label) + ": " + FormatBatchNumber(c.value) + " has to be greater than 0" + where,
                 "train_batch_size must be at least micro batch x world size; lower the micro batch "
                 "or raise train_batch_size");
      return;
    }
  }
  if (B != M * G * ws) {
    double fit = M * G * ws;
    ctx.Report("batch-mismatch", anchor,
               "train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * "
               "world_size: " + FormatBatchNumber(B) + " != " + FormatBatchNumber(M) + " * " + FormatBatchNumber(G) + " * " + FormatBatchNumber(ws) + where,
               "set train_batch_size to " + FormatBatchNumber(fit) +
                   ", or drop one of the three keys and let DeepSpeed derive it");
    return;
  }

  // AutoTP configured through tensor_parallel.autotp_size: the check above used the full world,
  // but the engine feeds the same samples to every rank of a TP group.
  const ParallelConfig& pc = ctx.parallel();
  if (pc.tp > 1 && !v.Has("/sequence_parallel_size") && ctx.options().pp == 1) {
    double distinct = B / static_cast<double>(pc.tp);
    ctx.Report("batch-autotp-world", anchor,
               "DeepSpeed checks train_batch_size against the full world size (" + FormatBatchNumber(ws) +
                   ") because AutoTP groups do not exist yet when the config is read, but the " +
                   std::to_string(pc.tp) + " ranks of each tensor-parallel group see the same "
                   "samples: each optimizer step consumes " + FormatBatchNumber(distinct) + " distinct samples, "
                   "not " + FormatBatchNumber(B),
               "size learning-rate schedules and token budgets with " + FormatBatchNumber(distinct) +
                   " samples per step");
  }
}

void CheckManagedAccumulation(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  auto managed = v.Bool("/managed_gradient_accumulation");
  if (!managed.present() || managed.value) return;
  const ParallelConfig& pc = ctx.parallel();
  std::string why;
  if (ctx.options().pp > 1) {
    why = "pipeline parallelism";
  } else if (pc.deepcompile) {
    why = "DeepCompile (compile.deepcompile)";
  } else if (v.Bool("/amp/enabled").or_default(false)) {
    why = "Apex AMP";
  } else if (v.Bool("/zero_optimization/overlap_comm").or_default(pc.zero_stage.or_default(0) == 3) &&
             pc.zero_stage.or_default(0) < 2) {
    why = "overlap_comm below ZeRO stage 2";
  }
  if (why.empty()) return;
  ctx.Report("batch-unmanaged-accumulation", managed.pointer,
             "managed_gradient_accumulation=false is rejected together with " + why,
             "remove managed_gradient_accumulation or the conflicting feature");
}

}  // namespace

RuleSet BatchRules() {
  RuleSet set;
  set.name = "batch";
  set.rules = {
      {"batch-missing", Severity::kError, "batch", "no batch size given",
       "DeepSpeed needs train_batch_size or train_micro_batch_size_per_gpu; with only "
       "gradient_accumulation_steps (or nothing) _set_batch_related_parameters (runtime/config.py, "
       "0.19.6) asserts at start-up. Some launchers add the batch size to the config they pass "
       "(PyTorch Lightning's DeepSpeedStrategy sets train_micro_batch_size_per_gpu, DeepSpeed's "
       "autotuner fills its templates), so without --consumer this is a warning; the Trainer, "
       "Accelerate and Megatron-DeepSpeed only replace \"auto\" values and never add a missing key.",
       ""},
      {"batch-nonpositive", Severity::kError, "batch", "a batch value is, or is derived as, <= 0",
       "_batch_assertion checks train_batch_size, micro batch and accumulation steps in that "
       "order, after filling in the missing ones with integer floor division (for example "
       "batch 33, micro 17 on 2 ranks gives gas = 33 // 17 // 2 = 0).",
       ""},
      {"batch-mismatch", Severity::kError, "batch", "train_batch_size != micro x gas x world",
       "After the fill-in, DeepSpeed asserts train_batch_size == micro x gas x ws. ws is the world "
       "size, divided by sequence_parallel_size when that key is present (float division), the "
       "data_parallel_size of the (dp, sp) mesh when both keys are present, or the pipeline "
       "data-parallel size under PipelineModule. AutoTP does not divide it (see "
       "batch-autotp-world).",
       ""},
      {"batch-dp-candidates", Severity::kNote, "batch",
       "without a world size: which data-parallel sizes fit",
       "Without --world-size the triple cannot be checked fully; ds-plan lists the data-parallel "
       "sizes for which DeepSpeed's fill-in and assertion succeed.",
       ""},
      {"batch-deferred", Severity::kNote, "batch", "batch keys are \"auto\"",
       "The Hugging Face Trainer replaces \"auto\" with its own arguments before DeepSpeed reads "
       "the config. Supply the values with --set to check them now.",
       ""},
      {"batch-elasticity", Severity::kError, "batch", "batch keys together with elasticity",
       "With elasticity.enabled, DeepSpeed computes the batch itself and raises "
       "ElasticityConfigError when batch keys are also present, unless "
       "elasticity.ignore_non_elastic_batch_info is true.",
       ""},
      {"batch-autotp-world", Severity::kNote, "batch",
       "AutoTP: the batch is checked against the full world, not W/TP",
       "The config object is built before the engine creates AutoTP groups, so DeepSpeed checks "
       "train_batch_size against all W ranks while the engine's data-parallel size is W/TP: the "
       "TP ranks of a group consume the same samples, so a step sees train_batch_size/TP distinct "
       "samples.",
       ""},
      {"batch-unmanaged-accumulation", Severity::kError, "batch",
       "managed_gradient_accumulation=false with a feature that needs it",
       "The engine rejects managed_gradient_accumulation=false with pipeline parallelism, "
       "DeepCompile, Apex AMP, and with overlap_comm unless the ZeRO stage is at least 2.",
       ""},
  };
  set.check = [](RuleContext& ctx) {
    CheckBatch(ctx);
    CheckManagedAccumulation(ctx);
  };
  return set;
}

}  // namespace dsp
