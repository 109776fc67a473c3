// SPDX-License-Identifier: Apache-2.0
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Version;
using testing::MessageHas;

using testing::Find;
using testing::Validate;

constexpr const char* kOpt =
    R"("train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}})";

std::string Cfg(const std::string& zero, const std::string& extra = "") {
  return std::string("{") + kOpt + R"(, "zero_optimization": )" + zero +
         (extra.empty() ? "" : ", " + extra) + "}";
}

TEST(ZeroRulesTest, StageRange) {
  auto r = Validate(Cfg(R"({"stage": 4})"));
  EXPECT_DIAG(r, "zero-stage-invalid", "/zero_optimization/stage");
  EXPECT_TRUE(MessageHas(r, "zero-stage-invalid", "Maximum supported ZeRO stage is 3"));
  EXPECT_DIAG(Validate(Cfg(R"({"stage": -1})")), "zero-stage-invalid", "/zero_optimization/stage");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 3})")), "zero-stage-invalid");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": "auto"})")), "zero-stage-invalid");
}

TEST(ZeroRulesTest, LegacyBoolean) {
  auto r = Validate(Cfg("true"));
  EXPECT_DIAG(r, "zero-legacy-bool", "/zero_optimization");
  EXPECT_TRUE(MessageHas(r, "zero-legacy-bool", "stage 1"));
  EXPECT_TRUE(MessageHas(Validate(Cfg("false")), "zero-legacy-bool", "stage 0"));
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 1})")), "zero-legacy-bool");
}

TEST(ZeroRulesTest, PartialOffloadNeedsStage3) {
  auto r = Validate(Cfg(R"({"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.3}})"));
  EXPECT_DIAG(r, "zero-partial-offload-stage", "/zero_optimization/offload_optimizer/ratio");
  EXPECT_TRUE(MessageHas(r, "zero-partial-offload-stage",
                         "Partial offloading only supported for ZeRO Stage 3."));
  // The validator does not look at the device.
  EXPECT_DIAG(Validate(Cfg(R"({"stage": 1, "offload_optimizer": {"ratio": 0.5}})")),
              "zero-partial-offload-stage", "/zero_optimization/offload_optimizer/ratio");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.3}})")),
                 "zero-partial-offload-stage");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 1.0}})")),
                 "zero-partial-offload-stage");
}

TEST(ZeroRulesTest, OffloadParamBelowStage3) {
  auto r = Validate(Cfg(R"({"stage": 2, "offload_param": {"device": "cpu"}})"));
  EXPECT_DIAG(r, "zero-offload-param-unused", "/zero_optimization/offload_param/device");
  EXPECT_TRUE(r.valid()) << testing::Dump(r);
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 3, "offload_param": {"device": "cpu"}})")),
                 "zero-offload-param-unused");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "offload_param": {"device": "none"}})")),
                 "zero-offload-param-unused");
}

TEST(ZeroRulesTest, SuperOffloadOutsideStage3) {
  auto r = Validate(Cfg(R"({"stage": 2, "offload_optimizer": {"device": "cpu", "super_offload": true}})"));
  EXPECT_DIAG(r, "zero-super-offload-stage", "/zero_optimization/offload_optimizer/super_offload");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 3, "offload_optimizer": {"device": "cpu", "super_offload": true}})")),
                 "zero-super-offload-stage");
}

TEST(ZeroRulesTest, NvmeOffload) {
  auto r = Validate(Cfg(R"({"stage": 3, "offload_param": {"device": "nvme"}})"));
  EXPECT_DIAG(r, "zero-nvme-path-missing", "/zero_optimization/offload_param/device");
  EXPECT_DIAG(Validate(Cfg(R"({"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": null}})")),
              "zero-nvme-path-missing", "/zero_optimization/offload_optimizer/device");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme"}})")),
                 "zero-nvme-path-missing");

  auto as_cpu = Validate(Cfg(R"({"stage": 2, "offload_optimizer": {"device": "nvme"}})"));
  EXPECT_DIAG(as_cpu, "zero-nvme-optimizer-as-cpu", "/zero_optimization/offload_optimizer/device");
  EXPECT_NO_DIAG(as_cpu, "zero-nvme-path-missing");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "offload_optimizer": {"device": "cpu"}})")),
                 "zero-nvme-optimizer-as-cpu");
}

