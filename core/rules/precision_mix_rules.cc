// SPDX-License-Identifier: Apache-2.0
// The engine's precision mix table (runtime/engine.py _do_optimizer_sanity_check, 0.19.6): the
// model dtype (fp16, bf16 or fp32 from the enabled flags) against data_types.grad_accum_dtype,
// per ZeRO stage. ZeRO 1-3 accept every mix (stage 1 with bf16 and fp32 accumulation runs
// BF16_Optimizer); without ZeRO the two must match, Apex AMP included.
#include "core/rules/ds_semantics.h"
#include "core/rules/rule_sets.h"

namespace dsp {
namespace {

using namespace ds_semantics;

// DtypeEnum's spellings (runtime/config.py) -> fp16/bf16/fp32/int8; "" when invalid (data-types-invalid).
std::string Canonical(const Json& v) {
  if (!v.is_string()) return "";
  const std::string& s = v.get_ref<const std::string&>();
  if (s == "fp16" || s == "float16" || s == "half" || s == "torch.float16") return "fp16";
  if (s == "bf16" || s == "bfloat16" || s == "torch.bfloat16") return "bf16";
  if (s == "fp32" || s == "float32" || s == "float" || s == "torch.float32") return "fp32";
  if (s == "int8" || s == "torch.int8") return "int8";
  return "";
}

std::string Torch(const std::string& c) {
  return c == "fp16" ? "torch.float16" : c == "bf16" ? "torch.bfloat16" : c == "int8" ? "torch.int8" : "torch.float32";
}

void CheckPrecisionMix(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const Json* g = v.Get("/data_types/grad_accum_dtype");
  if (g == nullptr || g->is_null()) return;
  std::string grad = Canonical(*g);
  if (grad.empty()) return;
  std::string model = Fp16Enabled(v) ? "fp16" : Bf16Enabled(v) ? "bf16" : "fp32";
  if (grad == model) return;
  std::optional<int64_t> stage = EffectiveZeroStage(ctx);
  if (!stage || *stage != 0) return;
  const std::string ptr = "/data_types/grad_accum_dtype";
  const std::string mix = "model_dtype=" + Torch(model) + " and grad_accum_dtype=" + Torch(grad);
  if (DictFlag(v, "/amp/enabled")) {
    ctx.Report("precision-grad-accum-mix", ptr,
               "Apex AMP with " + mix + ": DeepSpeed raises NotImplementedError(\"Model data type and gradient "
               "accumulation data type must be equal to use Amp\")",
               "remove data_types.grad_accum_dtype");
    return;
  }
  const Json* type = v.Get("/optimizer/type");
  bool config_optimizer = type != nullptr && !type->is_null();
  std::string hint = model == "bf16" && grad == "fp32"
                         ? "use ZeRO stage 1 (bf16 with fp32 accumulation runs BF16_Optimizer) or 2/3, or remove grad_accum_dtype"
                         : "use ZeRO stage 1-3, or remove data_types.grad_accum_dtype (it then follows the model dtype)";
  // Without an optimizer section the mix is checked only if the script passes one; with bf16 and no
  // optimizer at all, BF16_Optimizer(DummyOptim) still needs fp32 or bf16 accumulation.
  if (config_optimizer || (model == "bf16" && grad != "fp32")) {
    ctx.Report("precision-grad-accum-mix", ptr,
               "ZeRO stage 0 with " + mix + ": DeepSpeed raises NotImplementedError(\"unsupported mix of " + mix +
                   "\") when it sets up the optimizer (without ZeRO the accumulation dtype must equal the model dtype)",
               hint);
    return;
  }
  ctx.ReportAs(Severity::kWarning, "precision-grad-accum-mix", ptr,
               "ZeRO stage 0 with " + mix + ": if the script passes an optimizer to deepspeed.initialize, DeepSpeed "
               "raises NotImplementedError(\"unsupported mix of " + mix + "\")",
               hint);
}

}  // namespace

RuleSet PrecisionMixRules() {
  RuleSet set;
  set.name = "precision-mix";
  set.rules = {
      {"precision-grad-accum-mix", Severity::kError, "precision",
       "data_types.grad_accum_dtype that the engine's mix table refuses",
       "_do_optimizer_sanity_check (runtime/engine.py, 0.19.6) resolves the model dtype (fp16, bf16 "
       "or fp32) and grad_accum_dtype (null: the model dtype). ZeRO stages 1-3 accept every "
       "combination (stage 1 with bf16 and fp32 accumulation uses BF16_Optimizer unless the "
       "optimizer is offloaded to cpu). At stage 0 a different accumulation dtype raises "
       "NotImplementedError(\"unsupported mix of model_dtype=... and grad_accum_dtype=...\"), and with "
       "Apex AMP \"Model data type and gradient accumulation data type must be equal to use Amp\". "
       "The check runs when an optimizer is set up: an error with an optimizer section, a warning "
       "without one (the script may pass its own), except bf16 with fp16/int8 accumulation, which "
       "BF16_Optimizer refuses even without an optimizer.",
       ""},
  };
  set.check = CheckPrecisionMix;
  return set;
}

}  // namespace dsp
