#include "sim/tune.h"

#include <gtest/gtest.h>

#include "core/util/file_io.h"
#include "core/validate/validator.h"

namespace dsp::sim {
namespace {

ModelSpec Model(const char* rel) {
  auto text = ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel);
  return ParseHfConfig(Json::parse(text.value())).value();
}

Cluster H100() {
  auto text = ReadFile(std::string(DSP_SOURCE_DIR) + "/samples/clusters/h100-sxm.json");
  return ParseCluster(Json::parse(text.value(), nullptr, true, true)).value();
}

TEST(TuneTest, BestPlansFitAreSortedAndPassValidate) {
  ModelSpec model = Model("samples/models/llama-3-8b.json");
  TuneOptions o;
  o.world_size = 16;
  o.seq_len = 4096;
  o.top = 5;
  auto r = Tune(model, H100(), o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_FALSE(r->plans.empty());
  EXPECT_GE(r->evaluated, r->valid);
  EXPECT_GE(r->valid, r->fitting);
  EXPECT_GE(r->fitting, static_cast<int64_t>(r->plans.size()));
  for (size_t i = 0; i + 1 < r->plans.size(); ++i) {
    EXPECT_GE(r->plans[i].tokens_per_second, r->plans[i + 1].tokens_per_second);
  }
  ValidateOptions vo;
  vo.world_size = 16;
  vo.model = &model;
  vo.seq_len = 4096;
  for (const auto& p : r->plans) {
    EXPECT_LE(p.peak_bytes, p.hbm_bytes);
    EXPECT_EQ(p.micro_batch * p.grad_accum * p.dp, r->global_batch);
    FileReport report = ValidateText("emitted.json", p.config.dump(), vo);
    EXPECT_TRUE(report.valid()) << p.config.dump(2);
  }
}

TEST(TuneTest, MoeSearchUsesExpertParallelism) {
  ModelSpec model = Model("samples/models/mixtral-8x7b.json");
  TuneOptions o;
  o.world_size = 16;
  o.top = 3;
  auto r = Tune(model, H100(), o);
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->plans.empty());
  for (const auto& p : r->plans) {
    EXPECT_EQ(model.num_experts % p.ep, 0);
    ASSERT_TRUE(p.config.contains("expert_parallel"));
  }
}

TEST(TuneTest, NothingFitsIsAnAnswerNotAnError) {
  ModelSpec model = Model("samples/models/llama-3-70b.json");
  TuneOptions o;
  o.world_size = 1;
  o.global_batch = 1;
  o.seq_len = int64_t{1} << 20;  // even one fully recomputed sequence is terabytes of activations
  auto r = Tune(model, H100(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->plans.empty());
  EXPECT_GT(r->evaluated, 0);
}

TEST(TuneTest, OffloadCostsTime) {
  // Offload lets a model fit on fewer GPUs but is never free: a plan that differs only by offload
  // is slower.
  ModelSpec model = Model("samples/models/llama-3-8b.json");
  TuneOptions o;
  o.world_size = 8;
  o.top = 1000;
  auto r = Tune(model, H100(), o);
  ASSERT_TRUE(r.ok());
  int compared = 0;
  for (const auto& a : r->plans) {
    for (const auto& b : r->plans) {
      if (a.tp == b.tp && a.pp == b.pp && a.sp == b.sp && a.zero_stage == b.zero_stage &&
          a.recompute == b.recompute &&
          a.micro_batch == b.micro_batch && a.offload == Offload::kNone && b.offload != Offload::kNone) {
        EXPECT_LT(b.tokens_per_second, a.tokens_per_second);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 0);
}

TEST(TuneTest, Deterministic) {
  ModelSpec model = Model("samples/models/llama-3-8b.json");
  TuneOptions o;
  o.world_size = 8;
  auto a = Tune(model, H100(), o);
  auto b = Tune(model, H100(), o);
  ASSERT_EQ(a->plans.size(), b->plans.size());
  for (size_t i = 0; i < a->plans.size(); ++i) EXPECT_EQ(a->plans[i].config, b->plans[i].config);
}

}  // namespace
}  // namespace dsp::sim
