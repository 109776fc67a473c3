// SPDX-License-Identifier: Apache-2.0
// Sequence parallelism (deepspeed/utils/groups.py, sequence/layer.py DistributedAttention,
// compile/config.py, and the AutoSP design discussion in DeepSpeed issue #7827):
// the SP size and the data-parallel size derived from it, the Ulysses/AutoSP constraints on the
// world, the model's attention heads and the sequence length, and where SP groups land.
//
// ds-plan accepts three spellings of the SP size (parallel_config.h SpForm): the top-level
// sequence_parallel_size that DeepSpeed reads, and two forms from the AutoSP design discussion
// that DeepSpeed does not read (compile.sp_size / compile.dp_size are rejected as unknown compile
// keys, a sequence_parallel section is ignored). The proposed forms are checked like the real one
// and come with a warning that names the exact replacement.
#include <algorithm>
#include <string>
#include <vector>

#include "core/model/model_spec.h"
#include "core/rules/ds_semantics.h"
#include "core/rules/rule_context.h"
#include "core/rules/rule_sets.h"
#include "core/util/text.h"

namespace dsp {
namespace {

using namespace ds_semantics;

std::string Str(int64_t x) { return std::to_string(x); }

// The form whose size ds-plan uses (ParallelConfig::sp): the top-level key, else the first
// proposed form.
const SpForm* EffectiveForm(const ParallelConfig& pc) {
  for (const auto& f : pc.sp_forms) {
    if (!f.proposed_only) return &f;
  }
  return pc.sp_forms.empty() ? nullptr : &pc.sp_forms.front();
}

void CheckForms(RuleContext& ctx) {
  const ParallelConfig& pc = ctx.parallel();
  const SpForm* eff = EffectiveForm(pc);
  const bool has_top = eff != nullptr && !eff->proposed_only;
  const int64_t size = eff != nullptr ? eff->size : 1;

  for (const auto& f : pc.sp_forms) {
    if (!f.proposed_only) continue;
    std::string fix = "write \"sequence_parallel_size\": " + Str(f.size) + " at the top level and remove " + DottedName(f.pointer);
    if (f.pointer == "/compile/sp_size") {
      // DeepSpeedConfig builds CompileConfig(**param_dict.get("compile", {})) (runtime/config.py,
      // 0.19.6) and DeepSpeedConfigModel forbids extra keys (runtime/config_utils.py): an error at
      // deepspeed.initialize, whether or not compile is enabled.
      ctx.ReportKey("sp-compile-key-rejected", f.pointer,
                    "compile.sp_size is a form from the AutoSP design discussion: DeepSpeed's "
                    "compile section rejects it as an unknown key and refuses to start (pydantic: "
                    "extra inputs are not permitted); AutoSP reads the top-level "
                    "sequence_parallel_size instead",
                    fix);
    } else {
      ctx.ReportKey("sp-proposed-form", f.pointer,
                    "sequence_parallel.autosp_size is a form from the AutoSP design discussion: "
                    "DeepSpeed has no sequence_parallel section and silently ignores it, so the "
                    "run has no sequence parallelism unless the top-level sequence_parallel_size "
                    "is set",
                    fix);
    }
  }
  if (pc.dp_declared_compile.present()) {
    std::string derived;
    if (auto w = ctx.world(); w && *w > 0 && size > 0) {
      int64_t denom = pc.tp * size * ctx.options().pp;
      if (denom > 0 && *w % denom == 0) derived = " (here " + Str(*w / denom) + ")";
    }
    ctx.ReportKey("sp-compile-key-rejected", pc.dp_declared_compile.pointer,
                  "compile.dp_size is a form from the AutoSP design discussion: DeepSpeed's compile "
                  "section rejects it as an unknown key and refuses to start; it derives dp = world / "
                  "sequence_parallel_size itself",
                  "remove compile.dp_size; the data-parallel size follows from the world size and "
                  "sequence_parallel_size" + derived);
  }

  // Two spellings with different sizes.
  for (const auto& f : pc.sp_forms) {
    if (eff == nullptr || &f == eff || f.size == eff->size) continue;
    ctx.Report("sp-forms-disagree", f.pointer,
               DottedName(f.pointer) + " is " + Str(f.size) + " but " + DottedName(eff->pointer) +
                   " is " + Str(eff->size) + ": the two spellings of the sequence-parallel size "
                   "disagree" +
                   (has_top ? ", and DeepSpeed uses only sequence_parallel_size" : ""),
               "keep one spelling: \"sequence_parallel_size\": " + Str(eff->size) +
                   " at the top level");
  }

  for (const auto& f : pc.sp_forms) {
    if (f.size >= 1) continue;
    ctx.Report("sp-invalid", f.pointer,
               DottedName(f.pointer) + " is " + Str(f.size) +
                   ": the sequence-parallel size must be at least 1 (DeepSpeedConfig divides the "
                   "world size by sequence_parallel_size, and Ulysses requires \"sequence_parallel_"
                   "size must be greater than 1\" to enable SP)",
               "use 1 (no sequence parallelism) or a divisor of the world size greater than 1");
  }
}

void CheckWorld(RuleContext& ctx) {
  const ParallelConfig& pc = ctx.parallel();
  const SpForm* eff = EffectiveForm(pc);
  auto world = ctx.world();
  if (!world || *world <= 0) return;
  const int64_t W = *world;
  const int64_t sp = pc.sp;  // >= 1
  const int64_t pp = ctx.options().pp;
  const int64_t tp = pc.tp;

  bool divisible = true;
  if (eff != nullptr && eff->size >= 1 && sp > 1) {
    if (sp > W) {
      ctx.Report("sp-exceeds-world", eff->pointer,
                 DottedName(eff->pointer) + " is " + Str(sp) + " but the world has " + Str(W) +
                     " ranks: Ulysses raises \"world_size (" + Str(W) +
                     ") is less than sequence_parallel_size " + Str(sp) + "\"",
                 "use a sequence-parallel size that divides " + Str(W) + ": " + DivisorList(W));
      return;
    }
    if (W % sp != 0) {
      divisible = false;
      ctx.Report("sp-world-divisible", eff->pointer,
                 DottedName(eff->pointer) + " is " + Str(sp) + ", which does not divide the world "
                 "size " + Str(W) + ": AutoSP asserts \"World mesh-size should be divisible by "
                 "SP_SIZE\" and Ulysses raises \"world_size (" + Str(W) +
                     ") is not divisible by sequence_parallel_size " + Str(sp) + "\"",
                 "use one of " + DivisorList(W));
    } else if (tp * pp > 1 && W % (tp * sp * pp) != 0) {
      divisible = false;
      ctx.Report("sp-world-divisible", eff->pointer,
                 "tp x sp x pp = " + Str(tp) + " x " + Str(sp) + " x " + Str(pp) + " = " +
                     Str(tp * sp * pp) + " does not divide the world size " + Str(W) +
                     ": the data-parallel size would not be an integer",
                 "choose sizes whose product divides " + Str(W));
    }
  }
  if (!divisible || W % (tp * sp * pp) != 0) return;

  // The data-parallel size is derived, never configured.
  const int64_t dp = W / (tp * sp * pp);
  std::string formula = "world / (tp x sp x pp) = " + Str(W) + " / (" + Str(tp) + " x " + Str(sp) +
                        " x " + Str(pp) + ") = " + Str(dp);
  for (const Setting<int64_t>* declared : {&pc.dp_declared_top, &pc.dp_declared_compile}) {
    if (!declared->present() || declared->value == dp) continue;
    bool mesh = declared == &pc.dp_declared_top && ctx.view().Has("/sequence_parallel_size");
    ctx.Report("sp-dp-mismatch", declared->pointer,
               DottedName(declared->pointer) + " is " + Str(declared->value) +
                   ", but the data-parallel size is " + formula +
                   (mesh ? ": deepspeed.initialize builds a (data_parallel_size, "
                           "sequence_parallel_size) device mesh, which must cover the world "
                           "exactly"
                         : ""),
               "remove " + DottedName(declared->pointer) + " (the data-parallel size is derived), "
               "or set it to " + Str(dp));
  }
}

// sp_compile.py pass_insert_attention_all_to_all (0.19.6) raises RuntimeError when the compiled
// graph has no F.scaled_dot_product_attention node: only transformers' "sdpa" attention gives one.
void CheckAttentionImplementation(RuleContext& ctx) {
  const ParallelConfig& pc = ctx.parallel();
  const bool autosp =
      std::find(pc.compile_passes.begin(), pc.compile_passes.end(), "autosp") != pc.compile_passes.end();
  if (!pc.deepcompile || !autosp || pc.zero_stage.or_default(0) >= 2) return;  // >= 2: falls back
  std::string impl;
  std::string source = "--attn-impl";
  if (ctx.options().attn_implementation) {
    impl = *ctx.options().attn_implementation;
  } else if (ctx.options().model != nullptr && !ctx.options().model->attn_implementation.empty()) {
    impl = ctx.options().model->attn_implementation;
    source = "the model config's _attn_implementation";
  }
  if (impl.empty() || impl == "sdpa") return;
  ctx.Report("sp-autosp-attention-impl", "/compile/passes",
             "the autosp pass needs scaled_dot_product_attention, and the attention implementation is \"" +
                 impl + "\" (" + source + "): sp_compile.py raises RuntimeError \"AutoSP currently supports "
                 "torch.nn.functional.scaled_dot_product_attention as the attention backend. No SDPA attention "
                 "operations were found in the compiled graph.\"",
             "load the model with attn_implementation=\"sdpa\", or use eager Ulysses "
             "(sequence_parallel_size without the autosp pass), which wraps any attention function");
}

void CheckModelAndSequence(RuleContext& ctx) {
  const ParallelConfig& pc = ctx.parallel();
  const SpForm* eff = EffectiveForm(pc);
  const ModelSpec* model = ctx.options().model;
  auto seq = ctx.options().seq_len;
  const int64_t sp = pc.sp;
  const std::string at = eff != nullptr ? eff->pointer : "";

  if (sp > 1 && model != nullptr) {
    int64_t heads = model->num_attention_heads;
    int64_t kv = model->num_key_value_heads > 0 ? model->num_key_value_heads : heads;
    if (heads > 0 && heads % sp != 0) {
      ctx.Report("sp-heads-divisible", at,
                 "the model has " + Str(heads) + " attention heads, which sequence parallelism "
                 "of " + Str(sp) + " cannot split evenly: Ulysses raises \"Attention head count " +
                     Str(heads) + " is not divisible by SP size " + Str(sp) +
                     "\", and AutoSP's all-to-all scatters the heads the same way",
                 "use a sequence-parallel size that divides " + Str(heads) + ": " +
                     DivisorList(heads));
    }
    if (kv > 0 && kv % sp != 0 && sp % kv != 0) {
      ctx.Report("sp-kv-heads", at,
                 "the model has " + Str(kv) + " key/value heads and sequence parallelism is " +
                     Str(sp) + ": Ulysses needs one to divide the other and raises \"KV attention "
                     "head count " + Str(kv) + " is not divisible by SP size " + Str(sp) +
                     " or vice versa\"",
                 "use a sequence-parallel size that divides " + Str(kv) +
                     " or is a multiple of it");
    } else if (kv > 0 && kv % sp != 0 && pc.deepcompile &&
               std::find(pc.compile_passes.begin(), pc.compile_passes.end(), "autosp") != pc.compile_passes.end()) {
      ctx.Report("sp-autosp-kv-heads", at,
                 "the AutoSP compile pass reshapes the key/value heads that reach "
                 "scaled_dot_product_attention into " + Str(sp) + " groups (custom_ops/all_to_all.py), "
                 "and this model has " + Str(kv) + ": it runs only when an attention mask makes "
                 "transformers repeat K and V to all " + Str(heads) + " heads before SDPA (its sdpa "
                 "path uses enable_gqa only without a mask), and then every K/V all-to-all moves " +
                     Str(heads) + " heads; without a mask the reshape fails",
                 "pass the attention mask to prepare_autosp_inputs, or use eager Ulysses "
                 "(sequence_parallel_size without the autosp pass), which repeats K/V heads only up to " +
                     Str(sp));
    }
    int64_t linear_layers = 0;
    for (int64_t i = 0; i < model->num_hidden_layers; ++i) {
      linear_layers += model->LayerAttention(i) == AttentionKind::kLinear ? 1 : 0;
    }
    if (linear_layers > 0) {
      ctx.Report("sp-linear-attention", at,
                 "this " + model->model_type + " model has " + Str(linear_layers) +
                     " Gated DeltaNet (linear attention) layers, which sequence parallelism does "
                     "not re-shard: AutoSP rewrites only scaled_dot_product_attention calls and "
                     "Ulysses replaces only the attention function, so each of these layers runs "
                     "its recurrence over the rank's " + Str(sp) + "th of the sequence and "
                     "the result is wrong without an error",
                 "train this model without sequence parallelism (or with a context-parallel "
                 "scheme that carries the recurrent state between ranks)");
    }
  }
  if (sp > 1 && seq && *seq > 0 && *seq % sp != 0) {
    ctx.Report("sp-seq-len-divisible", at,
               "the sequence length " + Str(*seq) + " is not divisible by the sequence-parallel "
               "size " + Str(sp) + ": Ulysses raises \"batch's seqlen=" + Str(*seq) +
                   " isn't divisible by sp-size=" + Str(sp) + "\", and AutoSP shards S // sp "
                   "tokens per rank",
               "pad sequences to a multiple of " + Str(sp) + " (e.g. " +
                   Str((*seq + sp - 1) / sp * sp) + ")");
  }
  if (model != nullptr && seq && model->max_position_embeddings > 0 &&
      *seq > model->max_position_embeddings) {
    ctx.Report("sp-seq-len-exceeds-positions", at,
               "the sequence length " + Str(*seq) + " exceeds the model's max_position_embeddings " +
                   Str(model->max_position_embeddings) +
                   ": sequence parallelism splits the work, not the position range, so positions "
                   "beyond the trained range rely on RoPE extrapolation",
               "configure RoPE scaling (rope_scaling) in the model config for long contexts, or "
               "use --seq-len <= " + Str(model->max_position_embeddings));
  }
}

void CheckPlacement(RuleContext& ctx) {
  const ParallelConfig& pc = ctx.parallel();
  const SpForm* eff = EffectiveForm(pc);
  const int64_t sp = pc.sp;
  if (eff == nullptr || sp <= 1) return;

  if (auto gpn = ctx.options().gpus_per_node; gpn && *gpn > 0 && (sp > *gpn || *gpn % sp != 0)) {
    std::string why = sp > *gpn ? "each SP group of " + Str(sp) + " consecutive ranks spans " +
                                      Str((sp + *gpn - 1) / *gpn) + " nodes of " + Str(*gpn) +
                                      " GPUs"
                                : Str(*gpn) + " GPUs per node is not a multiple of " + Str(sp) +
                                      ", so some SP groups of consecutive ranks straddle two nodes";
    ctx.Report("sp-crosses-node", eff->pointer,
               why + ": the attention all-to-all of every layer then crosses the inter-node "
                     "network, which is usually far slower than NVLink",
               "keep SP groups inside a node: use a sequence-parallel size that divides " +
                   Str(*gpn));
  }

  // AutoTP and Ulysses SP in one run: AutoTP builds a (dp, tp) mesh over the whole world, the SP
  // paths build consecutive SP groups of their own (or a (dp, sp) mesh); nothing composes them.
  // AutoEP folding rejects it itself (expert_parallel rules), and the autotp+autosp compile pass
  // list raises (compile-autotp-combined).
  const auto& passes = pc.compile_passes;
  bool compile_pair = pc.deepcompile &&
                      std::find(passes.begin(), passes.end(), "autotp") != passes.end() &&
                      std::find(passes.begin(), passes.end(), "autosp") != passes.end();
  if (pc.tp > 1 && !pc.autoep_enabled && !compile_pair) {
    ctx.Report("sp-with-autotp", eff->pointer,
               "tensor_parallel.autotp_size " + Str(pc.tp) + " together with sequence-parallel "
               "size " + Str(sp) + ": no DeepSpeed code path builds this layout (AutoTP makes a "
               "(dp, tp) mesh over all ranks, Ulysses/AutoSP make their own SP groups of "
               "consecutive ranks without a TP dimension), so the two group sets overlap",
               "use AutoTP or sequence parallelism; for long sequences with a large model, "
               "Ulysses SP with ZeRO-3 is the supported combination");
  }
}

void CheckAutoSpSize(RuleContext& ctx) {
  const ParallelConfig& pc = ctx.parallel();
  const auto& passes = pc.compile_passes;
  bool autosp = pc.deepcompile && std::find(passes.begin(), passes.end(), "autosp") != passes.end();
  if (!autosp || !pc.sp_forms.empty()) return;
  ctx.Report("sp-autosp-without-size", "/compile/passes",
             "the autosp compile pass is enabled but no sequence-parallel size is set: AutoSP reads "
             "the top-level sequence_parallel_size (default 1), so every rank keeps the whole "
             "sequence",
             "add \"sequence_parallel_size\": N (N > 1, dividing the world size) at the top level");
}

}  // namespace

RuleSet SequenceParallelRules() {
  RuleSet set;
  set.name = "sequence_parallel";
  set.rules = {
      {"sp-proposed-form", Severity::kWarning, "sequence_parallel",
       "an SP size in a form DeepSpeed does not read",
       "The AutoSP design discussion proposed \"sequence_parallel\": {\"autosp_size\": N}. The "
       "merged code reads the top-level sequence_parallel_size; the sequence_parallel section is "
       "an unknown top-level key that DeepSpeed silently ignores, so the run has no sequence "
       "parallelism. ds-plan checks the form like the real key and names the replacement.",
       ""},
      {"sp-compile-key-rejected", Severity::kError, "sequence_parallel",
       "compile.sp_size or compile.dp_size, which DeepSpeed's CompileConfig rejects",
       "The AutoSP design discussion proposed \"compile\": {\"sp_size\": N, \"dp_size\": M}. "
       "DeepSpeedConfig builds CompileConfig(**param_dict.get(\"compile\", {})) "
       "(deepspeed/runtime/config.py, 0.19.6) and DeepSpeedConfigModel forbids extra keys "
       "(runtime/config_utils.py), so either key stops deepspeed.initialize with a pydantic "
       "ValidationError, enabled or not. The merged code reads the top-level "
       "sequence_parallel_size and derives dp = world / sp; the hint names that replacement.",
       ""},
      {"sp-forms-disagree", Severity::kError, "sequence_parallel",
       "two spellings of the SP size with different values",
       "sequence_parallel_size, sequence_parallel.autosp_size and compile.sp_size name the same "
       "size; when they differ, the config says two things and DeepSpeed uses only "
       "sequence_parallel_size.",
       ""},
      {"sp-invalid", Severity::kError, "sequence_parallel", "sequence-parallel size below 1",
       "DeepSpeedConfig divides the world size by sequence_parallel_size for the batch check (0 "
       "raises ZeroDivisionError, negatives give a negative world) and Ulysses' "
       "initialize_sequence_parallel requires a size greater than 1 to enable SP.",
       ""},
      {"sp-exceeds-world", Severity::kError, "sequence_parallel",
       "sequence-parallel size larger than the world",
       "initialize_sequence_parallel raises \"world_size (W) is less than sequence_parallel_size "
       "S\"; AutoSP's apply_autosp asserts sp x dp <= W.",
       ""},
      {"sp-world-divisible", Severity::kError, "sequence_parallel",
       "sequence-parallel size does not divide the world",
       "AutoSP's extract_mesh_size asserts \"World mesh-size should be divisible by SP_SIZE\"; "
       "Ulysses raises \"world_size (W) is not divisible by sequence_parallel_size S\". With "
       "tensor or pipeline parallelism, tp x sp x pp must divide the world for an integral "
       "data-parallel size.",
       ""},
      {"sp-dp-mismatch", Severity::kError, "sequence_parallel",
       "a declared data-parallel size that disagrees with world / (tp x sp x pp)",
       "The data-parallel size is derived: AutoSP computes dp = W // sp, and with both "
       "data_parallel_size and sequence_parallel_size deepspeed.initialize builds a (dp, sp) "
       "device mesh that must cover the world. A data_parallel_size or compile.dp_size that "
       "disagrees with world / (tp x sp x pp) cannot be honoured.",
       ""},
      {"sp-heads-divisible", Severity::kError, "sequence_parallel",
       "attention heads not divisible by the SP size (--model)",
       "Ulysses attention (ulysses_sp.py) raises \"Attention head count H is not divisible by SP "
       "size S\"; AutoSP's all-to-all scatters heads across the SP group the same way.",
       ""},
      {"sp-linear-attention", Severity::kError, "sequence_parallel",
       "sequence parallelism on a model with linear-attention layers (--model)",
       "DeepSpeed's sequence parallelism moves tokens and heads only around softmax attention: "
       "the AutoSP compile pass inserts its all-to-alls around scaled_dot_product_attention nodes "
       "(compile/passes/sp_compile.py) and Ulysses (runtime/sequence_parallel/ulysses_sp.py) "
       "registers itself as the attention function. A Gated DeltaNet layer (qwen3_next, "
       "qwen3_5 linear_attn) calls neither, so it sees only the rank's slice of the sequence and "
       "its recurrence starts from zero at every slice boundary. Nothing raises.",
       ""},
      {"sp-kv-heads", Severity::kError, "sequence_parallel",
       "key/value heads and SP size do not divide each other (--model)",
       "Ulysses requires kv_heads % sp == 0 (heads split) or sp % kv_heads == 0 (kv heads "
       "replicated): \"KV attention head count K is not divisible by SP size S or vice versa\".",
       ""},
      {"sp-autosp-attention-impl", Severity::kError, "sequence_parallel",
       "the autosp pass with an attention implementation other than sdpa",
       "pass_insert_attention_all_to_all (compile/passes/sp_compile.py) finds the "
       "F.scaled_dot_product_attention calls of the compiled graph and raises RuntimeError when "
       "there are none: transformers' flash_attention_2, eager and flex_attention paths call other "
       "kernels. The implementation comes from --attn-impl or the model config's "
       "_attn_implementation; nothing is reported when neither names one (transformers defaults to "
       "sdpa).",
       ""},
      {"sp-autosp-kv-heads", Severity::kWarning, "sequence_parallel",
       "AutoSP compile pass with fewer key/value heads than the SP size divides",
       "sp_compile.py inserts the all-to-all on the K and V tensors SDPA receives and "
       "custom_ops/all_to_all.py reshapes their head dimension into sp groups; DeepSpeed neither "
       "repeats nor checks KV heads there (eager Ulysses, ulysses_sp.py, repeats them). Which heads "
       "SDPA receives is transformers' choice: with an attention mask its sdpa path calls repeat_kv "
       "first (all N heads), without one it passes the KV heads with enable_gqa. ds-plan draws and "
       "prices the mask case.",
       ""},
      {"sp-seq-len-divisible", Severity::kError, "sequence_parallel",
       "sequence length not divisible by the SP size (--seq-len)",
       "UlyssesSPDataLoaderAdapter raises \"batch's seqlen=N isn't divisible by sp-size=S\" and a "
       "fixed seq_length must be divisible too; AutoSP shards S // sp tokens per rank.",
       ""},
      {"sp-seq-len-exceeds-positions", Severity::kWarning, "sequence_parallel",
       "sequence length beyond max_position_embeddings (--model, --seq-len)",
       "Sequence parallelism lets a long sequence fit in memory but does not extend the model's "
       "position range; beyond max_position_embeddings the model relies on RoPE extrapolation "
       "unless rope_scaling is configured.",
       ""},
      {"sp-crosses-node", Severity::kWarning, "sequence_parallel",
       "an SP group spans nodes (--gpus-per-node)",
       "DeepSpeed's SP groups are consecutive ranks (Ulysses: range(i*sp, (i+1)*sp); AutoSP "
       "registry and the (dp, sp) mesh likewise). When sp exceeds, or does not divide, the GPUs "
       "per node, the per-layer all-to-all runs over the inter-node network.",
       ""},
      {"sp-with-autotp", Severity::kWarning, "sequence_parallel",
       "AutoTP together with Ulysses/AutoSP sequence parallelism",
       "AutoTP creates a (data_parallel, tensor_parallel) mesh over all ranks; Ulysses' "
       "initialize_sequence_parallel, the (dp, sp) mesh and AutoSP's registry create SP groups "
       "with no TP dimension. No DeepSpeed path composes them (Megatron-DeepSpeed's SP even "
       "requires TP=1); AutoEP folding and the autotp+autosp compile passes reject the pair "
       "explicitly (reported by their own rules).",
       ""},
      {"sp-autosp-without-size", Severity::kWarning, "sequence_parallel",
       "the autosp pass without a sequence-parallel size",
       "AutoSP's extract_mesh_size reads the top-level sequence_parallel_size with default 1, so "
       "the pass runs but shards nothing.",
       ""},
  };
  set.check = [](RuleContext& ctx) {
    CheckForms(ctx);
    CheckWorld(ctx);
    CheckModelAndSequence(ctx);
    CheckAttentionImplementation(ctx);
    CheckPlacement(ctx);
    CheckAutoSpSize(ctx);
  };
  return set;
}

}  // namespace dsp
