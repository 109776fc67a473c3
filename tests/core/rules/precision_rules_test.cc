// SPDX-License-Identifier: Apache-2.0
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Version;
using testing::MessageHas;
using testing::FindAt;

using testing::Find;
using testing::Validate;

TEST(PrecisionRulesTest, Fp16AndBf16) {
  auto r = Validate(R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})");
  EXPECT_DIAG(r, "precision-fp16-bf16", "/bf16/enabled");
  EXPECT_TRUE(MessageHas(r, "precision-fp16-bf16", "bfloat16 and fp16 modes cannot be simultaneously enabled"));
  // The legacy key counts when bf16 is absent...
  EXPECT_DIAG(Validate(R"({"fp16": {"enabled": true}, "bfloat16": {"enabled": true}})"),
              "precision-fp16-bf16", "/bfloat16/enabled");
  // ...and is ignored when bf16 is present.
  auto shadowed = Validate(R"({"fp16": {"enabled": true}, "bf16": {"enabled": false}, "bfloat16": {"enabled": true}})");
  EXPECT_NO_DIAG(shadowed, "precision-fp16-bf16");
  EXPECT_DIAG(shadowed, "precision-bfloat16-ignored", "/bfloat16");
  EXPECT_NO_DIAG(Validate(R"({"fp16": {"enabled": false}, "bf16": {"enabled": true}})"), "precision-fp16-bf16");
  EXPECT_NO_DIAG(Validate(R"({"bfloat16": {"enabled": true}})"), "precision-bfloat16-ignored");
}

TEST(PrecisionRulesTest, LossScale) {
  auto neg = Validate(R"({"fp16": {"enabled": true, "loss_scale": -1}})");
  EXPECT_DIAG(neg, "fp16-loss-scale-invalid", "/fp16/loss_scale");
  EXPECT_TRUE(MessageHas(neg, "fp16-loss-scale-invalid", "must be >= 0 (0 enables dynamic loss scaling)"));
  EXPECT_TRUE(MessageHas(Validate(R"({"fp16": {"loss_scale": true}})"), "fp16-loss-scale-invalid", "not bool"));
  EXPECT_TRUE(MessageHas(Validate(R"({"fp16": {"loss_scale": "inf"}})"), "fp16-loss-scale-invalid", "finite"));
  EXPECT_TRUE(MessageHas(Validate(R"({"fp16": {"loss_scale": "big"}})"), "fp16-loss-scale-invalid", "must be a number"));
  EXPECT_NO_DIAG(Validate(R"({"fp16": {"enabled": true, "loss_scale": "1024"}})"), "fp16-loss-scale-invalid");
  EXPECT_NO_DIAG(Validate(R"({"fp16": {"enabled": true, "loss_scale": 0}})"), "fp16-loss-scale-invalid");
  EXPECT_NO_DIAG(Validate(R"({"fp16": {"enabled": true, "loss_scale": "auto"}})"), "fp16-loss-scale-invalid");
}

TEST(PrecisionRulesTest, ScaleParamsMustBeIntegers) {
  auto r = Validate(R"({"fp16": {"enabled": true, "min_loss_scale": true, "loss_scale_window": "often"}})");
  EXPECT_DIAG(r, "fp16-scale-param-invalid", "/fp16/min_loss_scale");
  EXPECT_DIAG(r, "fp16-scale-param-invalid", "/fp16/loss_scale_window");
  EXPECT_TRUE(MessageHas(r, "fp16-scale-param-invalid", "fp16.min_loss_scale must be an integer, not bool"));
  EXPECT_NO_DIAG(Validate(R"({"fp16": {"enabled": true, "min_loss_scale": "2", "loss_scale_window": 500}})"),
                 "fp16-scale-param-invalid");
}

