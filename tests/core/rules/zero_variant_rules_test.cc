// SPDX-License-Identifier: Apache-2.0
// ZenFlow, ZeRO++ hpZ and MiCS as DeepSpeed checks them while it builds them (issue 33 items 1, 3).
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::MessageHas;
using testing::Validate;

constexpr const char* kHead =
    R"({"train_batch_size": 8, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "zero_optimization": )";

std::string Cfg(const std::string& zero) { return std::string(kHead) + zero + "}"; }

ValidateOptions World(int64_t world, int64_t gpus_per_node = 8) {
  ValidateOptions o;
  o.world_size = world;
  o.gpus_per_node = gpus_per_node;
  return o;
}

// runtime/zenflow/zenflow_stage_1_and_2.py ZenFlowZeroOptimizer._configure_zenflow:
// ValueError("Zenflow must be used with cpu offload").
TEST(ZeroVariantRulesTest, ZenFlowNeedsCpuOptimizerOffload) {
  auto r = Validate(Cfg(R"({"stage": 2, "zenflow": {}})"));
  EXPECT_DIAG(r, "zero-zenflow-cpu-offload", "/zero_optimization/zenflow");
  EXPECT_TRUE(MessageHas(r, "zero-zenflow-cpu-offload", "Zenflow must be used with cpu offload"));
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "offload_optimizer": {"device": "cpu"}, "zenflow": {}})")),
                 "zero-zenflow-cpu-offload");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2})")), "zero-zenflow-cpu-offload");
}

// ZenFlowZeroOptimizer.__init__: assert overlap_comm "offload selective optimizer should be used with
// overlap_comm" (overlap_comm defaults to false at stage 2).
TEST(ZeroVariantRulesTest, ZenFlowOffloadNeedsOverlapComm) {
  const std::string off = R"("offload_optimizer": {"device": "cpu"}, "zenflow": {"offload": true})";
  EXPECT_DIAG(Validate(Cfg(R"({"stage": 2, )" + off + "}")), "zero-zenflow-offload-overlap",
              "/zero_optimization/zenflow/offload");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 2, "overlap_comm": true, )" + off + "}")), "zero-zenflow-offload-overlap");
}

// _configure_zenflow: "auto" strategy with an integer select_interval raises Warning; a numeric
// strategy needs a number; configure_zenflow (zenflow/engine.py): "Select interval must be greater or
// equal to update interval"; and it overwrites gradient_accumulation_steps with update_interval.
TEST(ZeroVariantRulesTest, ZenFlowSelectIntervalAgainstItsStrategy) {
  const std::string off = R"("stage": 2, "offload_optimizer": {"device": "cpu"}, )";
  EXPECT_DIAG(Validate(Cfg("{" + off + R"("zenflow": {"select_interval": 4}})")), "zero-zenflow-select-interval",
              "/zero_optimization/zenflow/select_interval");
  EXPECT_DIAG(Validate(Cfg("{" + off + R"("zenflow": {"select_strategy": "step"}})")), "zero-zenflow-select-interval",
              "/zero_optimization/zenflow/select_strategy");
  auto below = Validate(Cfg("{" + off + R"("zenflow": {"select_strategy": "step", "select_interval": 2, "update_interval": 4}})"));
  EXPECT_TRUE(MessageHas(below, "zero-zenflow-select-interval", "Select interval must be greater or equal"));
  auto fine = Validate(Cfg("{" + off + R"("zenflow": {"select_strategy": "epoch", "select_interval": 4, "update_interval": 4}})"));
  EXPECT_NO_DIAG(fine, "zero-zenflow-select-interval");
  EXPECT_TRUE(MessageHas(fine, "zero-zenflow-accumulation", "update_interval (4)"));
}

// utils/groups.py _create_zero_param_parallel_group: min(hpz, world) ranks, _ensure_divisibility.
TEST(ZeroVariantRulesTest, HpzMustDivideTheWorld) {
  const std::string hpz = R"({"stage": 3, "zero_hpz_partition_size": 3})";
  auto r = Validate(Cfg(hpz), World(8));
  EXPECT_DIAG(r, "zero-hpz-world", "/zero_optimization/zero_hpz_partition_size");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 3, "zero_hpz_partition_size": 4})"), World(8)), "zero-hpz-world");
  // Above the world it is clamped: a note, not an error.
  auto clamped = Validate(Cfg(R"({"stage": 3, "zero_hpz_partition_size": 16})"), World(8));
  EXPECT_TRUE(MessageHas(clamped, "zero-hpz-world", "clamps it to 8"));
  EXPECT_EQ(testing::Find(clamped, "zero-hpz-world")->severity, Severity::kNote);
  EXPECT_NO_DIAG(Validate(Cfg(hpz)), "zero-hpz-world");  // no world size: nothing to check
}

