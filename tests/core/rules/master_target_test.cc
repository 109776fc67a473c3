// SPDX-License-Identifier: Apache-2.0
// --deepspeed-version master against the newest release (issue 33): each check that DeepSpeed
// master (deepspeedai/DeepSpeed main after edaa7221) changed gives master's verdict there and the
// release's verdict at 0.19.5, and the checks that did not change give the same verdict at both.
// Each test names DeepSpeed's file, function and the PR.
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Find;
using testing::FindAt;
using testing::MessageHas;
using testing::Validate;

ValidateOptions At(const char* target, int64_t world = 8) {
  ValidateOptions o;
  o.version = DeepSpeedVersion::Parse(target).value();
  o.world_size = world;
  o.gpus_per_node = 8;
  return o;
}

Severity SeverityOf(const FileReport& r, const std::string& id, const std::string& pointer) {
  const Diagnostic* d = FindAt(r, id, pointer);
  EXPECT_NE(d, nullptr) << "no [" << id << "] at " << pointer << "\n" << testing::Dump(r);
  return d == nullptr ? Severity::kNote : d->severity;
}

TEST(MasterTargetTest, MasterIsNewerThanEveryReleaseAndTheDefault) {
  const auto master = DeepSpeedVersion::Parse("master");
  ASSERT_TRUE(master.has_value());
  EXPECT_EQ(master->ToString(), "master");
  EXPECT_GT(*master, DeepSpeedVersion::Newest());
  EXPECT_GT(*master, *DeepSpeedVersion::Parse("0.19.6"));
  EXPECT_FALSE(DeepSpeedVersion::Parse("Master").has_value());  // the exact spelling only
  ASSERT_TRUE(ParseKnownDeepSpeedVersion("master").ok());
  EXPECT_NE(ParseKnownDeepSpeedVersion("0.20").error().message.find("or give master"), std::string::npos);
}

// deepspeed/runtime/zero/config.py DeepSpeedZeroConfig.reduce_bucket_size: ge=0 in the releases, where
// stage_1_and_2.py report_ipg_memory_usage divides by it (issue #8260); gt=0 on master (PR #8266),
// checked when the config is read, so stage 0 is refused too.
TEST(MasterTargetTest, ReduceBucketSizeZero) {
  const std::string z2 = R"({"train_batch_size": 8, "zero_optimization": {"stage": 2, "reduce_bucket_size": 0}})";
  const std::string z0 = R"({"train_batch_size": 8, "zero_optimization": {"stage": 0, "reduce_bucket_size": 0}})";
  const char* at = "/zero_optimization/reduce_bucket_size";
  auto release = Validate(z2, At("0.19.5"));
  EXPECT_EQ(SeverityOf(release, "zero-reduce-bucket-zero", at), Severity::kError);
  EXPECT_TRUE(MessageHas(release, "zero-reduce-bucket-zero", "ZeroDivisionError"));
  EXPECT_EQ(FindAt(Validate(z0, At("0.19.5")), "zero-reduce-bucket-zero", at), nullptr);
  auto master = Validate(z0, At("master"));
  EXPECT_EQ(SeverityOf(master, "zero-reduce-bucket-zero", at), Severity::kError);
  EXPECT_TRUE(MessageHas(master, "zero-reduce-bucket-zero", "Input should be greater than 0"));
}