TEST(PrecisionRulesTest, DynamicScaleParamsPositive) {
  auto r = Validate(R"({"fp16": {"enabled": true, "loss_scale_window": 0, "min_loss_scale": -1}})");
  EXPECT_DIAG(r, "fp16-dynamic-scale-nonpositive", "/fp16/loss_scale_window");
  EXPECT_DIAG(r, "fp16-dynamic-scale-nonpositive", "/fp16/min_loss_scale");
  EXPECT_TRUE(MessageHas(r, "fp16-dynamic-scale-nonpositive",
                         "fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled (loss_scale=0)"));
  // Static loss scale or fp16 disabled: not checked.
  EXPECT_NO_DIAG(Validate(R"({"fp16": {"enabled": true, "loss_scale": 128, "loss_scale_window": 0}})"),
                 "fp16-dynamic-scale-nonpositive");
  EXPECT_NO_DIAG(Validate(R"({"fp16": {"enabled": false, "loss_scale_window": 0}})"),
                 "fp16-dynamic-scale-nonpositive");
}

TEST(PrecisionRulesTest, ParamDtype) {
  auto r = Validate(R"({"bf16": {"enabled": true}, "data_types": {"param_dtype": "fp16"}})");
  EXPECT_DIAG(r, "precision-param-dtype", "/data_types/param_dtype");
  EXPECT_TRUE(MessageHas(r, "precision-param-dtype", "model dtype torch.bfloat16"));
  EXPECT_DIAG(Validate(R"({"data_types": {"param_dtype": "bf16"}})"), "precision-param-dtype",
              "/data_types/param_dtype");
  EXPECT_NO_DIAG(Validate(R"({"bf16": {"enabled": true}, "data_types": {"param_dtype": "bfloat16"}})"),
                 "precision-param-dtype");
  EXPECT_NO_DIAG(Validate(R"({"data_types": {"param_dtype": "float"}})"), "precision-param-dtype");

  auto bad = Validate(R"({"data_types": {"grad_accum_dtype": "float64"}})");
  EXPECT_DIAG(bad, "data-types-invalid", "/data_types/grad_accum_dtype");
  EXPECT_NO_DIAG(Validate(R"({"data_types": {"grad_accum_dtype": "fp32", "buffer_dtype": null}})"),
                 "data-types-invalid");
}

TEST(PrecisionRulesTest, CommunicationDtypes) {
  auto r = Validate(R"({"communication_data_type": "fp8", "seq_parallel_communication_data_type": "int8"})");
  EXPECT_DIAG(r, "comm-dtype-invalid", "/communication_data_type");
  EXPECT_DIAG(r, "comm-dtype-invalid", "/seq_parallel_communication_data_type");
  EXPECT_TRUE(MessageHas(r, "comm-dtype-invalid", "Supported data types: ['fp16', 'bf16', 'fp32']. Got: fp8"));
  EXPECT_DIAG(Validate(R"({"communication_data_type": 16})"), "comm-dtype-invalid", "/communication_data_type");
  EXPECT_NO_DIAG(Validate(R"({"communication_data_type": "BF16", "seq_parallel_communication_data_type": null})"),
                 "comm-dtype-invalid");
}

TEST(PrecisionRulesTest, AmpWithFp16) {
  auto r = Validate(R"({"amp": {"enabled": true}, "fp16": {"enabled": true}})");
  EXPECT_DIAG(r, "precision-amp-with-fp16-bf16", "/amp/enabled");
  // With ZeRO the earlier "Amp and ZeRO" assertion is what DeepSpeed reports.
  auto zero = Validate(R"({"amp": {"enabled": true}, "fp16": {"enabled": true}, "zero_optimization": {"stage": 1}})");
  EXPECT_NO_DIAG(zero, "precision-amp-with-fp16-bf16");
  EXPECT_DIAG(zero, "zero-amp", "/amp/enabled");
  EXPECT_NO_DIAG(Validate(R"({"amp": {"enabled": true}})"), "precision-amp-with-fp16-bf16");
}

TEST(PrecisionRulesTest, AutocastDtypeNames) {
  for (const char* ok : {"bfloat16", "torch.float16", "half", "fp32", "int8", "torch.bfloat16"}) {
    auto r = Validate(std::string(R"({"torch_autocast": {"enabled": true, "dtype": ")") + ok + "\"}}");
    EXPECT_NO_DIAG(r, "autocast-dtype-invalid");
  }
  auto bad = Validate(R"({"torch_autocast": {"enabled": false, "dtype": "BF16"}})");
  EXPECT_DIAG(bad, "autocast-dtype-invalid", "/torch_autocast/dtype");
  EXPECT_DIAG(Validate(R"({"torch_autocast": {"dtype": null}})"), "autocast-dtype-invalid", "/torch_autocast/dtype");
}