TEST(ZeroRulesTest, MasterWeightsStage) {
  auto fp16 = Validate(Cfg(R"({"stage": 0})", R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true})"));
  EXPECT_DIAG(fp16, "zero-master-weights-stage", "/fp16/fp16_master_weights_and_grads");
  EXPECT_TRUE(MessageHas(fp16, "zero-master-weights-stage", "Stage 1, 2, or 3"));
  auto bf16 = Validate(std::string("{") + kOpt + R"(, "bf16": {"enabled": true, "bf16_master_weights_and_grads": true, "bf16_optimizer_states": true}})");
  EXPECT_DIAG(bf16, "zero-master-weights-stage", "/bf16/bf16_master_weights_and_grads");
  EXPECT_DIAG(bf16, "zero-master-weights-stage", "/bf16/bf16_optimizer_states");
  // The legacy "bfloat16" key is read when "bf16" is absent.
  EXPECT_DIAG(Validate(R"({"bfloat16": {"enabled": true, "bf16_master_weights_and_grads": true}})"),
              "zero-master-weights-stage", "/bfloat16/bf16_master_weights_and_grads");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "offload_optimizer": {"device": "cpu"}})",
                              R"("bf16": {"enabled": true, "bf16_master_weights_and_grads": true}})")),
                 "zero-master-weights-stage");
}

TEST(ZeroRulesTest, MasterWeightsStageBefore0183) {
  // Before PR #7700: fp16 master weights need exactly stage 2, and the bf16 keys do not exist.
  auto old = Validate(Cfg(R"({"stage": 3, "offload_optimizer": {"device": "cpu"}})",
                          R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true})"),
                      Version("0.18.2"));
  EXPECT_DIAG(old, "zero-master-weights-stage", "/fp16/fp16_master_weights_and_grads");
  EXPECT_TRUE(MessageHas(old, "zero-master-weights-stage", "Stage 2 for now"));
  auto now = Validate(Cfg(R"({"stage": 3, "offload_optimizer": {"device": "cpu"}})",
                          R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true})"),
                      Version("0.18.3"));
  EXPECT_NO_DIAG(now, "zero-master-weights-stage");

  auto missing = Validate(Cfg(R"({"stage": 2})", R"("bf16": {"enabled": true, "bf16_optimizer_states": false})"),
                          Version("0.18.2"));
  EXPECT_DIAG(missing, "zero-master-weights-unavailable", "/bf16/bf16_optimizer_states");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2})", R"("bf16": {"enabled": true, "bf16_optimizer_states": false})")),
                 "zero-master-weights-unavailable");
}

TEST(ZeroRulesTest, Bf16StatesNeedMasterWeights) {
  auto r = Validate(Cfg(R"({"stage": 2})", R"("bf16": {"enabled": true, "bf16_optimizer_states": true})"));
  EXPECT_DIAG(r, "zero-bf16-states-without-master", "/bf16/bf16_optimizer_states");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2})", R"("bf16": {"enabled": true, "bf16_master_weights_and_grads": true, "bf16_optimizer_states": true})")),
                 "zero-bf16-states-without-master");
}

TEST(ZeroRulesTest, MasterWeightsNeedOffload) {
  auto r = Validate(Cfg(R"({"stage": 2})", R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true})"));
  EXPECT_DIAG(r, "zero-master-weights-offload", "/fp16/fp16_master_weights_and_grads");
  auto bf16 = Validate(Cfg(R"({"stage": 3})", R"("bf16": {"enabled": true, "bf16_master_weights_and_grads": true})"));
  EXPECT_DIAG(bf16, "zero-master-weights-offload", "/bf16/bf16_master_weights_and_grads");
  EXPECT_TRUE(MessageHas(bf16, "zero-master-weights-offload", "ZeRO-3 Offload with DeepSpeedCPUAdam"));
  // bf16 optimizer states may stay on the GPU.
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2})", R"("bf16": {"enabled": true, "bf16_master_weights_and_grads": true, "bf16_optimizer_states": true})")),
                 "zero-master-weights-offload");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "offload_optimizer": {"device": "cpu"}})",
                              R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true})")),
                 "zero-master-weights-offload");
  auto lamb = Validate(R"({"optimizer": {"type": "Lamb"}, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
                          "fp16": {"enabled": true, "fp16_master_weights_and_grads": true}})");
  EXPECT_DIAG(lamb, "zero-master-weights-offload", "/optimizer/type");
  auto both = Validate(Cfg(R"({"stage": 2, "offload_optimizer": {"device": "cpu"}})",
                           R"("fp16": {"fp16_master_weights_and_grads": true}, "bf16": {"bf16_master_weights_and_grads": true})"));
  EXPECT_TRUE(MessageHas(both, "zero-master-weights-offload", "mutually exclusive"));
}

