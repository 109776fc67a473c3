// SPDX-License-Identifier: Apache-2.0
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Version;
using testing::MessageHas;

using testing::Validate;

TEST(CompileRulesTest, PassNames) {
  auto r = Validate(R"({"compile": {"deepcompile": true, "passes": ["z3", "auto_tp"]}, "zero_optimization": {"stage": 3}})");
  EXPECT_DIAG(r, "compile-pass-unknown", "/compile/passes/1");
  const Diagnostic* d = testing::Find(r, "compile-pass-unknown");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->hint, "did you mean \"autotp\"?");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autotp"]}, "tensor_parallel": {"autotp_size": 2}})"),
                 "compile-pass-unknown");
  // A rejected entry does not hide the problems of the others.
  auto both = Validate(R"({"compile": {"deepcompile": true, "passes": ["autotp", "autosp", "z2"]}, "tensor_parallel": {"autotp_size": 2}})");
  EXPECT_DIAG(both, "compile-pass-unknown", "/compile/passes/2");
  EXPECT_DIAG(both, "compile-autotp-combined", "/compile/passes");
}

TEST(CompileRulesTest, PassNamesByVersion) {
  const char* autotp = R"({"compile": {"deepcompile": true, "passes": ["autotp"]}, "tensor_parallel": {"autotp_size": 2}})";
  auto r = Validate(autotp, Version("0.19.5"));
  EXPECT_DIAG(r, "compile-pass-unknown", "/compile/passes/0");
  EXPECT_TRUE(MessageHas(r, "compile-pass-unknown", "arrived in 0.19.6"));
  EXPECT_NO_DIAG(Validate(autotp, Version("0.19.6")), "compile-pass-unknown");
  // On 0.19.5 the autotp entry is not a pass at all, so nothing is said about its dispatch.
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autotp", "autosp"]}})", Version("0.19.5")),
                 "compile-autotp-combined");

  const char* autosp = R"({"compile": {"deepcompile": true, "passes": ["autosp"]}})";
  EXPECT_DIAG(Validate(autosp, Version("0.18.8")), "compile-passes-unavailable", "/compile/passes");
  EXPECT_NO_DIAG(Validate(autosp, Version("0.18.9")), "compile-passes-unavailable");
}

TEST(CompileRulesTest, PassesWithoutDeepCompile) {
  EXPECT_DIAG(Validate(R"({"compile": {"passes": ["autosp"]}})"), "compile-passes-unused", "/compile/passes");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autosp"]}})"), "compile-passes-unused");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"passes": []}})"), "compile-passes-unused");
}

TEST(CompileRulesTest, AutoTpCombined) {
  auto r = Validate(R"({"compile": {"deepcompile": true, "passes": ["autotp", "autosp"]}, "tensor_parallel": {"autotp_size": 2}})");
  EXPECT_DIAG(r, "compile-autotp-combined", "/compile/passes");
  EXPECT_TRUE(MessageHas(r, "compile-autotp-combined", "cannot yet be combined with AutoSP or the ZeRO passes"));
  EXPECT_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["z1", "autotp"]}, "zero_optimization": {"stage": 1}})"),
              "compile-autotp-combined", "/compile/passes");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autotp"]}, "tensor_parallel": {"autotp_size": 2}})"),
                 "compile-autotp-combined");
  // Without deepcompile the passes are not used at all.
  EXPECT_NO_DIAG(Validate(R"({"compile": {"passes": ["autotp", "autosp"]}})"), "compile-autotp-combined");
}

TEST(CompileRulesTest, AutoTpFallback) {
  EXPECT_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autotp"]}})"),
              "compile-autotp-fallback", "/compile/passes");
  EXPECT_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autotp"]}, "tensor_parallel": {"autotp_size": 1}})"),
              "compile-autotp-fallback", "/compile/passes");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autotp"]}, "tensor_parallel": {"autotp_size": 4}})"),
                 "compile-autotp-fallback");
}

TEST(CompileRulesTest, TpOverlapComm) {
  auto r = Validate(R"({"compile": {"deepcompile": true, "passes": ["autotp"]}, "tensor_parallel": {"autotp_size": 2, "tp_overlap_comm": true}})");
  EXPECT_DIAG(r, "compile-tp-overlap-comm", "/tensor_parallel/tp_overlap_comm");
  EXPECT_NO_DIAG(Validate(R"({"tensor_parallel": {"autotp_size": 2, "tp_overlap_comm": true}})"),
                 "compile-tp-overlap-comm");
}

TEST(CompileRulesTest, AutoSpZeroStage) {
  auto r = Validate(R"({"compile": {"deepcompile": true, "passes": ["autosp"]}, "zero_optimization": {"stage": 2}})");
  EXPECT_DIAG(r, "compile-autosp-zero-stage", "/compile/passes");
  EXPECT_TRUE(r.valid() || testing::Find(r, "compile-autosp-zero-stage")->severity == Severity::kWarning);
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autosp"]}, "zero_optimization": {"stage": 1}})"),
                 "compile-autosp-zero-stage");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autosp"]}})"), "compile-autosp-zero-stage");
}

