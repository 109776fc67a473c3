// SPDX-License-Identifier: Apache-2.0
// ReadZeroSettings: DeepSpeed's zero_optimization defaults, aliases, "auto", legacy forms and the
// resolution of settings the ZeRO optimizers ignore (deepspeed/runtime/zero/config.py).
#include <gtest/gtest.h>

#include "sim/cost/sim_input.h"

namespace dsp::sim {
namespace {

ZeroSettings Read(const char* json) { return ReadZeroSettings(Json::parse(json)); }

TEST(ZeroSettingsTest, DefaultsWithoutASection) {
  ZeroSettings z = Read("{}");
  EXPECT_EQ(z.stage, 0);
  EXPECT_FALSE(z.offload_optimizer);
  EXPECT_FALSE(z.offload_param);
  EXPECT_DOUBLE_EQ(z.offload_ratio, 1.0);
  EXPECT_FALSE(z.overlap_comm);
  EXPECT_DOUBLE_EQ(z.reduce_bucket_size, 5e8);
  EXPECT_DOUBLE_EQ(z.allgather_bucket_size, 5e8);
  EXPECT_DOUBLE_EQ(z.prefetch_bucket_size, 5e7);
  EXPECT_DOUBLE_EQ(z.max_live_parameters, 1e9);
  EXPECT_DOUBLE_EQ(z.param_persistence_threshold, 1e5);
}

TEST(ZeroSettingsTest, OverlapCommDefaultsToStageThree) {
  EXPECT_FALSE(Read(R"({"zero_optimization": {"stage": 2}})").overlap_comm);
  EXPECT_TRUE(Read(R"({"zero_optimization": {"stage": 3}})").overlap_comm);
  EXPECT_TRUE(Read(R"({"zero_optimization": {"stage": 3, "overlap_comm": "auto"}})").overlap_comm);
  EXPECT_FALSE(Read(R"({"zero_optimization": {"stage": 3, "overlap_comm": false}})").overlap_comm);
  EXPECT_TRUE(Read(R"({"zero_optimization": {"stage": 1, "overlap_comm": "yes"}})").overlap_comm);
}

TEST(ZeroSettingsTest, BucketsAndAliases) {
  ZeroSettings z = Read(R"({"zero_optimization": {
      "stage": 3, "reduce_bucket_size": 2e8, "allgather_bucket_size": 3e8,
      "stage3_prefetch_bucket_size": 1e7, "max_live_parameters": 3e8,
      "stage3_param_persistence_threshold": 1e4}})");
  EXPECT_DOUBLE_EQ(z.reduce_bucket_size, 2e8);
  EXPECT_DOUBLE_EQ(z.allgather_bucket_size, 3e8);
  EXPECT_DOUBLE_EQ(z.prefetch_bucket_size, 1e7);
  EXPECT_DOUBLE_EQ(z.max_live_parameters, 3e8);
  EXPECT_DOUBLE_EQ(z.param_persistence_threshold, 1e4);
  // "auto" (filled in by the Hugging Face Trainer) means the default here.
  ZeroSettings a = Read(R"({"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto",
                            "stage3_prefetch_bucket_size": "auto"}})");
  EXPECT_DOUBLE_EQ(a.reduce_bucket_size, 5e8);
  EXPECT_DOUBLE_EQ(a.prefetch_bucket_size, 5e7);
}

TEST(ZeroSettingsTest, Offload) {
  ZeroSettings z = Read(R"({"zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "cpu", "ratio": 0.4}, "offload_param": {"device": "nvme"}}})");
  EXPECT_TRUE(z.offload_optimizer);
  EXPECT_TRUE(z.offload_param);
  EXPECT_DOUBLE_EQ(z.offload_ratio, 0.4);
  // device "none" does not offload.
  EXPECT_FALSE(Read(R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "none"}}})")
                   .offload_optimizer);
  // offload_param is only read at stage 3; offload_optimizer needs a ZeRO optimizer (stage >= 1).
  ZeroSettings s2 = Read(R"({"zero_optimization": {"stage": 2,
      "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}})");
  EXPECT_TRUE(s2.offload_optimizer);
  EXPECT_FALSE(s2.offload_param);
  EXPECT_FALSE(Read(R"({"zero_optimization": {"stage": 0, "offload_optimizer": {"device": "cpu"}}})")
                   .offload_optimizer);
}