TEST(PrecisionRulesTest, AutocastWithoutDtype) {
  auto z3 = Validate(R"({"torch_autocast": {"enabled": true}, "zero_optimization": {"stage": 3}})");
  const Diagnostic* d = FindAt(z3, "autocast-no-dtype", "/torch_autocast/enabled");
  ASSERT_NE(d, nullptr) << testing::Dump(z3);
  EXPECT_EQ(d->severity, Severity::kNote);
  auto z0 = Validate(R"({"torch_autocast": {"enabled": true}})");
  d = FindAt(z0, "autocast-no-dtype", "/torch_autocast/enabled");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_NE(d->message.find("GradScaler"), std::string::npos);
  EXPECT_NO_DIAG(Validate(R"({"torch_autocast": {"enabled": true, "dtype": "bf16"}})"), "autocast-no-dtype");
  EXPECT_NO_DIAG(Validate(R"({"torch_autocast": {"enabled": false}})"), "autocast-no-dtype");
}

TEST(PrecisionRulesTest, AutocastModuleList) {
  auto r = Validate(R"({"torch_autocast": {"enabled": true, "dtype": "bf16", "lower_precision_safe_modules": ["torch.nn.Linear", 3]}})");
  EXPECT_DIAG(r, "autocast-modules-invalid", "/torch_autocast/lower_precision_safe_modules/1");
  auto str = Validate(R"({"torch_autocast": {"enabled": true, "dtype": "bf16", "lower_precision_safe_modules": "torch.nn.Linear"}})");
  EXPECT_DIAG(str, "autocast-modules-invalid", "/torch_autocast/lower_precision_safe_modules");
  EXPECT_NO_DIAG(Validate(R"({"torch_autocast": {"enabled": true, "dtype": "bf16", "lower_precision_safe_modules": ["torch.nn.Linear", "transformers.models.llama.modeling_llama.LlamaMLP"]}})"),
                 "autocast-modules-invalid");
}

TEST(PrecisionRulesTest, AutocastModuleNames) {
  auto on = Validate(R"({"torch_autocast": {"enabled": true, "dtype": "bf16", "lower_precision_safe_modules": ["Linear", "nn.Conv2d"]}})");
  const Diagnostic* d = FindAt(on, "autocast-module-name", "/torch_autocast/lower_precision_safe_modules/0");
  ASSERT_NE(d, nullptr) << testing::Dump(on);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_DIAG(on, "autocast-module-name", "/torch_autocast/lower_precision_safe_modules/1");
  auto off = Validate(R"({"torch_autocast": {"enabled": false, "lower_precision_safe_modules": ["Linear"]}})");
  d = FindAt(off, "autocast-module-name", "/torch_autocast/lower_precision_safe_modules/0");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_NO_DIAG(Validate(R"({"torch_autocast": {"enabled": true, "dtype": "bf16", "lower_precision_safe_modules": ["torch.nn.Linear"]}})"),
                 "autocast-module-name");
}

TEST(PrecisionRulesTest, AutocastQuantizedWeights) {
  auto r = Validate(R"({"torch_autocast": {"enabled": true, "dtype": "bf16"}, "zero_optimization": {"stage": 3, "zero_quantized_weights": true}})");
  EXPECT_DIAG(r, "autocast-quantized-weights", "/zero_optimization/zero_quantized_weights");
  EXPECT_NO_DIAG(Validate(R"({"torch_autocast": {"enabled": false}, "zero_optimization": {"stage": 3, "zero_quantized_weights": true}})"),
                 "autocast-quantized-weights");
}