TEST(ZeroRulesTest, ApexAmp) {
  auto r = Validate(Cfg(R"({"stage": 1})", R"("amp": {"enabled": true, "opt_level": "O1"})"));
  EXPECT_DIAG(r, "zero-amp", "/amp/enabled");
  EXPECT_TRUE(MessageHas(r, "zero-amp", "Amp and ZeRO are not currently compatible"));
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 0})", R"("amp": {"enabled": true})")), "zero-amp");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2})", R"("amp": {"enabled": false})")), "zero-amp");
}

TEST(ZeroRulesTest, OneBitOptimizers) {
  for (const char* type : {"OneBitAdam", "zerooneadam", "ONEBITLAMB"}) {
    auto r = Validate(std::string(R"({"optimizer": {"type": ")") + type +
                      R"("}, "zero_optimization": {"stage": 1}})");
    EXPECT_DIAG(r, "zero-onebit-optimizer", "/optimizer/type");
  }
  auto r = Validate(R"({"optimizer": {"type": "OneBitAdam"}, "zero_optimization": {"stage": 2}})");
  EXPECT_TRUE(MessageHas(r, "zero-onebit-optimizer", "1bit-Adam is not compatible with ZeRO"));
  EXPECT_NO_DIAG(Validate(R"({"optimizer": {"type": "OneBitAdam"}, "zero_optimization": {"stage": 0}})"),
                 "zero-onebit-optimizer");
}

TEST(ZeroRulesTest, DeprecatedAndNew) {
  auto r = Validate(Cfg(R"({"stage": 2, "cpu_offload": true, "offload_optimizer": {"device": "cpu"}})"));
  EXPECT_DIAG(r, "zero-deprecated-and-new", "/zero_optimization/cpu_offload");
  EXPECT_TRUE(MessageHas(r, "zero-deprecated-and-new",
                         "Cannot provide deprecated parameter 'cpu_offload' and replacing parameter "
                         "'offload_optimizer' together"));
  EXPECT_DIAG(Validate(Cfg(R"({"stage": 3, "cpu_offload_param": false, "offload_param": {"device": "cpu"}})")),
              "zero-deprecated-and-new", "/zero_optimization/cpu_offload_param");
  EXPECT_DIAG(Validate(Cfg(R"({"stage": 3, "stage3_gather_fp16_weights_on_model_save": true, "stage3_gather_16bit_weights_on_model_save": true})")),
              "zero-deprecated-and-new", "/zero_optimization/stage3_gather_fp16_weights_on_model_save");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "cpu_offload": true})")), "zero-deprecated-and-new");
  // "auto" is dropped before validation, so it does not count as given.
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "cpu_offload": true, "offload_optimizer": "auto"})")),
                 "zero-deprecated-and-new");
}

TEST(ZeroRulesTest, AliasAndName) {
  auto r = Validate(Cfg(R"({"stage": 3, "prefetch_bucket_size": 1000, "stage3_prefetch_bucket_size": 2000})"));
  EXPECT_DIAG(r, "zero-alias-and-name", "/zero_optimization/prefetch_bucket_size");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 3, "stage3_prefetch_bucket_size": 2000, "max_live_parameters": 1})")),
                 "zero-alias-and-name");
}

TEST(ZeroRulesTest, LegacyStage1) {
  EXPECT_DIAG(Validate(Cfg(R"({"stage": 1, "legacy_stage1": true})")), "zero-legacy-stage1",
              "/zero_optimization/legacy_stage1");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 1, "legacy_stage1": false})")), "zero-legacy-stage1");
}

TEST(ZeroRulesTest, ElasticCheckpointStage3) {
  EXPECT_DIAG(Validate(Cfg(R"({"stage": 3, "elastic_checkpoint": true})")),
              "zero-elastic-checkpoint-stage3", "/zero_optimization/elastic_checkpoint");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "elastic_checkpoint": true})")),
                 "zero-elastic-checkpoint-stage3");
}

