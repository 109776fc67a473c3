// SPDX-License-Identifier: Apache-2.0
// AutoEP group sizes and AutoEP+AutoTP folding (folding_rules.cc): the shapes of
// worked shapes and validate_folding_global rules a-i.
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Find;
using testing::Validate;
using testing::World;

ValidateOptions At(int64_t world, int64_t pp = 1, std::optional<int64_t> gpn = std::nullopt) {
  ValidateOptions o;
  o.world_size = world;
  o.pp = pp;
  o.gpus_per_node = gpn;
  return o;
}

// AutoEP with autoep_size `ep` (0: key absent) and AutoTP `tp`, plus `ep_extra` inside
// expert_parallel and `extra` at the top level.
std::string Fold(int tp, int ep, const std::string& ep_extra = "", const std::string& extra = "") {
  std::string out = R"({"train_micro_batch_size_per_gpu": 1, "tensor_parallel": {"autotp_size": )" +
                    std::to_string(tp) + R"(}, "expert_parallel": {"enabled": true)";
  if (ep > 0) out += R"(, "autoep_size": )" + std::to_string(ep);
  out += ep_extra + "}";
  if (!extra.empty()) out += ", " + extra;
  return out + "}";
}

std::string MessageOf(const FileReport& r, const std::string& id) {
  const Diagnostic* d = Find(r, id);
  return d == nullptr ? "" : d->message;
}

void ExpectNoParallelErrors(const FileReport& r) {
  for (const auto& d : r.diagnostics) {
    bool ours = d.rule_id.starts_with("ep-") || d.rule_id.starts_with("tp-");
    EXPECT_FALSE(ours && d.severity == Severity::kError) << testing::Dump(r);
  }
}

struct Shape {
  int world, tp, ep;
};

TEST(FoldingRulesTest, AcceptedShapes) {
  for (Shape s : {Shape{4, 4, 4}, Shape{4, 2, 4}, Shape{8, 4, 4}, Shape{8, 2, 4}, Shape{16, 2, 8},
                  Shape{16, 2, 4}, Shape{4, 2, 2}}) {
    SCOPED_TRACE("W=" + std::to_string(s.world) + " TP=" + std::to_string(s.tp) +
                 " EP=" + std::to_string(s.ep));
    ExpectNoParallelErrors(Validate(Fold(s.tp, s.ep), World(s.world)));
  }
}

TEST(FoldingRulesTest, AutotpMustDivideTheStage) {  // W=8 TP=3
  auto r = Validate(Fold(3, 4), World(8));
  EXPECT_DIAG(r, "ep-fold-autotp-divides-stage", "/tensor_parallel/autotp_size");
  EXPECT_NE(
      MessageOf(r, "ep-fold-autotp-divides-stage").find("Valid autotp_size values: [1, 2, 4, 8]"),
      std::string::npos);
  EXPECT_NO_DIAG(r, "tp-world-divisibility");  // reported once, by the rule DeepSpeed hits first
  EXPECT_NO_DIAG(Validate(Fold(2, 4), World(8)), "ep-fold-autotp-divides-stage");
}

TEST(FoldingRulesTest, ExpertWidthMustDivideTheStage) {  // W=8 TP=2 EP=3
  auto r = Validate(Fold(2, 3), World(8));
  EXPECT_DIAG(r, "ep-fold-width-divides-stage", "/expert_parallel/autoep_size");
  const std::string msg = MessageOf(r, "ep-fold-width-divides-stage");
  EXPECT_NE(msg.find("(3 * 1 = 3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Valid expert-width values: [1, 2, 4, 8]"), std::string::npos) << msg;
  // A pipeline shrinks the stage: W=16, PP=2 -> stage 8.
  auto pp = Validate(Fold(1, 16), At(16, 2));
  EXPECT_DIAG(pp, "ep-fold-width-divides-stage", "/expert_parallel/autoep_size");
  EXPECT_NE(MessageOf(pp, "ep-fold-width-divides-stage").find("(world_size=16 / pp_size=2 = 8)"),
            std::string::npos);
  EXPECT_NO_DIAG(Validate(Fold(2, 4), World(8)), "ep-fold-width-divides-stage");
  // Before the folding release the message names autoep_size alone.
  ValidateOptions old = World(6);
  old.version = *DeepSpeedVersion::Parse("0.19.2");
  EXPECT_NE(MessageOf(Validate(Fold(1, 4), old), "ep-fold-width-divides-stage")
                .find("Valid autoep_size values: [1, 2, 3, 6]"),
            std::string::npos);
}

