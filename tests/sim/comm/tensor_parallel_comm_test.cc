// SPDX-License-Identifier: Apache-2.0
// PlanTensorParallel: Megatron's f/g pairs (Narayanan et al. 2021 §3: two all-reduces forward and
// two backward per layer), sequence parallelism's all-gather + reduce-scatter (Korthikanti et al.
// 2022 §4.2.2), Megatron's vocab-parallel collectives (megatron/core/tensor_parallel/layers.py
// VocabParallelEmbedding, cross_entropy.py), none for AutoTP's whole embedding and lm_head
// (DeepSpeed 0.19.6 replace_module.py: lm_head is not replaced in training).
#include "tests/sim/comm/comm_test_util.h"

namespace dsp::sim {
namespace {

using testing::CommCase;
using testing::FindPlanned;
using testing::Purposes;
using testing::Sizes;

// A preset's layer specs (no transformers tp_plan): embedding and lm_head stay whole.
constexpr const char* kAutoTp8 = R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "tensor_parallel": {"autotp_size": 8, "preset_model": "llama"}})";
constexpr const char* kPlain = R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})";

TEST(TensorParallelCommTest, AutoTpAllReducesTwicePerLayerEachWayAndNothingForTheVocabulary) {
  CommCase c(kAutoTp8, Sizes(8, 8), "llama-3-8b.json");
  const auto planned = c.Run(PlanTensorParallel);
  ASSERT_EQ(Purposes(planned), std::vector<std::string>{"tp_all_reduce"});
  const CollectiveCall& call = planned[0].call;
  EXPECT_EQ(call.group, GroupKind::kTp);
  EXPECT_EQ(call.group_size, 8);
  EXPECT_DOUBLE_EQ(call.bytes_per_call, 4096.0 * 4096 * 2);  // T x h bf16
  EXPECT_DOUBLE_EQ(planned[0].calls_per_unit, 32 * 2 * 2.0);  // 32 layers x 2 pairs x (fwd + bwd)
  EXPECT_EQ(planned[0].schedule, CommSchedule::kCritical);
  // Full recompute runs each layer's forward, and its all-reduces, again.
  c.input.workload.recompute = Recompute::kFull;
  EXPECT_DOUBLE_EQ(c.Run(PlanTensorParallel)[0].calls_per_unit, 32 * 2 * 3.0);
}

TEST(TensorParallelCommTest, TransformersTpPlanGathersTheLogitsOfAColumnParallelHead) {
  // Without a preset DeepSpeed converts transformers' tp_plan (tp_plan_converter.py, PR #8146):
  // lm_head is "colwise_gather_output", its logits all-gathered over tp once per micro-step.
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "tensor_parallel": {"autotp_size": 8}})",
             Sizes(8, 8), "llama-3-8b.json");
  const auto planned = c.Run(PlanTensorParallel);
  ASSERT_EQ(Purposes(planned), (std::vector<std::string>{"tp_all_reduce", "tp_lm_head_logits_all_gather",
                                                         "tp_lm_head_input_all_reduce"}));
  EXPECT_DOUBLE_EQ(planned[1].call.bytes_per_call, 4096.0 * 128256 * 2);  // T x V bf16 logits
  EXPECT_DOUBLE_EQ(planned[1].calls_per_unit, 1);
  EXPECT_EQ(planned[1].scope, StageScope::kLast);
}