// module_inject/auto_ep_config.py validate_autoep_config (master, PR #8213): comm_backend in
// ('comm', 'deepep'), comm_num_sm positive, comm_qp_margin and comm_max_tokens_per_rank non-negative,
// deepep needs comm_max_tokens_per_rank > 0; auto_ep_layer.py set_deepspeed_parallelism refuses deepep
// with folded TP; auto_ep_comm.py assert_dtype_supported refuses fp16. Releases drop the keys.
TEST(MasterTargetTest, AutoEpDeepEpTransport) {
  const std::string head = R"({"train_batch_size": 8, "bf16": {"enabled": true}, "expert_parallel": {"enabled": true, "autoep_size": 8, )";
  const std::string deepep = head + R"("comm_backend": "deepep"}})";
  auto release = Validate(deepep, At("0.19.5"));
  EXPECT_EQ(SeverityOf(release, "ep-key-unavailable", "/expert_parallel/comm_backend"), Severity::kWarning);
  EXPECT_EQ(Find(release, "ep-deepep-unsupported"), nullptr);
  EXPECT_EQ(Find(release, "unknown-key"), nullptr);  // one finding per key
  auto master = Validate(deepep, At("master"));
  EXPECT_EQ(Find(master, "ep-key-unavailable"), nullptr);
  EXPECT_TRUE(MessageHas(master, "ep-deepep-unsupported", "comm_max_tokens_per_rank must be a positive integer when comm_backend='deepep'"));
  const FileReport sized = Validate(head + R"("comm_backend": "deepep", "comm_max_tokens_per_rank": 8192}})", At("master"));
  for (const Diagnostic& d : sized.diagnostics) EXPECT_EQ(d.severity, Severity::kNote) << testing::Dump(sized);
  auto bad = Validate(head + R"("comm_backend": "nccl", "comm_num_sm": 0, "comm_qp_margin": -1, "comm_max_tokens_per_rank": 1.5}})",
                      At("master"));
  EXPECT_TRUE(MessageHas(bad, "ep-comm-settings", "comm_backend must be one of ('comm', 'deepep'), got 'nccl'"));
  EXPECT_TRUE(MessageHas(bad, "ep-comm-settings", "comm_num_sm must be a positive integer, got 0"));
  EXPECT_TRUE(MessageHas(bad, "ep-comm-settings", "comm_qp_margin must be a non-negative integer, got -1"));
  EXPECT_TRUE(MessageHas(bad, "ep-comm-settings", "comm_max_tokens_per_rank must be a non-negative integer, got 1.5"));
  const std::string folded = R"({"train_batch_size": 4, "bf16": {"enabled": true}, "tensor_parallel": {"autotp_size": 2},
      "expert_parallel": {"enabled": true, "autoep_size": 4, "comm_backend": "deepep", "comm_max_tokens_per_rank": 4096}})";
  EXPECT_TRUE(MessageHas(Validate(folded, At("master")), "ep-deepep-unsupported", "does not support folded tensor parallelism"));
  const std::string fp16 = R"({"train_batch_size": 8, "fp16": {"enabled": true},
      "expert_parallel": {"enabled": true, "autoep_size": 8, "comm_backend": "deepep", "comm_max_tokens_per_rank": 4096}})";
  EXPECT_TRUE(MessageHas(Validate(fp16, At("master")), "ep-deepep-unsupported", "handles bfloat16 only"));
}

// validate_autoep_config (master, PR #8326): combine_impl "fused_weighted_sum" joins the Literal and
// is refused with autotp_size > 1, expert_tensor_parallel_size > 1 and DeepEP;
// validate_autoep_post_detection refuses score_apply "pre". Releases: not one of the choices.
TEST(MasterTargetTest, FusedWeightedSumCombine) {
  const std::string fused = R"({"train_batch_size": 8, "expert_parallel": {"enabled": true, "autoep_size": 8,
      "combine_impl": "fused_weighted_sum"}})";
  auto release = Validate(fused, At("0.19.5"));
  EXPECT_EQ(SeverityOf(release, "ep-invalid-choice", "/expert_parallel/combine_impl"), Severity::kError);
  EXPECT_TRUE(MessageHas(release, "ep-invalid-choice", "('auto', 'weighted_sum', 'legacy_bmm')"));
  auto master = Validate(fused, At("master"));
  EXPECT_EQ(Find(master, "ep-invalid-choice"), nullptr) << testing::Dump(master);
  EXPECT_EQ(Find(master, "ep-fused-combine"), nullptr);
  const std::string folded = R"({"train_batch_size": 4, "tensor_parallel": {"autotp_size": 2},
      "expert_parallel": {"enabled": true, "autoep_size": 4, "combine_impl": "fused_weighted_sum", "score_apply": "pre"}})";
  auto refused = Validate(folded, At("master"));
  EXPECT_TRUE(MessageHas(refused, "ep-fused-combine", "tensor_parallel.autotp_size 2"));
  EXPECT_TRUE(MessageHas(refused, "ep-fused-combine", "score_apply \"post\""));
  const std::string deepep = R"({"train_batch_size": 8, "bf16": {"enabled": true}, "expert_parallel": {"enabled": true,
      "autoep_size": 8, "combine_impl": "fused_weighted_sum", "comm_backend": "deepep", "comm_max_tokens_per_rank": 64}})";
  EXPECT_TRUE(MessageHas(Validate(deepep, At("master")), "ep-fused-combine", "cannot be used with comm_backend \"deepep\""));
}

// validate_autoep_config (master, PR #8359): async_split_plan must be a boolean, checked even with
// AutoEP disabled, and is refused with AutoEP+AutoTP folding. Releases drop the key.
TEST(MasterTargetTest, AsyncSplitPlan) {
  const std::string off = R"({"train_batch_size": 8, "expert_parallel": {"enabled": false, "async_split_plan": "yes"}})";
  EXPECT_EQ(SeverityOf(Validate(off, At("master")), "ep-async-split-plan", "/expert_parallel/async_split_plan"),
            Severity::kError);
  EXPECT_EQ(SeverityOf(Validate(off, At("0.19.5")), "ep-key-unavailable", "/expert_parallel/async_split_plan"),
            Severity::kWarning);
  const std::string folded = R"({"train_batch_size": 4, "tensor_parallel": {"autotp_size": 2},
      "expert_parallel": {"enabled": true, "autoep_size": 4, "async_split_plan": true}})";
  EXPECT_TRUE(MessageHas(Validate(folded, At("master")), "ep-async-split-plan", "does not support AutoEP+AutoTP folding yet"));
  const std::string plain = R"({"train_batch_size": 8, "expert_parallel": {"enabled": true, "autoep_size": 8, "async_split_plan": true}})";
  EXPECT_EQ(Find(Validate(plain, At("master")), "ep-async-split-plan"), nullptr);
}