TEST(FoldingRulesTest, PipelineMustDivideTheWorld) {
  EXPECT_DIAG(Validate(Fold(1, 2), At(8, 3)), "ep-fold-pp-divides-world", "/expert_parallel");
  EXPECT_NO_DIAG(Validate(Fold(1, 2), At(8, 2)), "ep-fold-pp-divides-world");
}

TEST(FoldingRulesTest, SizesMustBePositiveIntegers) {
  EXPECT_DIAG(Validate(Fold(1, 0, R"(, "autoep_size": 4.5)"), World(8)), "ep-size-invalid",
              "/expert_parallel/autoep_size");
  EXPECT_DIAG(Validate(Fold(1, 0, R"(, "autoep_size": "auto")"), World(8)), "ep-size-invalid",
              "/expert_parallel/autoep_size");
  EXPECT_DIAG(Validate(Fold(1, 4, R"(, "expert_tensor_parallel_size": 0)"), World(8)),
              "ep-size-invalid", "/expert_parallel/expert_tensor_parallel_size");
  EXPECT_NO_DIAG(Validate(Fold(1, 4), World(8)), "ep-size-invalid");
}

TEST(FoldingRulesTest, RuleA_DeepCompile) {
  EXPECT_DIAG(Validate(Fold(2, 4, "", R"("compile": {"deepcompile": true})"), World(8)),
              "ep-fold-deepcompile", "/compile/deepcompile");
  EXPECT_NO_DIAG(Validate(Fold(1, 4, "", R"("compile": {"deepcompile": true})"), World(8)),
                 "ep-fold-deepcompile");
}

TEST(FoldingRulesTest, RuleB_Pipeline) {  // W=8 PP=2 TP=2
  auto r = Validate(Fold(2, 2), At(8, 2));
  EXPECT_DIAG(r, "ep-fold-pipeline", "/tensor_parallel/autotp_size");
  EXPECT_NE(MessageOf(r, "ep-fold-pipeline").find("supports pp_size=1 only; got pp_size=2"),
            std::string::npos);
  EXPECT_NO_DIAG(Validate(Fold(1, 2), At(8, 2)), "ep-fold-pipeline");
}

TEST(FoldingRulesTest, RuleC_SequenceParallel) {
  EXPECT_DIAG(Validate(Fold(2, 4, "", R"("sequence_parallel_size": 2)"), World(8)),
              "ep-fold-sequence-parallel", "/sequence_parallel_size");
  EXPECT_NO_DIAG(Validate(Fold(1, 4, "", R"("sequence_parallel_size": 2)"), World(8)),
                 "ep-fold-sequence-parallel");
}

TEST(FoldingRulesTest, RuleD_ExpertTensorParallel) {  // ETP=2 anywhere, even without AutoTP
  auto r = Validate(Fold(1, 2, R"(, "expert_tensor_parallel_size": 2)"), World(8));
  EXPECT_DIAG(r, "ep-expert-tp", "/expert_parallel/expert_tensor_parallel_size");
  EXPECT_DIAG(Validate(Fold(2, 2, R"(, "expert_tensor_parallel_size": 2)"), World(8)),
              "ep-expert-tp", "/expert_parallel/expert_tensor_parallel_size");
  EXPECT_NO_DIAG(Validate(Fold(2, 4, R"(, "expert_tensor_parallel_size": 1)"), World(8)),
                 "ep-expert-tp");
}

TEST(FoldingRulesTest, RuleE_PresetMismatch) {
  const std::string both =
      R"({"train_micro_batch_size_per_gpu": 1, "tensor_parallel": {"preset_model": "mixtral"},
      "expert_parallel": {"enabled": true, "autoep_size": 4, "preset_model": "qwen3_moe"}})";
  EXPECT_DIAG(Validate(both, World(8)), "ep-preset-mismatch", "/expert_parallel/preset_model");
  const std::string same =
      R"({"train_micro_batch_size_per_gpu": 1, "tensor_parallel": {"autotp_size": 2, "preset_model": "mixtral"},
      "expert_parallel": {"enabled": true, "autoep_size": 4, "preset_model": "mixtral"}})";
  EXPECT_NO_DIAG(Validate(same, World(8)), "ep-preset-mismatch");
}