TEST(ZeroSettingsTest, DeprecatedAndLegacyForms) {
  ZeroSettings dep = Read(R"({"zero_optimization": {"stage": 3, "cpu_offload": true,
                             "cpu_offload_param": true}})");
  EXPECT_TRUE(dep.offload_optimizer);
  EXPECT_TRUE(dep.offload_param);
  ZeroSettings legacy = Read(R"({"zero_optimization": true, "allgather_size": 2e8})");
  EXPECT_EQ(legacy.stage, 1);
  EXPECT_DOUBLE_EQ(legacy.allgather_bucket_size, 2e8);
  EXPECT_EQ(Read(R"({"zero_optimization": false})").stage, 0);
  EXPECT_EQ(Read(R"({"zero_optimization": {"stage": "auto"}})").stage, 0);
}

// engine.py get_deepspeed_compile_backend (0.19.6): the autosp and autotp passes take the compile
// backend, otherwise get_deepcompile_backend runs ZeRO, which falls back to torch.compile at
// stage 0.
TEST(ZeroSettingsTest, DeepCompileRunsZeroUnlessAPassOrStageZeroTakesOver) {
  EXPECT_TRUE(Read(R"({"compile": {"deepcompile": true}, "zero_optimization": {"stage": 2}})").deepcompile);
  EXPECT_TRUE(Read(R"({"compile": {"deepcompile": true, "passes": ["z1"]}, "zero_optimization": {"stage": 1}})").deepcompile);
  EXPECT_FALSE(Read(R"({"compile": {"deepcompile": true}, "zero_optimization": {"stage": 0}})").deepcompile);
  EXPECT_FALSE(Read(R"({"compile": {"deepcompile": true, "passes": ["autosp"]}, "zero_optimization": {"stage": 1}})").deepcompile);
  EXPECT_FALSE(Read(R"({"compile": {"deepcompile": false}, "zero_optimization": {"stage": 2}})").deepcompile);
  EXPECT_FALSE(Read(R"({"zero_optimization": {"stage": 3}})").deepcompile);
  // DeepCompile's ZeRO-3 registers every parameter with ds_persist = False (compile/init_z3.py
  // init_z3), so stage3_param_persistence_threshold has no effect: everything is gathered. (What
  // selective_gather later keeps resident follows a run-time memory profile.)
  const ZeroSettings z3 = Read(R"({"compile": {"deepcompile": true}, "zero_optimization": {"stage": 3,
                                   "stage3_param_persistence_threshold": 1e6}})");
  EXPECT_TRUE(z3.deepcompile);
  EXPECT_EQ(z3.param_persistence_threshold, 0);
  EXPECT_FALSE(z3.deepcompile_gathers_in_place);  // the default schedule prefetches
  // init_z3.py: the offload passes' schedules run in place of prefetch and selective_gather.
  for (const char* pass : {"offload_parameters", "offload_opt_states", "offload_activation"}) {
    Json config = Json::parse(R"({"compile": {"deepcompile": true}, "zero_optimization": {"stage": 3}})");
    config["compile"][pass] = true;
    EXPECT_TRUE(ReadZeroSettings(config).deepcompile_gathers_in_place) << pass;
    config["zero_optimization"]["stage"] = 2;
    EXPECT_FALSE(ReadZeroSettings(config).deepcompile_gathers_in_place) << pass;
  }
  // engine.py get_deepcompile_backend turns offload_parameters on when ZeRO offloads both the
  // optimizer and the parameters to cpu.
  const ZeroSettings implied = Read(R"({"compile": {"deepcompile": true}, "zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}})");
  EXPECT_TRUE(implied.deepcompile_gathers_in_place);
  EXPECT_FALSE(Read(R"({"compile": {"deepcompile": true}, "zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "cpu"}}})").deepcompile_gathers_in_place);
  const ZeroSettings eager = Read(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 1e6}})");
  EXPECT_EQ(eager.param_persistence_threshold, 1e6);
}

}  // namespace
}  // namespace dsp::sim