// deepspeed/compile/config.py CompileConfig.autoep_non_moe and DeepSpeedEngine.compile() (master,
// PR #8380); the releases' CompileConfig forbids the unknown key (pydantic extra="forbid").
TEST(MasterTargetTest, CompileAutoEpNonMoe) {
  const std::string ep = R"("expert_parallel": {"enabled": true, "autoep_size": 8})";
  const std::string ok = R"({"train_batch_size": 8, "compile": {"autoep_non_moe": true}, )" + ep + "}";
  EXPECT_EQ(SeverityOf(Validate(ok, At("0.19.5")), "compile-autoep-non-moe", "/compile/autoep_non_moe"), Severity::kError);
  EXPECT_EQ(Find(Validate(ok, At("master")), "compile-autoep-non-moe"), nullptr) << testing::Dump(Validate(ok, At("master")));
  struct Case {
    std::string config;
    const char* refusal;
  };
  for (const Case& c : {Case{R"({"train_batch_size": 8, "compile": {"autoep_non_moe": true, "deepcompile": true}, )" + ep + "}",
                             "cannot be combined with DeepCompile"},
                        Case{R"({"train_batch_size": 8, "compile": {"autoep_non_moe": true}, "zero_optimization": {"stage": 3}, )" + ep + "}",
                             "does not support ZeRO Stage 3 yet"},
                        Case{R"({"train_batch_size": 8, "compile": {"autoep_non_moe": true}, "zero_optimization": {"stage": 2,
                              "offload_optimizer": {"device": "cpu"}}, )" + ep + "}",
                             "does not support optimizer or parameter offload yet"},
                        Case{R"({"train_batch_size": 8, "compile": {"autoep_non_moe": true}})", "finds no AutoEPMoELayer"}}) {
    EXPECT_TRUE(MessageHas(Validate(c.config, At("master")), "compile-autoep-non-moe", c.refusal)) << c.refusal;
  }
}

// runtime/zenflow/zenflow_config.py ZenFlowConfig: topk_ratio ge=0/le=1 in the releases, gt=0/lt=1 on
// master, and update_interval >= 1 on master (PR #8274), read at any stage.
TEST(MasterTargetTest, ZenFlowBounds) {
  const std::string cfg = R"({"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"},
      "zenflow": {"topk_ratio": 1.0, "update_interval": 0, "select_strategy": "step", "select_interval": 1}}})";
  auto release = Validate(cfg, At("0.19.5"));
  EXPECT_EQ(SeverityOf(release, "zero-zenflow-bounds", "/zero_optimization/zenflow/topk_ratio"), Severity::kNote);
  EXPECT_EQ(SeverityOf(release, "zero-zenflow-bounds", "/zero_optimization/zenflow/update_interval"), Severity::kWarning);
  auto master = Validate(cfg, At("master"));
  EXPECT_EQ(SeverityOf(master, "zero-zenflow-bounds", "/zero_optimization/zenflow/topk_ratio"), Severity::kError);
  EXPECT_EQ(SeverityOf(master, "zero-zenflow-bounds", "/zero_optimization/zenflow/update_interval"), Severity::kError);
  EXPECT_TRUE(MessageHas(master, "zero-zenflow-bounds", "Input should be less than 1"));
  const std::string fine = R"({"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"},
      "zenflow": {"topk_ratio": 0.05, "update_interval": 4, "select_strategy": "step", "select_interval": 4}}})";
  EXPECT_EQ(Find(Validate(fine, At("master")), "zero-zenflow-bounds"), nullptr);
}