TEST(TensorParallelCommTest, SequenceParallelSplitsEachAllReduceIntoAGatherAndAScatter) {
  CommCase c(kPlain, Sizes(8, 8, 1, 8, RankLayout::kMegatron), "llama-3-8b.json", Engine::kMegatronLm);
  c.input.engine.megatron_sp = true;
  const auto planned = c.Run(PlanTensorParallel);
  EXPECT_EQ(Purposes(planned), (std::vector<std::string>{"tp_sp_all_gather", "tp_sp_reduce_scatter",
                                                         "tp_embedding_reduce", "tp_lm_head_reduce",
                                                         "tp_cross_entropy_all_reduce"}));
  EXPECT_DOUBLE_EQ(FindPlanned(planned, "tp_sp_all_gather")->calls_per_unit, 128);
  // Under SP the embedding's output is reduce-scattered, not all-reduced.
  EXPECT_EQ(FindPlanned(planned, "tp_embedding_reduce")->call.kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(FindPlanned(planned, "tp_embedding_reduce")->scope, StageScope::kFirst);
  EXPECT_EQ(FindPlanned(planned, "tp_lm_head_reduce")->scope, StageScope::kLast);
  // max, target logit and sum of exponentials: three fp32 values per token.
  const PlannedCollective* ce = FindPlanned(planned, "tp_cross_entropy_all_reduce");
  EXPECT_DOUBLE_EQ(ce->call.bytes_per_call, 4096.0 * 4);
  EXPECT_DOUBLE_EQ(ce->calls_per_unit, 3);
}

// torchtitan's op-level SAC saves reduce_scatter_tensor's outputs but not the all-gathers'
// (_save_list, models/llama3/parallelize_llama.py at 9dec370 and e7c0cae): under --recompute
// selective backward gathers each pair's input again; full AC reruns both.
TEST(TensorParallelCommTest, OpLevelSacGathersAgainButKeepsTheReduceScatters) {
  CommCase c(kPlain, Sizes(8, 8, 1, 8, RankLayout::kMegatron), "llama-3-8b.json", Engine::kFsdp2);
  c.input.engine.megatron_sp = true;  // torchtitan's TP is always sequence-parallel
  auto calls = [&](Recompute r, const char* purpose) {
    c.input.workload.recompute = r;
    const auto planned = c.Run(PlanTensorParallel);
    const PlannedCollective* p = FindPlanned(planned, purpose);
    return p == nullptr ? 0.0 : p->calls_per_unit;
  };
  EXPECT_DOUBLE_EQ(calls(Recompute::kNone, "tp_sp_all_gather"), 32 * 2 * 2.0);
  EXPECT_DOUBLE_EQ(calls(Recompute::kNone, "tp_sp_all_gather_bwd_regather"), 0);
  // One more per pair, in backward (the name says so to the engine schedule).
  EXPECT_DOUBLE_EQ(calls(Recompute::kSelective, "tp_sp_all_gather"), 32 * 2 * 2.0);
  EXPECT_DOUBLE_EQ(calls(Recompute::kSelective, "tp_sp_all_gather_bwd_regather"), 32 * 2.0);
  EXPECT_DOUBLE_EQ(calls(Recompute::kSelective, "tp_sp_reduce_scatter"), 32 * 2 * 2.0);
  EXPECT_DOUBLE_EQ(calls(Recompute::kFull, "tp_sp_reduce_scatter"), 32 * 2 * 3.0);
  EXPECT_DOUBLE_EQ(calls(Recompute::kFull, "tp_sp_all_gather_bwd_regather"), 0);
  // torchao's float8 TP gathers float8 (PrepareFloat8ModuleInput, Float8RowwiseParallel's
  // backward cast); the reduce-scatters stay bf16.
  c.input.engine.fp8 = true;
  c.input.workload.recompute = Recompute::kSelective;
  const auto float8 = c.Run(PlanTensorParallel);
  ASSERT_NE(FindPlanned(float8, "tp_sp_all_gather_bwd_regather"), nullptr);
  EXPECT_DOUBLE_EQ(FindPlanned(float8, "tp_sp_all_gather")->call.bytes_per_call, 4096.0 * 4096 * 1);
  EXPECT_DOUBLE_EQ(FindPlanned(float8, "tp_sp_all_gather_bwd_regather")->call.bytes_per_call, 4096.0 * 4096 * 1);
  EXPECT_DOUBLE_EQ(FindPlanned(float8, "tp_sp_reduce_scatter")->call.bytes_per_call, 4096.0 * 4096 * 2);
  // Megatron's selective recompute reruns the attention core only: no collective.
  CommCase m(kPlain, Sizes(8, 8, 1, 8, RankLayout::kMegatron), "llama-3-8b.json", Engine::kMegatronLm);
  m.input.engine.megatron_sp = true;
  m.input.workload.recompute = Recompute::kSelective;
  EXPECT_DOUBLE_EQ(FindPlanned(m.Run(PlanTensorParallel), "tp_sp_all_gather")->calls_per_unit, 32 * 2 * 2.0);
  // TransformerEngine's FP8 under megatron-lm: its sequence-parallel all-gathers stay 16-bit here.
  m.input.engine.fp8 = true;
  EXPECT_DOUBLE_EQ(FindPlanned(m.Run(PlanTensorParallel), "tp_sp_all_gather")->call.bytes_per_call, 4096.0 * 4096 * 2);
}

TEST(TensorParallelCommTest, NoTensorParallelismPlansNothing) {
  CommCase c(kPlain, Sizes(8, 8), "llama-3-8b.json");
  EXPECT_TRUE(c.Run(PlanTensorParallel).empty());
}

TEST(TensorParallelCommTest, PartitionedActivationsAreGatheredBeforeEachRecomputedLayer) {
  CommCase c(kAutoTp8, Sizes(8, 8), "llama-3-8b.json");
  c.input.checkpointing.partition_activations = true;
  EXPECT_TRUE(c.Run(PlanCheckpointPartitionGathers).empty());  // nothing is recomputed
  c.input.workload.recompute = Recompute::kFull;
  const auto planned = c.Run(PlanCheckpointPartitionGathers);
  ASSERT_EQ(Purposes(planned), std::vector<std::string>{"ckpt_partition_all_gather"});
  EXPECT_DOUBLE_EQ(planned[0].calls_per_unit, 32);
}

}  // namespace
}  // namespace dsp::sim

