// SPDX-License-Identifier: Apache-2.0
// The framework profiles state what each framework's code does (the file and function each field
// cites in sim/frameworks/*.cc), and the registry finds each by its --engine name.
#include "sim/frameworks/framework.h"

#include <gtest/gtest.h>

namespace dsp::sim {
namespace {

TEST(FrameworkTest, EveryEngineHasOneProfileFoundByItsName) {
  for (Engine e : {Engine::kDeepSpeed, Engine::kMegatronDeepSpeed, Engine::kMegatronLm}) {
    const FrameworkProfile& p = FrameworkOf(e);
    EXPECT_EQ(p.engine, e);
    EXPECT_EQ(EngineName(e), p.name);
    EXPECT_EQ(ParseEngineName(p.name), e);
  }
  EXPECT_EQ(EngineName(Engine::kMegatronDeepSpeed), "megatron-deepspeed");
  EXPECT_FALSE(ParseEngineName("fsdp").has_value());
  EXPECT_FALSE(ParseEngineName("").has_value());
}

TEST(FrameworkTest, DeepSpeedTrainsTransformersModulesWithAutoTpUlyssesAndAutoEp) {
  const FrameworkProfile& ds = DeepSpeedProfile();
  EXPECT_EQ(ds.tensor_parallel, TensorParallelStyle::kAutoTp);
  EXPECT_TRUE(ds.trains_transformers_modules);
  EXPECT_TRUE(ds.ulysses && ds.autoep && ds.offload && ds.torch_autocast);
  EXPECT_EQ(ds.max_zero_stage, 3);
  // runtime/pipe/engine.py PipelineEngine.__init__: "ZeRO-2 and ZeRO-3 are incompatible with
  // pipeline parallelism".
  EXPECT_EQ(ds.pipeline_max_zero_stage, 1);
  EXPECT_TRUE(ds.event_schedule);
  EXPECT_EQ(ds.rank_layout, RankLayout::kDeepSpeed);
}

TEST(FrameworkTest, MegatronEnginesSplitTheVocabularyAndLayRanksOutTheMegatronWay) {
  for (const FrameworkProfile* p : {&MegatronDeepSpeedProfile(), &MegatronLmProfile()}) {
    EXPECT_TRUE(p->megatron_tp()) << p->name;
    EXPECT_EQ(p->rank_layout, RankLayout::kMegatron) << p->name;
    EXPECT_FALSE(p->trains_transformers_modules) << p->name;
    EXPECT_FALSE(p->ulysses || p->autoep) << p->name;
    EXPECT_TRUE(p->tied_embedding_grad_all_reduce) << p->name;
  }
  EXPECT_EQ(MegatronLmProfile().gradients, GradientSync::kMegatronDdp);
  EXPECT_EQ(MegatronLmProfile().pipeline, PipelineRuntime::kMegatronSchedules);
  EXPECT_TRUE(MegatronLmProfile().interleaved_pipeline);
  EXPECT_EQ(MegatronDeepSpeedProfile().gradients, GradientSync::kDeepSpeedZero);
  EXPECT_EQ(MegatronDeepSpeedProfile().pipeline, PipelineRuntime::kDeepSpeedPipelineEngine);
}

// Only torch.distributed.pipelining under torchtitan and NeMo AutoModel calls its schedule once per
// local batch (torchtitan train.py forward_backward_step; AutoModel recipes/llm/train_ft.py);
// Megatron-LM's forward_backward_func and DeepSpeed's PipelineEngine.train_batch run the whole step.
TEST(FrameworkTest, OnlyFsdp2CallsThePipelineSchedulePerLocalBatch) {
  EXPECT_TRUE(FrameworkOf(Engine::kFsdp2).pipeline_calls_per_local_batch);
  for (Engine e : {Engine::kDeepSpeed, Engine::kMegatronDeepSpeed, Engine::kMegatronLm}) {
    EXPECT_FALSE(FrameworkOf(e).pipeline_calls_per_local_batch) << FrameworkOf(e).name;
  }
}

TEST(FrameworkTest, Fp32GradientBuffersFollowTheFrameworkAndZeroStage) {
  // BF16Optimizer (runtime/bf16_optimizer.py) at ZeRO 0/1 and Megatron's main_grad; DeepSpeed's
  // own engine on an HF model keeps bf16 gradients.
  EXPECT_TRUE(Fp32GradientBuffer(Engine::kMegatronDeepSpeed, true, 1));
  EXPECT_FALSE(Fp32GradientBuffer(Engine::kMegatronDeepSpeed, true, 2));
  EXPECT_FALSE(Fp32GradientBuffer(Engine::kMegatronDeepSpeed, false, 0));
  EXPECT_TRUE(Fp32GradientBuffer(Engine::kMegatronLm, true, 0));
  EXPECT_FALSE(Fp32GradientBuffer(Engine::kDeepSpeed, true, 0));
}

// One predicate answers whether TP communication can overlap the GEMMs, for simulate, tune and the
// reference-run tables: Megatron-LM's userbuffers need sequence parallelism (arguments.py "Tensor
// parallel communication/GEMM overlap can happen only when sequence parallelism is enabled"),
// torchtitan's async TP is an Inductor pass (parallelize.py "Async TP requires
// --training.compile") over PyTorch's matmuls, and DeepSpeed's AutoTP has none.
TEST(FrameworkTest, TpCommOverlapBlockerSaysWhatIsMissing) {
  using B = TpOverlapBlocker;
  const FrameworkProfile& mlm = MegatronLmProfile();
  const FrameworkProfile& fsdp2 = Fsdp2Profile();
  EXPECT_EQ(TpCommOverlapBlocker(DeepSpeedProfile(), 8, true, true, false), B::kNoOverlap);
  EXPECT_EQ(TpCommOverlapBlocker(MegatronDeepSpeedProfile(), 8, true, false, false), B::kNoOverlap);
  EXPECT_EQ(TpCommOverlapBlocker(mlm, 8, true, false, false), B::kNone);
  EXPECT_EQ(TpCommOverlapBlocker(mlm, 8, false, false, false), B::kNeedsSequenceParallel);
  EXPECT_EQ(TpCommOverlapBlocker(mlm, 1, true, false, false), B::kNoTensorParallel);
  // torchtitan's TP is sequence-parallel whatever --megatron-sp says.
  EXPECT_EQ(TpCommOverlapBlocker(fsdp2, 8, false, true, false), B::kNone);
  EXPECT_EQ(TpCommOverlapBlocker(fsdp2, 8, false, false, false), B::kNeedsCompile);
  EXPECT_EQ(TpCommOverlapBlocker(fsdp2, 8, false, true, true), B::kTeModules);
  EXPECT_EQ(TpCommOverlapBlocker(fsdp2, 1, false, true, false), B::kNoTensorParallel);
}

}  // namespace
}  // namespace dsp::sim