TEST(CompileRulesTest, DeepCompileStage0) {
  EXPECT_DIAG(Validate(R"({"compile": {"deepcompile": true}})"), "compile-zero-stage0", "/compile/deepcompile");
  EXPECT_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["z1"]}, "zero_optimization": {"stage": 0}})"),
              "compile-zero-stage0", "/compile/deepcompile");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true}, "zero_optimization": {"stage": 1}})"), "compile-zero-stage0");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autosp"]}})"), "compile-zero-stage0");
}

TEST(CompileRulesTest, ZeroPassFollowsStage) {
  auto r = Validate(R"({"compile": {"deepcompile": true, "passes": ["z3"]}, "zero_optimization": {"stage": 2}})");
  EXPECT_DIAG(r, "compile-zero-pass-ignored", "/compile/passes");
  EXPECT_TRUE(MessageHas(r, "compile-zero-pass-ignored", "runs the ZeRO-1/2 pass"));
  EXPECT_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["z1"]}, "zero_optimization": {"stage": 3}})"),
              "compile-zero-pass-ignored", "/compile/passes");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["z3"]}, "zero_optimization": {"stage": 3}})"),
                 "compile-zero-pass-ignored");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["z1"]}, "zero_optimization": {"stage": 2}})"),
                 "compile-zero-pass-ignored");
}

// init_z1_and_2.py / init_z3.py (0.19.6): dc.init(engine.data_parallel_group, ...), one
// communicator for every registered parameter; AutoEP's expert groups are unknown to it.
TEST(CompileRulesTest, DeepCompileZeroWithAutoEpExperts) {
  const std::string ep = R"("expert_parallel": {"enabled": true, "autoep_size": 4, "preset_model": "mixtral"})";
  auto r = Validate(R"({"compile": {"deepcompile": true}, "zero_optimization": {"stage": 2}, )" + ep + "}");
  EXPECT_DIAG(r, "compile-deepcompile-expert-groups", "/compile/deepcompile");
  EXPECT_TRUE(MessageHas(r, "compile-deepcompile-expert-groups", "engine.data_parallel_group"));
  // Eager ZeRO, the AutoSP backend and ZeRO stage 0 (plain torch.compile) keep the expert groups.
  EXPECT_NO_DIAG(Validate(R"({"zero_optimization": {"stage": 2}, )" + ep + "}"), "compile-deepcompile-expert-groups");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autosp"]}, "zero_optimization": {"stage": 1}, )" +
                          ep + "}"),
                 "compile-deepcompile-expert-groups");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true}, "zero_optimization": {"stage": 0}, )" + ep + "}"),
                 "compile-deepcompile-expert-groups");
}

// engine.py get_autosp_backend (0.19.6) sets fullgraph=True; auto_ep_layer.py
// _split_plan_from_expert_counts syncs with the host (.cpu().tolist()).
TEST(CompileRulesTest, AutoSpFullGraphMeetsAutoEpHostSyncs) {
  const std::string ep = R"("expert_parallel": {"enabled": true, "autoep_size": 4, "preset_model": "mixtral"})";
  auto r = Validate(R"({"compile": {"deepcompile": true, "passes": ["autosp"]}, "zero_optimization": {"stage": 1},
                        "sequence_parallel_size": 2, )" + ep + "}");
  EXPECT_DIAG(r, "compile-autosp-graph-break", "/compile/passes");
  EXPECT_TRUE(MessageHas(r, "compile-autosp-graph-break", ".cpu().tolist()"));
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autosp"]}, "zero_optimization": {"stage": 1},
                              "sequence_parallel_size": 2})"),
                 "compile-autosp-graph-break");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 2, )" + ep + "}"), "compile-autosp-graph-break");
}

TEST(CompileRulesTest, Stage3OffloadConflicts) {
  auto opt = Validate(R"({"compile": {"deepcompile": true, "offload_opt_states": true},
                          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/x"}}})");
  EXPECT_DIAG(opt, "compile-offload-conflict", "/compile/offload_opt_states");
  auto act = Validate(R"({"compile": {"deepcompile": true, "offload_activation": true, "offload_parameters": true},
                          "zero_optimization": {"stage": 3}})");
  EXPECT_DIAG(act, "compile-offload-conflict", "/compile/offload_activation");
  // offload_parameters implied by ZeRO offloading both optimizer and parameters to cpu.
  auto implied = Validate(R"({"compile": {"deepcompile": true, "offload_opt_states": true},
                              "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}, "offload_optimizer": {"device": "cpu"}}})");
  EXPECT_TRUE(MessageHas(implied, "compile-offload-conflict", "turned on by the engine"));
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "offload_opt_states": true}, "zero_optimization": {"stage": 3}})"),
                 "compile-offload-conflict");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "offload_activation": true}, "zero_optimization": {"stage": 3}})"),
                 "compile-offload-conflict");
  // Stage 1/2 never reach init_z3.
  EXPECT_NO_DIAG(Validate(R"({"compile": {"deepcompile": true, "offload_activation": true, "offload_parameters": true},
                              "zero_optimization": {"stage": 2}})"),
                 "compile-offload-conflict");
}

}  // namespace
}  // namespace dsp