// runtime/lr_schedules.py OneCycle._initialize_lr/_initialize_momentum: before PR #8201 (0.19.6) a
// list is written whole into every param group and the first step raises TypeError; from 0.19.6
// _format_param takes one entry per group, so lists of unequal length cannot both fit.
TEST(MasterTargetTest, OneCycleGroupLists) {
  const std::string lists = R"({"train_batch_size": 8, "optimizer": {"type": "Adam", "params": {"lr": 0.001}},
      "scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": [0.001, 0.002], "cycle_max_lr": [0.01, 0.02]}}})";
  auto release = Validate(lists, At("0.19.5"));
  EXPECT_EQ(SeverityOf(release, "scheduler-onecycle-group-lists", "/scheduler/params/cycle_min_lr"), Severity::kWarning)
      << "without --consumer a condition-dependent error is a warning";
  ValidateOptions built = At("0.19.5");
  built.consumer = Consumer::kDeepSpeed;
  EXPECT_EQ(SeverityOf(Validate(lists, built), "scheduler-onecycle-group-lists", "/scheduler/params/cycle_max_lr"),
            Severity::kError);
  for (const char* target : {"0.19.6", "master"}) {
    EXPECT_EQ(Find(Validate(lists, At(target)), "scheduler-onecycle-group-lists"), nullptr) << target;
  }
  // The momentum bounds are read only with cycle_momentum (OneCycle.__init__).
  const std::string no_momentum = R"({"train_batch_size": 8, "optimizer": {"type": "Adam", "params": {"lr": 0.001}},
      "scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_momentum": false,
      "cycle_min_mom": [0.8, 0.85], "cycle_max_mom": [0.9, 0.95]}}})";
  EXPECT_EQ(Find(Validate(no_momentum, At("0.19.5")), "scheduler-onecycle-group-lists"), nullptr);
  const std::string uneven = R"({"train_batch_size": 8, "optimizer": {"type": "Adam", "params": {"lr": 0.001}},
      "scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": [0.001, 0.002], "cycle_max_lr": [0.01, 0.02, 0.03]}}})";
  EXPECT_TRUE(MessageHas(Validate(uneven, At("master")), "scheduler-onecycle-group-lists", "has 3 entries"));
}

// The round-3 checks that master did not change give the same verdict at both targets:
// zenflow_stage_1_and_2.py _configure_zenflow (cpu offload), utils/groups.py
// _create_zero_param_parallel_group (hpZ divides the world), mics_utils.py _generate_mics_config,
// stage3.py (Muon with qgZ), engine.py deepspeed.initialize (autotp_size "auto" TypeError), and
// item 9's elasticity, sparse attention and MoQ checks.
TEST(MasterTargetTest, UnchangedChecksAgreeAtBothTargets) {
  struct Case {
    const char* rule;
    std::string config;
  };
  const std::vector<Case> cases = {
      {"zero-zenflow-cpu-offload", R"({"train_batch_size": 8, "zero_optimization": {"stage": 2, "zenflow": {}}})"},
      {"zero-hpz-world", R"({"train_batch_size": 8, "zero_optimization": {"stage": 3, "zero_hpz_partition_size": 3}})"},
      {"zero-mics-world", R"({"train_batch_size": 8, "zero_optimization": {"stage": 3, "mics_shard_size": 3}})"},
      {"optimizer-param-value", R"({"train_batch_size": 8, "optimizer": {"type": "Muon", "params": {"lr": 0.02}},
          "zero_optimization": {"stage": 3, "reduce_scatter": false, "zero_quantized_gradients": true}})"},
      {"auto-unfilled", R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": "auto"}})"},
      // engine.py _configure_optimizer: ZeRO-Offload with the script's own optimizer.
      {"zero-offload-client-optimizer", R"({"train_batch_size": 8, "zero_optimization": {"stage": 2,
          "offload_optimizer": {"device": "cpu"}}})"},
      // elasticity/config.py ElasticityConfig.__init__: max_train_batch_size is required.
      {"elasticity-config", R"({"train_batch_size": 8, "elasticity": {"enabled": true, "micro_batch_sizes": [2, 4]}})"},
      // ops/sparse_attention: SparsityConfig's modes (runtime/config.py get_sparse_attention_mode).
      {"schema-enum", R"({"train_batch_size": 8, "sparse_attention": {"mode": "bsl"}})"},
      // engine.py _configure_quantization: MoQ in the optimizer step asserts fp16.
      {"moq-config", R"({"train_batch_size": 8, "bf16": {"enabled": true}, "compression_training":
          {"weight_quantization": {"shared_parameters": {"enabled": true}, "different_groups": {}}}})"},
  };
  for (const Case& c : cases) {
    ValidateOptions release = At("0.19.5"), master = At("master");
    release.consumer = master.consumer = Consumer::kDeepSpeed;
    const FileReport at_release = Validate(c.config, release), at_master = Validate(c.config, master);
    const Diagnostic* a = Find(at_release, c.rule);
    const Diagnostic* b = Find(at_master, c.rule);
    ASSERT_NE(a, nullptr) << c.rule << " at 0.19.5\n" << testing::Dump(at_release);
    ASSERT_NE(b, nullptr) << c.rule << " at master";
    EXPECT_EQ(a->severity, b->severity) << c.rule;
  }
}

}  // namespace
}  // namespace dsp