namespace dsp::sim {
namespace {

// Megatron-Core's --tp-comm-overlap (TransformerEngine userbuffers,
// megatron/core/extensions/transformer_engine.py initialize_ub; arguments.py requires sequence
// parallelism): the sequence-parallel all-gather and reduce-scatter move behind the GEMMs next to
// them, forward and backward, all but the first of tp chunks.
TEST(TensorParallelCommTest, TpCommOverlapHidesAllButTheFirstChunkBehindTheGemms) {
  testing::CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})",
                      testing::Sizes(8, 8, 1, 4, RankLayout::kMegatron), "llama-3-8b.json", Engine::kMegatronLm);
  c.input.engine.megatron_sp = true;
  const auto plain = c.Run(PlanTensorParallel);
  ASSERT_EQ(testing::FindPlanned(plain, "tp_sp_all_gather")->schedule, CommSchedule::kCritical);
  c.input.engine.tp_comm_overlap = true;
  const auto overlapped = c.Run(PlanTensorParallel);
  int forward = 0, backward = 0;
  for (const PlannedCollective& p : overlapped) {
    if (p.call.purpose != "tp_sp_all_gather" && p.call.purpose != "tp_sp_reduce_scatter") continue;
    EXPECT_NE(p.schedule, CommSchedule::kCritical) << p.call.purpose;
    forward += p.schedule == CommSchedule::kForwardOverlap;
    backward += p.schedule == CommSchedule::kBackwardOverlap;
    EXPECT_DOUBLE_EQ(p.floor_seconds, p.seconds_per_unit / 4) << p.call.purpose;  // one of tp chunks
    EXPECT_DOUBLE_EQ(p.calls_per_unit, 2 * 32);  // attention and MLP per layer, one pass each way
  }
  EXPECT_EQ(forward, 2);
  EXPECT_EQ(backward, 2);
  // The vocabulary-parallel collectives stay on the critical path.
  EXPECT_EQ(testing::FindPlanned(overlapped, "tp_embedding_reduce")->schedule, CommSchedule::kCritical);
}

// torchtitan's async TP (fsdp2 with torch.compile: Inductor's micro_pipeline_tp fuses each
// all-gather into the matmuls it feeds and each matmul into its reduce-scatter, torch 2.6
// torch/_inductor/fx_passes/micro_pipeline_tp.py): the same chunked overlap, with torchao's
// float8 all-gathers still one byte an element and op-level SAC's backward regathers fused too,
// except backward's reduce-scatters of a pair's input gradient: a sum of the separate q/k/v (or
// gate/up) GEMMs, which the pass does not fuse (it needs one producer matmul).
TEST(TensorParallelCommTest, AsyncTpOverlapsTorchtitansGathersAndRegathers) {
  testing::CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})",
                      testing::Sizes(8, 8, 1, 8, RankLayout::kMegatron), "llama-3-8b.json", Engine::kFsdp2);
  c.input.engine.megatron_sp = true;  // torchtitan's TP is always sequence-parallel
  c.input.engine.fp8 = true;
  c.input.workload.recompute = Recompute::kSelective;
  c.input.engine.tp_comm_overlap = true;
  const auto planned = c.Run(PlanTensorParallel);
  EXPECT_EQ(testing::FindPlanned(planned, "tp_sp_all_gather_bwd_regather"), nullptr);
  double gathers = 0, scatters = 0, exposed_scatters = 0;
  for (const PlannedCollective& p : planned) {
    if (p.call.purpose != "tp_sp_all_gather" && p.call.purpose != "tp_sp_reduce_scatter") continue;
    const bool gather = p.call.purpose == "tp_sp_all_gather";
    EXPECT_DOUBLE_EQ(p.call.bytes_per_call, 4096.0 * 4096 * (gather ? 1 : 2)) << p.call.purpose;
    (gather ? gathers : scatters) += p.calls_per_unit;
    if (p.schedule == CommSchedule::kCritical) {
      // Backward's input gradients of q/k/v and gate/up are sums of separate GEMMs: not fused.
      EXPECT_FALSE(gather);
      exposed_scatters += p.calls_per_unit;
      continue;
    }
    EXPECT_DOUBLE_EQ(p.floor_seconds, p.seconds_per_unit / 8) << p.call.purpose;
  }
  // Forward and backward per pair, and each pair's input gathered again for backward's recompute.
  EXPECT_DOUBLE_EQ(gathers, 32 * 2 * 3.0);
  EXPECT_DOUBLE_EQ(scatters, 32 * 2 * 2.0);
  EXPECT_DOUBLE_EQ(exposed_scatters, 32 * 2.0);
}

}  // namespace
}  // namespace dsp::sim