// runtime/zero/mics_utils.py _generate_mics_config: the shard divides world / pp; the hierarchical
// all-gather needs shards that span nodes.
TEST(ZeroVariantRulesTest, MicsShardsTileTheStageAndSpanNodesWhenHierarchical) {
  EXPECT_DIAG(Validate(Cfg(R"({"stage": 3, "mics_shard_size": 3})"), World(16)), "zero-mics-world",
              "/zero_optimization/mics_shard_size");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 3, "mics_shard_size": 8})"), World(16)), "zero-mics-world");
  EXPECT_DIAG(Validate(Cfg(R"({"stage": 3, "mics_shard_size": 8, "mics_hierarchical_params_gather": true})"), World(16)),
              "zero-mics-world", "/zero_optimization/mics_hierarchical_params_gather");
  EXPECT_NO_DIAG(Validate(Cfg(R"({"stage": 3, "mics_shard_size": 16, "mics_hierarchical_params_gather": true})"),
                          World(32)),
                 "zero-mics-world");
}

// stage3.py DeepSpeedZeroOptimizer_Stage3.__init__ (@007cca6a): after the reduce-scatter check,
// "Muon and all2all process group cannot be used together" with zero_quantized_gradients.
TEST(ZeroVariantRulesTest, MuonRefusesQuantizedGradientsAtStageThree) {
  auto r = Validate(R"({"train_batch_size": 8, "optimizer": {"type": "Muon", "params": {"lr": 1e-3}},
      "zero_optimization": {"stage": 3, "reduce_scatter": false, "zero_quantized_gradients": true}})");
  EXPECT_TRUE(MessageHas(r, "optimizer-param-value", "Muon and all2all process group cannot be used together"));
  auto rs = Validate(R"({"train_batch_size": 8, "optimizer": {"type": "Muon", "params": {"lr": 1e-3}},
      "zero_optimization": {"stage": 3, "zero_quantized_gradients": true}})");
  EXPECT_TRUE(MessageHas(rs, "optimizer-param-value", "Muon and reduce scatter cannot be used together"));
}

// engine.py _configure_optimizer: ZeRO-Offload with a client optimizer that is not DeepSpeedCPUAdam or
// DeepSpeedCPULion raises ZeRORuntimeException unless zero_force_ds_cpu_optimizer is false. The Trainer
// passes its create_optimizer's torch AdamW when the config has no optimizer section
// (transformers integrations/deepspeed.py deepspeed_optim_sched), but prepares it through Accelerate,
// whose Accelerator._prepare_deepspeed (accelerate/accelerator.py) swaps a client optimizer for
// DeepSpeedCPUAdam when offload_optimizer.device is not "none" and zero_force_ds_cpu_optimizer holds:
// no exception there (a false alarm found on LLaMA-Factory's, axolotl's and ms-swift's offload configs).
TEST(ZeroVariantRulesTest, OffloadWithAClientOptimizerDependsOnTheLauncher) {
  const std::string no_section =
      R"({"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})";
  for (Consumer swapped : {Consumer::kHfTrainer, Consumer::kAccelerate}) {
    auto trainer = Validate(no_section, testing::As(swapped));
    const Diagnostic* d = testing::FindAt(trainer, "zero-offload-client-optimizer", "/zero_optimization/offload_optimizer/device");
    ASSERT_NE(d, nullptr) << testing::Dump(trainer);
    EXPECT_EQ(d->severity, Severity::kNote);
    EXPECT_TRUE(MessageHas(trainer, "zero-offload-client-optimizer", "replaces it with DeepSpeedCPUAdam"));
  }
  // Without --consumer, and under a script or Megatron-DeepSpeed, it depends on what is passed: a warning.
  for (Consumer c : {Consumer::kUnspecified, Consumer::kDeepSpeed}) {
    const Diagnostic* w = testing::Find(Validate(no_section, testing::As(c)), "zero-offload-client-optimizer");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->severity, Severity::kWarning);
  }
  // An optimizer section: DeepSpeed builds DeepSpeedCPUAdam itself; Megatron-DeepSpeed ignores the section.
  const std::string section =
      R"({"train_batch_size": 8, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})";
  EXPECT_NO_DIAG(Validate(section, testing::As(Consumer::kHfTrainer)), "zero-offload-client-optimizer");
  EXPECT_NE(testing::Find(Validate(section, testing::As(Consumer::kMegatronDeepSpeed)), "zero-offload-client-optimizer"),
            nullptr);
  // zero_force_ds_cpu_optimizer false lets any optimizer through.
  EXPECT_NO_DIAG(Validate(R"({"train_batch_size": 8, "zero_force_ds_cpu_optimizer": false,
      "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})", testing::As(Consumer::kHfTrainer)),
                 "zero-offload-client-optimizer");
}

}  // namespace
}  // namespace dsp