TEST(FoldingRulesTest, RuleF_NeedsExpertParallelism) {  // W=4 TP=2 EP=1
  auto r = Validate(Fold(2, 1), World(4));
  EXPECT_DIAG(r, "ep-fold-needs-ep", "/expert_parallel/autoep_size");
  EXPECT_NE(MessageOf(r, "ep-fold-needs-ep").find("requires expert_parallel.autoep_size > 1"),
            std::string::npos);
  EXPECT_DIAG(Validate(Fold(2, 0), World(4)), "ep-fold-needs-ep", "/expert_parallel/enabled");
  EXPECT_NO_DIAG(Validate(Fold(2, 2), World(4)), "ep-fold-needs-ep");
}

TEST(FoldingRulesTest, RuleG_DataBeforeExpert) {
  EXPECT_DIAG(Validate(Fold(2, 4, "", R"("use_data_before_expert_parallelism": true)"), World(8)),
              "ep-fold-data-before", "/use_data_before_expert_parallelism");
  EXPECT_NO_DIAG(
      Validate(Fold(1, 4, "", R"("use_data_before_expert_parallelism": true)"), World(8)),
      "ep-fold-data-before");
}

TEST(FoldingRulesTest, RuleH_ZeroStage3) {
  EXPECT_DIAG(Validate(Fold(2, 4, "", R"("zero_optimization": {"stage": 3})"), World(8)),
              "ep-fold-zero3", "/zero_optimization/stage");
  EXPECT_NO_DIAG(Validate(Fold(2, 4, "", R"("zero_optimization": {"stage": 2})"), World(8)),
                 "ep-fold-zero3");
}

TEST(FoldingRulesTest, RuleI_OffloadKeyPresence) {
  auto none = Validate(
      Fold(2, 4, "",
           R"("zero_optimization": {"stage": 2, "offload_optimizer": {"device": "none"}})"),
      World(8));
  EXPECT_DIAG(none, "ep-fold-offload", "/zero_optimization/offload_optimizer");
  EXPECT_DIAG(
      Validate(Fold(2, 4, "",
                    R"("zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}})"),
               World(8)),
      "ep-fold-offload", "/zero_optimization/offload_param");
  EXPECT_NO_DIAG(
      Validate(Fold(2, 4, "", R"("zero_optimization": {"stage": 2, "offload_optimizer": null})"),
               World(8)),
      "ep-fold-offload");
  EXPECT_NO_DIAG(
      Validate(Fold(1, 4, "",
                    R"("zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}})"),
               World(8)),
      "ep-fold-offload");
}

TEST(FoldingRulesTest, RulesJK_MpuNote) {
  EXPECT_DIAG(Validate(Fold(1, 2), At(8, 2)), "ep-mpu-unchecked", "/expert_parallel");
  EXPECT_NO_DIAG(Validate(Fold(1, 2), At(8, 1)), "ep-mpu-unchecked");
}

TEST(FoldingRulesTest, ExpertGroupsCrossingNodes) {
  auto r = Validate(Fold(1, 16), At(32, 1, 8));
  EXPECT_DIAG(r, "ep-crosses-nodes", "/expert_parallel/autoep_size");
  EXPECT_NE(MessageOf(r, "ep-crosses-nodes").find("span 2 nodes"), std::string::npos);
  EXPECT_NO_DIAG(Validate(Fold(1, 8), At(32, 1, 8)), "ep-crosses-nodes");
  // Data-before-expert order strides EP groups by stage/EP: EP=2 over 16 ranks spans nodes.
  EXPECT_DIAG(
      Validate(Fold(1, 2, "", R"("use_data_before_expert_parallelism": true)"), At(16, 1, 8)),
      "ep-crosses-nodes", "/expert_parallel/autoep_size");
}

}  // namespace
}  // namespace dsp