TEST(ZeroRulesTest, NoOptimizer) {
  auto r = Validate(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}})");
  EXPECT_DIAG(r, "zero-no-optimizer", "/zero_optimization/stage");
  EXPECT_TRUE(MessageHas(r, "zero-no-optimizer", "zero stage 2 requires an optimizer"));
  EXPECT_TRUE(r.valid());
  EXPECT_TRUE(MessageHas(Validate(R"({"zero_optimization": {"stage": 3}})"), "zero-no-optimizer",
                         "inference only"));
  EXPECT_DIAG(Validate(R"({"zero_optimization": true})"), "zero-no-optimizer", "/zero_optimization");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2})")), "zero-no-optimizer");
  EXPECT_NO_DIAG(Validate(R"({"zero_optimization": {"stage": 0}})"), "zero-no-optimizer");
  // engine.py _configure_zero_optimizer asserts only when nothing passes an optimizer: the Trainer,
  // Accelerate and Megatron-DeepSpeed always do (no finding); a script of its own may not (a warning).
  const char* no_section = R"({"train_batch_size": 8, "zero_optimization": {"stage": 2}})";
  for (Consumer passes : {Consumer::kHfTrainer, Consumer::kAccelerate, Consumer::kMegatronDeepSpeed}) {
    EXPECT_NO_DIAG(Validate(no_section, testing::As(passes)), "zero-no-optimizer");
  }
  const FileReport built = Validate(no_section, testing::As(Consumer::kDeepSpeed));
  ASSERT_NE(Find(built, "zero-no-optimizer"), nullptr);
  EXPECT_EQ(Find(built, "zero-no-optimizer")->severity, Severity::kWarning);
  EXPECT_EQ(Find(Validate(no_section), "zero-no-optimizer")->severity, Severity::kWarning);
}

TEST(ZeroRulesTest, OverlapCommDefault) {
  auto r = Validate(Cfg(R"({"stage": 2})"));
  EXPECT_DIAG(r, "zero-overlap-comm-default", "/zero_optimization/overlap_comm");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "overlap_comm": true})")), "zero-overlap-comm-default");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 3})")), "zero-overlap-comm-default");
  ValidateOptions pp;
  pp.pp = 2;
  auto piped = Validate(Cfg(R"({"stage": 1, "overlap_comm": true})"), pp);
  EXPECT_TRUE(MessageHas(piped, "zero-overlap-comm-default", "will be disabled"));
}

// runtime/pipe/engine.py PipelineEngine.__init__ (0.19.6): assert self.zero_optimization_stage() <
// ZeroStageEnum.gradients, "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism".
TEST(ZeroRulesTest, StageTwoAndThreeAreRefusedWithPipelineStages) {
  ValidateOptions pp;
  pp.pp = 2;
  for (const char* zero : {R"({"stage": 2})", R"({"stage": 3})"}) {
    auto r = Validate(Cfg(zero), pp);
    EXPECT_DIAG(r, "zero-stage-pipeline", "/zero_optimization/stage");
    EXPECT_TRUE(MessageHas(r, "zero-stage-pipeline", "incompatible with pipeline parallelism"));
    EXPECT_FALSE(r.valid());
    EXPECT_NO_DIAG(Validate(Cfg(zero)), "zero-stage-pipeline");  // no pipeline
  }
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 1})"), pp), "zero-stage-pipeline");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 0})"), pp), "zero-stage-pipeline");
}

}  // namespace
}  // namespace dsp

namespace dsp {
namespace {

// runtime/zero/config.py reduce_bucket_size Field(ge=0) and report_ipg_memory_usage's division
// (stage_1_and_2.py / stage3.py, base_optimizer.py): DeepSpeed issue #8260.
TEST(ZeroRulesTest, ReduceBucketSizeZeroDividesByZeroInTheFirstBackward) {
  for (const char* stage : {"1", "2", "3"}) {
    auto r = Validate(Cfg(std::string(R"({"stage": )") + stage + R"(, "reduce_bucket_size": 0})"));
    EXPECT_DIAG(r, "zero-reduce-bucket-zero", "/zero_optimization/reduce_bucket_size");
    EXPECT_TRUE(MessageHas(r, "zero-reduce-bucket-zero", "ZeroDivisionError"));
  }
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 0, "reduce_bucket_size": 0})")), "zero-reduce-bucket-zero");
  // Before 0.19.1 the crash is not verified: a warning, not an error.
  ValidateOptions old;
  old.version = *DeepSpeedVersion::Parse("0.14.0");
  auto older = ValidateText("ds_config.json", Cfg(R"({"stage": 2, "reduce_bucket_size": 0})"), old);
  bool warned = false;
  for (const Diagnostic& d : older.diagnostics) {
    if (d.rule_id == "zero-reduce-bucket-zero") warned = d.severity == Severity::kWarning;
  }
  EXPECT_TRUE(warned);
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "reduce_bucket_size": 5e8})")), "zero-reduce-bucket-zero");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "reduce_bucket_size": 1})")), "zero-reduce-bucket-zero");
}

}  // namespace
}  // namespace dsp