TEST(PrecisionRulesTest, AutocastWithBf16DependsOnVersion) {
  const char* cfg = R"({"bf16": {"enabled": true}, "torch_autocast": {"enabled": true, "dtype": "bf16"}})";
  auto old = Validate(cfg, Version("0.18.2"));
  EXPECT_DIAG(old, "autocast-low-precision", "/torch_autocast/enabled");
  EXPECT_TRUE(MessageHas(old, "autocast-low-precision", "Cannot enable both torch autocast and bfloat16"));
  EXPECT_DIAG(Validate(R"({"fp16": {"enabled": true}, "torch_autocast": {"enabled": true}})", Version("0.17.2")),
              "autocast-low-precision", "/torch_autocast/enabled");
  EXPECT_NO_DIAG(Validate(cfg, Version("0.18.3")), "autocast-low-precision");
  EXPECT_NO_DIAG(Validate(cfg), "autocast-low-precision");
  // Before 0.17.2 the section does not exist at all.
  auto ancient = Validate(cfg, Version("0.17.1"));
  EXPECT_NO_DIAG(ancient, "autocast-low-precision");
  EXPECT_DIAG(ancient, "autocast-unsupported-version", "/torch_autocast/enabled");
  EXPECT_NO_DIAG(Validate(cfg, Version("0.17.2")), "autocast-unsupported-version");
}

TEST(PrecisionRulesTest, AutocastCommDtypeBefore0176) {
  const char* cfg = R"({"communication_data_type": "bf16", "torch_autocast": {"enabled": true, "dtype": "bf16"}})";
  EXPECT_DIAG(Validate(cfg, Version("0.17.5")), "autocast-comm-dtype", "/communication_data_type");
  EXPECT_NO_DIAG(Validate(cfg, Version("0.17.6")), "autocast-comm-dtype");
  EXPECT_NO_DIAG(Validate(R"({"communication_data_type": "fp32", "torch_autocast": {"enabled": true, "dtype": "bf16"}})",
                          Version("0.17.5")),
                 "autocast-comm-dtype");
}

// runtime/engine.py DeepSpeedEngine._do_sanity_check raises ValueError("Type bf16 is not supported on
// your device.") when accelerator/cuda_accelerator.py is_bf16_supported() (torch.cuda.is_bf16_supported)
// is False: below compute capability 8.0 before torch 2.4 (pytorch/pytorch#124996); from 2.4 the
// including_emulation default makes it True and bf16 runs emulated.
TEST(PrecisionRulesTest, Bf16OnAGpuWithoutBf16) {
  const char* bf16 = R"({"train_batch_size": 8, "bf16": {"enabled": true}})";
  ValidateOptions v100;
  v100.gpu_name = "V100 SXM2 32GB";
  v100.gpu_compute_capability = 70;
  auto unknown_torch = Validate(bf16, v100);
  const Diagnostic* d = FindAt(unknown_torch, "precision-bf16-unsupported-gpu", "/bf16/enabled");
  ASSERT_NE(d, nullptr) << testing::Dump(unknown_torch);
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_TRUE(MessageHas(unknown_torch, "precision-bf16-unsupported-gpu", "V100 SXM2 32GB (compute capability 7.0)"));
  v100.torch_version = PackageVersion::Parse("2.2.2");
  auto old_torch = Validate(bf16, v100);
  ASSERT_NE(Find(old_torch, "precision-bf16-unsupported-gpu"), nullptr);
  EXPECT_EQ(Find(old_torch, "precision-bf16-unsupported-gpu")->severity, Severity::kError);
  EXPECT_TRUE(MessageHas(old_torch, "precision-bf16-unsupported-gpu", "Type bf16 is not supported on your device."));
  v100.torch_version = PackageVersion::Parse("2.6.0+cu124");
  EXPECT_EQ(Find(Validate(bf16, v100), "precision-bf16-unsupported-gpu")->severity, Severity::kWarning);
  // fp16 on the V100, bf16 on an A100, and no cluster: nothing.
  EXPECT_EQ(Find(Validate(R"({"train_batch_size": 8, "fp16": {"enabled": true}})", v100), "precision-bf16-unsupported-gpu"),
            nullptr);
  ValidateOptions a100;
  a100.gpu_compute_capability = 80;
  EXPECT_EQ(Find(Validate(bf16, a100), "precision-bf16-unsupported-gpu"), nullptr);
  EXPECT_EQ(Find(Validate(bf16), "precision-bf16-unsupported-gpu"), nullptr);
}

}  // namespace
}  // namespace dsp
