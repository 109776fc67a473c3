// SPDX-License-Identifier: Apache-2.0
// EstimateStepTime: the worked example of docs/cost-model.md, the folding sample's collectives
// (groups and intra/inter-node placement from the rank lists), overlap, and monotonicity.
#include "sim/cost/step_time.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <sstream>
#include <tuple>

#include "sim/cost/flops.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/param_sharding.h"
#include "tests/sim/cost/time_test_util.h"

namespace dsp::sim {
namespace {

using testing::LoadSampleConfig;
using testing::ParseJsonOrDie;
using testing::SimCase;

const CollectiveCall* Find(const TimeReport& r, std::string_view purpose, GroupKind group) {
  for (const CollectiveCall& c : r.collectives) {
    if (c.purpose == purpose && c.group == group) return &c;
  }
  return nullptr;
}

Json Zero1Dp8() {
  return ParseJsonOrDie(R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                            "zero_optimization": {"stage": 1}})");
}

// docs/cost-model.md, "Worked example": Llama-3-8B, 8 x H100 in one node, pure DP, ZeRO-1,
// one 4096-token sequence per GPU, matmul efficiency 0.5, HBM efficiency 0.8, no kernel overhead
// or wave model (the hand-filled test cluster).
constexpr double kMatmulRate = 989e12 * 0.5, kHbmRate = 3.35e12 * 0.8;

TEST(StepTimeTest, WorkedExampleLlama3_8BZero1) {
  SimCase c(Zero1Dp8(), 8, 8, "llama-3-8b.json");
  c.input.workload.seq_len = 4096;
  const TimeReport r = EstimateStepTime(c.input);
  // Forward: 70,274,254,897,152 matmul FLOPs (every GEMM and the fused attention above the ridge
  // point, attention in the full-square convention) plus 89,537,904,640 bytes of memory-bound
  // kernels, transformers' eager modules (DeepSpeed trains the Hugging Face model): per layer the
  // two LlamaRMSNorms (36 bytes per element each: the fp32 upcast and its steps), rotary on q and k
  // (20 bytes per element through rotate_half), two residual adds (3Th x 2) and act_fn(gate) * up
  // (10 bytes per MLP element), 2,415,919,104 bytes; the embedding lookup (2Th x 2), the final
  // norm (36Th) and ForCausalLMLoss's fp32 upcast and log_softmax (22 bytes per logit).
  constexpr double kFlops = 70'274'254'897'152.0, kBytes = 89'537'904'640.0;
  constexpr double kT = 4096, kH = 4096;
  EXPECT_EQ(2 * 36 * kT * kH + 20 * kT * (32 + 8) * 128 + 2 * 6 * kT * kH + 10 * kT * 14336, 2'415'919'104.0);
  EXPECT_EQ(32 * 2'415'919'104.0 + 67'108'864.0 + 36 * kT * kH + 22 * kT * 128256, kBytes);
  // The fused causal attention kernel skips the masked half of the full square.
  const double attention = 32 * 4.0 * 4096.0 * 4096 * 128 * 32 / kMatmulRate;
  EXPECT_NEAR(r.forward_seconds_per_micro_step, kFlops / kMatmulRate - 0.5 * attention + kBytes / kHbmRate,
              1e-12);
  // Backward: 2 x the GEMM FLOPs, 2.5 x for FlashAttention (it recomputes the scores), 1.5 x the
  // memory-bound bytes.
  EXPECT_NEAR(r.compute_seconds,
              3 * kFlops / kMatmulRate - 3 * attention + 0.5 * attention * 3.5 + 2.5 * kBytes / kHbmRate, 1e-12);
  EXPECT_NEAR(r.compute_seconds, 0.487624566017, 1e-12);
  EXPECT_NEAR(r.memory_bound_seconds, 2.5 * kBytes / kHbmRate, 1e-12);
  // Gradient all-reduce: 8,030,261,248 bf16 gradients in ceil(N / 5e8) = 17 buckets over NVLink.
  const CollectiveCall* ar = Find(r, "dp_grad_reduce", GroupKind::kDp);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(ar->calls_per_step, 17);
  EXPECT_FALSE(ar->inter_node);
  EXPECT_NEAR(ar->seconds, 0.076131930724, 1e-12);
  EXPECT_DOUBLE_EQ(ar->exposed_seconds, ar->seconds);  // overlap_comm off
  // Post-step parameter all-gather, same buckets, half the bus traffic.
  const CollectiveCall* ag = Find(r, "zero_param_all_gather", GroupKind::kDp);
  ASSERT_NE(ag, nullptr);
  EXPECT_NEAR(ag->seconds, 0.038150965362, 1e-12);
  EXPECT_EQ(r.collectives.size(), 2u);
  // The optimizer step over the rank's eighth of the parameters: 40 bytes each through HBM (the
  // gradient cast to fp32, fused Adam, the masters copied back to bf16).
  EXPECT_NEAR(r.optimizer_seconds, 8'030'261'248.0 / 8 * 40 / kHbmRate, 1e-12);
  EXPECT_NEAR(r.step_seconds, r.compute_seconds + ar->seconds + ag->seconds + r.optimizer_seconds,
              1e-12);
  EXPECT_NEAR(r.step_seconds, 0.616889292790, 1e-12);
  EXPECT_NEAR(r.tokens_per_second, 53118.1208, 1e-3);
  EXPECT_NEAR(r.mfu, 0.345552453050, 1e-11);
  EXPECT_DOUBLE_EQ(r.model_flops_per_step, 8 * ModelTrainingFlops(c.model, 1, 4096));

  // overlap_comm: the reduction hides behind the backward except its last bucket.
  c.input.zero.overlap_comm = true;
  const TimeReport o = EstimateStepTime(c.input);
  EXPECT_NEAR(o.exposed_seconds_by_purpose.at("dp_grad_reduce"), 0.076131930724 / 17, 1e-12);
  EXPECT_NEAR(o.step_seconds, 0.545235710932, 1e-12);
}

// An eager step issues its kernels one at a time from the host (Cluster::host): a phase whose
// kernels are shorter than the host takes to issue them takes the host's time, and the GPU waits.
TEST(StepTimeTest, APhaseCannotRunFasterThanTheHostIssuesItsKernels) {
  SimCase c(Zero1Dp8(), 8, 8, "llama-3-8b.json");
  c.input.workload.seq_len = 4096;
  const TimeReport gpu = EstimateStepTime(c.input);
  EXPECT_EQ(gpu.host_wait_seconds, 0);  // the test cluster has no host figures
  // Per layer at least the 7 projections, attention and the memory-bound kernels; backward runs
  // two GEMMs per projection.
  EXPECT_GT(gpu.forward_launches, 32 * 8);
  EXPECT_GT(gpu.backward_launches, gpu.forward_launches);
  EXPECT_EQ(gpu.recompute_launches, 0);

  // A host far faster than the kernels changes nothing.
  c.cluster.host = {1e-9, 1e-9};
  EXPECT_EQ(EstimateStepTime(c.input).step_seconds, gpu.step_seconds);

  // A host slower than every phase: each phase takes launches x the host's time per kernel.
  c.cluster.host = {1e-3, 2e-3};
  const TimeReport host = EstimateStepTime(c.input);
  EXPECT_DOUBLE_EQ(host.forward_seconds_per_micro_step, gpu.forward_launches * 1e-3);
  EXPECT_DOUBLE_EQ(host.backward_seconds_per_micro_step, gpu.backward_launches * 2e-3);
  EXPECT_NEAR(host.host_wait_seconds,
              host.compute_seconds - (gpu.forward_seconds_per_micro_step + gpu.backward_seconds_per_micro_step),
              1e-9);
  EXPECT_GT(host.step_seconds, gpu.step_seconds);
  // Kernel time by class is what the GPU runs: the host's wait is not in it.
  EXPECT_EQ(host.gemm_seconds, gpu.gemm_seconds);

  // Full recompute re-runs the forward's Python inside backward: its kernels at the forward's rate.
  c.input.workload.recompute = Recompute::kFull;
  const TimeReport recompute = EstimateStepTime(c.input);
  // Every layer's forward again, not the embedding or the head.
  EXPECT_GT(recompute.recompute_launches, 0.9 * gpu.forward_launches);
  EXPECT_LT(recompute.recompute_launches, gpu.forward_launches);
  EXPECT_DOUBLE_EQ(recompute.backward_seconds_per_micro_step,
                   gpu.backward_launches * 2e-3 + recompute.recompute_launches * 1e-3);
}

TEST(StepTimeTest, WorkedExampleNumbersAreInTheDocs) {
  // docs/cost-model.md quotes the numbers WorkedExampleLlama3_8BZero1 checks.
  std::ifstream in(std::string(DSP_SOURCE_DIR) + "/docs/cost-model.md");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  for (const char* quoted : {"70,274,254,897,152", "89,537,904,640", "compute 0.487625 s",
                             "0.076132 s", "0.038151 s", "0.014982 s", "Step 0.616889 s",
                             "53,118 tokens/s", "34.56 %", "step 0.545236 s"}) {
    EXPECT_NE(text.str().find(quoted), std::string::npos) << quoted;
  }
}

// Without a preset DeepSpeed 0.19.6 converts transformers' tp_plan, whose lm_head entry is
// "colwise_gather_output" (tp_plan_converter.py, PR #8146): the head holds V/T rows, its matmul
// runs on V/T columns and gather_from_tp_region all-gathers the [tokens, V] logits; copy_to_tp's
// backward all-reduces the head's input gradient. With the llama preset the head stays whole.
TEST(StepTimeTest, TransformersPlanShardsLmHeadAndGathersTheLogits) {
  auto run = [](bool preset) {
    Json config = Json::parse(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
                                  "tensor_parallel": {"autotp_size": 2}})");
    if (preset) config["tensor_parallel"]["preset_model"] = "llama";
    auto c = std::make_unique<SimCase>(config, 8, 8, "llama-3-8b.json");
    c->input.workload = {.seq_len = 4096, .micro_batch = 1, .grad_accum = 1};
    return c;
  };
  auto plan = run(false), preset = run(true);
  const TimeReport r = EstimateStepTime(plan->input);
  const CollectiveCall* logits = Find(r, "tp_lm_head_logits_all_gather", GroupKind::kTp);
  ASSERT_NE(logits, nullptr);
  EXPECT_EQ(logits->kind, CollectiveKind::kAllGather);
  EXPECT_EQ(logits->bytes_per_call, 4096.0 * 128256 * 2);  // tokens x vocabulary, bf16
  EXPECT_EQ(logits->calls_per_step, 1);
  const CollectiveCall* input_grad = Find(r, "tp_lm_head_input_all_reduce", GroupKind::kTp);
  ASSERT_NE(input_grad, nullptr);
  EXPECT_EQ(input_grad->bytes_per_call, 4096.0 * 4096 * 2);
  const TimeReport whole = EstimateStepTime(preset->input);
  EXPECT_EQ(Find(whole, "tp_lm_head_logits_all_gather", GroupKind::kTp), nullptr);
  // The head's parameters: 128256 x 4096 whole, half of them per rank from the plan.
  const MemoryReport m = EstimateMemory(plan->input), mw = EstimateMemory(preset->input);
  EXPECT_NEAR(m.by_family.at(ParamFamily::kLmHead).parameters_bytes * 2,
              mw.by_family.at(ParamFamily::kLmHead).parameters_bytes, 1.0);
  EXPECT_LT(r.compute_seconds, whole.compute_seconds);  // the head's matmul on V/2 columns
}

// DeepCompile's ZeRO-1/2 (csrc/compile/z1.cpp, z2.cpp, 0.19.6): reduce_grad all-reduces each
// bucket (ncclAllReduce, then each rank copies its slice) inside the backward graph; ZeRO-1 only
// in the boundary micro-step, ZeRO-2 in every one. Eager ZeRO-2 reduce-scatters.
TEST(StepTimeTest, DeepCompileZeroReducesGradientsWithAllReduce) {
  auto reduce = [](int stage, bool deepcompile) {
    Json config = Json::parse(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})");
    config["zero_optimization"] = {{"stage", stage}};
    if (deepcompile) config["compile"] = {{"deepcompile", true}};
    SimCase c(config, 8, 8, "llama-3-8b.json");
    c.input.zero = ReadZeroSettings(config);
    c.input.workload = {.seq_len = 4096, .micro_batch = 1, .grad_accum = 4};
    const TimeReport r = EstimateStepTime(c.input);
    const CollectiveCall* call = Find(r, "dp_grad_reduce", GroupKind::kDp);
    EXPECT_NE(call, nullptr);
    return call != nullptr ? *call : CollectiveCall{};
  };
  const CollectiveCall eager2 = reduce(2, false), dc2 = reduce(2, true), eager1 = reduce(1, false),
                       dc1 = reduce(1, true);
  EXPECT_EQ(eager2.kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(dc2.kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(dc2.calls_per_step, eager2.calls_per_step);  // every micro-step, the same buckets
  EXPECT_GT(dc2.seconds, 1.9 * eager2.seconds);           // an all-reduce moves twice the bytes
  EXPECT_EQ(dc1.kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(dc1.calls_per_step, eager1.calls_per_step);  // once per step, at the boundary
  EXPECT_EQ(dc2.calls_per_step, 4 * dc1.calls_per_step);
}

// AutoSP falling back at ZeRO-2/3 (engine.py get_autosp_backend): the sequence-parallel groups
// exist, but every rank runs the whole sequence and no all-to-all is issued.
TEST(StepTimeTest, AutoSpFallbackRunsTheWholeSequenceOnEveryRank) {
  auto estimate = [](int stage) {
    Json config = Json::parse(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
        "sequence_parallel_size": 4, "compile": {"deepcompile": true, "passes": ["autosp"]}})");
    config["zero_optimization"] = {{"stage", stage}};
    SimCase c(config, 8, 8, "llama-3-8b.json");
    c.input.zero = ReadZeroSettings(config);
    c.input.workload = {.seq_len = 8192, .micro_batch = 1, .grad_accum = 1};
    EXPECT_EQ(SequenceShards(c.input), stage >= 2 ? 1 : 4);
    return EstimateStepTime(c.input);
  };
  const TimeReport sharded = estimate(1), fallback = estimate(2);
  EXPECT_NE(Find(sharded, "ulysses_all_to_all", GroupKind::kSp), nullptr);
  EXPECT_EQ(Find(fallback, "ulysses_all_to_all", GroupKind::kSp), nullptr);
  EXPECT_GT(fallback.compute_seconds, 3.5 * sharded.compute_seconds);  // 4x the tokens per rank
}

TEST(StepTimeTest, FoldingSampleCollectivesAndPlacement) {
  // AutoTP 2 x AutoEP 4 on 2 nodes of 4: tp [0,1].., ep [0-3] [4-7], dp [0,2,4,6]*, edp [0,4]*.
  SimCase c(LoadSampleConfig("folding-tp2-ep4.json"), 8, 4, "mixtral-8x7b.json");
  c.input.workload = {.seq_len = 4096, .micro_batch = 2, .grad_accum = 4};
  c.input.zero.overlap_comm = true;
  const TimeReport r = EstimateStepTime(c.input);

  const CollectiveCall* tp = Find(r, "tp_all_reduce", GroupKind::kTp);
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(tp->group_size, 2);
  EXPECT_FALSE(tp->inter_node);
  EXPECT_EQ(tp->bytes_per_call, 8192.0 * 4096 * 2);  // b s h bf16
  EXPECT_EQ(tp->calls_per_step, 32 * 2 * 4);         // attention only: MoE blocks are folded
  for (std::string_view purpose : {"ep_dispatch", "ep_combine"}) {
    const CollectiveCall* a2a = Find(r, purpose, GroupKind::kEp);
    ASSERT_NE(a2a, nullptr) << purpose;
    EXPECT_EQ(a2a->kind, CollectiveKind::kAllToAll);
    EXPECT_EQ(a2a->group_size, 4);
    EXPECT_FALSE(a2a->inter_node) << "ep [0-3] stays in node 0";
    EXPECT_EQ(a2a->bytes_per_call, 8192.0 * 2 / 2 * 4096 * 2);  // tokens x top-k / tp rows of h
    EXPECT_EQ(a2a->calls_per_step, 32 * 2 * 4);
    // One hop of set-up per peer on top of the call's latency (the test cluster has none).
    EXPECT_DOUBLE_EQ(a2a->seconds, 256 * (10e-6 + a2a->bytes_per_call * 0.75 / 370e9));
    EXPECT_DOUBLE_EQ(a2a->exposed_seconds, a2a->seconds);  // critical path
  }
  const CollectiveCall* restore = Find(r, "fold_restore_all_gather", GroupKind::kTp);
  ASSERT_NE(restore, nullptr);
  EXPECT_EQ(restore->kind, CollectiveKind::kAllGather);
  EXPECT_FALSE(restore->inter_node);
  ASSERT_NE(Find(r, "fold_restore_backward_all_reduce", GroupKind::kTp), nullptr);
  ASSERT_NE(Find(r, "fold_tp_grad_all_reduce", GroupKind::kTp), nullptr);
  // The split-count exchange before each dispatch (auto_ep_layer.py _split_plan_from_expert_counts:
  // one all_to_all_single of the [ep, E/ep] int32 counts) and restore_combined's four row-count
  // gathers and three per-assignment index/weight gathers (ep_tp_dispatch.py
  // _all_gather_variable_rows), per MoE layer and forward pass.
  const CollectiveCall* counts = Find(r, "ep_split_counts", GroupKind::kEp);
  ASSERT_NE(counts, nullptr);
  EXPECT_EQ(counts->bytes_per_call, 4.0 * 8);  // Mixtral's 8 experts
  EXPECT_EQ(counts->calls_per_step, 32 * 4);
  const CollectiveCall* row_counts = Find(r, "fold_restore_count_all_gather", GroupKind::kTp);
  ASSERT_NE(row_counts, nullptr);
  EXPECT_EQ(row_counts->calls_per_step, 4 * 32 * 4);
  const CollectiveCall* indices = Find(r, "fold_restore_index_all_gather", GroupKind::kTp);
  ASSERT_NE(indices, nullptr);
  EXPECT_EQ(indices->calls_per_step, 3 * 32 * 4);
  EXPECT_EQ(indices->bytes_per_call, 8192.0 * 2 * 20 / 3);  // int64 + int64 + fp32 per assignment

  // Same group size as ep (4), but the strided dense-DP groups cross the node boundary.
  const CollectiveCall* dp = Find(r, "dp_grad_reduce", GroupKind::kDp);
  ASSERT_NE(dp, nullptr);
  EXPECT_EQ(dp->group_size, 4);
  EXPECT_TRUE(dp->inter_node);
  EXPECT_EQ(dp->kind, CollectiveKind::kAllReduce);  // ZeRO-1
  const CollectiveCall* edp = Find(r, "edp_grad_reduce", GroupKind::kEdp);
  ASSERT_NE(edp, nullptr);
  EXPECT_EQ(edp->group_size, 2);
  EXPECT_TRUE(edp->inter_node);
  ASSERT_NE(Find(r, "zero_param_all_gather", GroupKind::kDp), nullptr);
  ASSERT_NE(Find(r, "zero_param_all_gather", GroupKind::kEdp), nullptr);
  EXPECT_EQ(Find(r, "ulysses_all_to_all", GroupKind::kSp), nullptr);
  EXPECT_EQ(Find(r, "zero3_all_gather_fwd", GroupKind::kDp), nullptr);
  // The router's 8 columns are below the ridge point.
  EXPECT_GT(r.memory_bound_seconds, 0.0);
  // Without pipeline stages the step is compute, exposed communication and the optimizer.
  EXPECT_NEAR(r.step_seconds,
              r.compute_seconds + r.exposed_communication_seconds + r.optimizer_seconds, 1e-12);
  // 2 x 4 x dp 4 = 32 samples per step: the TP peers share theirs.
  EXPECT_DOUBLE_EQ(r.tokens_per_second, 32.0 * 4096 / r.step_seconds);

  // With 8 GPUs per node every group is intra-node.
  SimCase one_node(LoadSampleConfig("folding-tp2-ep4.json"), 8, 8, "mixtral-8x7b.json");
  for (const CollectiveCall& call : EstimateStepTime(one_node.input).collectives) {
    EXPECT_FALSE(call.inter_node) << call.purpose;
  }
}

TEST(StepTimeTest, OverlapCommHidesGradientReductionBehindBackward) {
  // ZeRO-2, 16 GPUs on 2 nodes: the reduce-scatter runs every micro-step over the network.
  SimCase c(ParseJsonOrDie(R"({"zero_optimization": {"stage": 2}})"), 16, 8, "llama-3-8b.json");
  c.input.workload = {.seq_len = 4096, .micro_batch = 1, .grad_accum = 4};
  c.input.zero.overlap_comm = false;
  const TimeReport off = EstimateStepTime(c.input);
  c.input.zero.overlap_comm = true;
  const TimeReport on = EstimateStepTime(c.input);

  const CollectiveCall* rs_off = Find(off, "dp_grad_reduce", GroupKind::kDp);
  const CollectiveCall* rs_on = Find(on, "dp_grad_reduce", GroupKind::kDp);
  ASSERT_NE(rs_off, nullptr);
  ASSERT_NE(rs_on, nullptr);
  EXPECT_EQ(rs_on->kind, CollectiveKind::kReduceScatter);
  EXPECT_TRUE(rs_on->inter_node);
  EXPECT_EQ(rs_on->calls_per_step, 17 * 4);  // every micro-step
  EXPECT_DOUBLE_EQ(rs_off->seconds, rs_on->seconds);
  EXPECT_DOUBLE_EQ(rs_off->exposed_seconds, rs_off->seconds);
  // Hidden up to the backward compute, never below the last bucket.
  const double per_micro = rs_on->seconds / 4, bucket = rs_on->seconds / rs_on->calls_per_step;
  EXPECT_DOUBLE_EQ(rs_on->exposed_seconds,
                   4 * std::max(per_micro - on.backward_seconds_per_micro_step, bucket));
  EXPECT_NEAR(off.step_seconds - on.step_seconds, rs_off->exposed_seconds - rs_on->exposed_seconds,
              1e-12);
  EXPECT_LT(on.step_seconds, off.step_seconds);

  // ZeRO-0 reduces after backward whatever overlap_comm says.
  c.input.zero.stage = 0;
  const TimeReport z0 = EstimateStepTime(c.input);
  const CollectiveCall* ar = Find(z0, "dp_grad_reduce", GroupKind::kDp);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(ar->calls_per_step, 17);  // once, at the accumulation boundary
  EXPECT_DOUBLE_EQ(ar->exposed_seconds, ar->seconds);
}

TEST(StepTimeTest, Zero3PrefetchHidesGathersBehindCompute) {
  SimCase c(ParseJsonOrDie(R"({"zero_optimization": {"stage": 3}})"), 16, 8, "llama-3-8b.json");
  c.input.workload = {.seq_len = 4096, .micro_batch = 1, .grad_accum = 2};
  c.input.zero.overlap_comm = true;
  const TimeReport prefetch = EstimateStepTime(c.input);
  const CollectiveCall* fwd = Find(prefetch, "zero3_all_gather_fwd", GroupKind::kDp);
  const CollectiveCall* bwd = Find(prefetch, "zero3_all_gather_bwd", GroupKind::kDp);
  ASSERT_NE(fwd, nullptr);
  ASSERT_NE(bwd, nullptr);
  // One gather per module (q, k, v, o, gate, up, down) of each layer plus the embedding/head, per
  // micro-step: fetch_sub_module gathers a module's own parameters.
  EXPECT_EQ(fwd->calls_per_step, (7 * 32 + 1) * 2);
  EXPECT_TRUE(fwd->inter_node);
  EXPECT_LT(fwd->exposed_seconds, fwd->seconds);
  EXPECT_GE(fwd->exposed_seconds, fwd->seconds / fwd->calls_per_step * 2 - 1e-15);  // first layer
  EXPECT_EQ(Find(prefetch, "zero_param_all_gather", GroupKind::kDp), nullptr);

  c.input.zero.prefetch_bucket_size = 0;  // no prefetch: gathers sit on the critical path
  const TimeReport serial = EstimateStepTime(c.input);
  EXPECT_GT(serial.step_seconds, prefetch.step_seconds);
  // ... sharing the NICs with the reduce-scatters overlap_comm runs beside them (SharedLinkSeconds),
  // so they take longer than on their own, at most as long as both.
  const CollectiveCall* serial_fwd = Find(serial, "zero3_all_gather_fwd", GroupKind::kDp);
  const CollectiveCall* serial_bwd = Find(serial, "zero3_all_gather_bwd", GroupKind::kDp);
  const CollectiveCall* reduce = Find(serial, "dp_grad_reduce", GroupKind::kDp);
  ASSERT_NE(serial_fwd, nullptr);
  ASSERT_NE(serial_bwd, nullptr);
  ASSERT_NE(reduce, nullptr);
  // Forward has no overlapped traffic; backward's gathers share the NICs with the reduce-scatters
  // overlap_comm runs beside them (shared_links.h), so they take longer than on their own.
  EXPECT_DOUBLE_EQ(serial_fwd->exposed_seconds, fwd->seconds);
  EXPECT_GT(serial_bwd->exposed_seconds, serial_bwd->seconds);
  EXPECT_LT(serial_bwd->exposed_seconds, serial_bwd->seconds + reduce->seconds);
  c.input.zero.overlap_comm = false;  // reductions on the critical path too: nothing shares the link
  const CollectiveCall* alone = Find(EstimateStepTime(c.input), "zero3_all_gather_bwd", GroupKind::kDp);
  ASSERT_NE(alone, nullptr);
  EXPECT_DOUBLE_EQ(alone->exposed_seconds, alone->seconds);
}

TEST(StepTimeTest, UlyssesAllToAllsOnTheSpGroup) {
  SimCase c(LoadSampleConfig("autosp-sp4.json"), 8, 8, "llama-3-8b.json");
  c.input.workload = {.seq_len = 8192, .micro_batch = 1, .grad_accum = 2};
  const TimeReport r = EstimateStepTime(c.input);
  int entries = 0;
  double calls = 0;
  for (const CollectiveCall& call : r.collectives) {
    if (call.purpose != "ulysses_all_to_all") continue;
    ++entries;
    calls += call.calls_per_step;
    EXPECT_EQ(call.group, GroupKind::kSp);
    EXPECT_EQ(call.group_size, 4);
  }
  EXPECT_EQ(entries, 2);             // q/o and k/v buffers
  EXPECT_EQ(calls, 4 * 32 * 2 * 2);  // q, k, v, o; forward and backward; 2 micro-steps
  // Dense gradients reduce over sequence-data-parallel (all 8 ranks), samples over dp = 2.
  const CollectiveCall* dp = Find(r, "dp_grad_reduce", GroupKind::kSpDp);
  ASSERT_NE(dp, nullptr);
  EXPECT_EQ(dp->group_size, 8);
  EXPECT_DOUBLE_EQ(r.tokens_per_second, 1.0 * 2 * 2 * 8192 / r.step_seconds);
  EXPECT_DOUBLE_EQ(r.mfu, r.model_flops_per_step / (989e12 * r.step_seconds * 8));
}

// Forward seconds of the kernels outside the layers (embedding on the first stage, final norm,
// lm_head and cross-entropy on the last) on the test cluster.
double OutsideLayersForward(const ModelSpec& model, const ShardShape& shard, bool first, bool last) {
  std::vector<OperatorCost> ops;
  if (first) ops = EmbeddingForwardOperators(model, shard);
  if (last) {
    for (const OperatorCost& op : HeadForwardOperators(model, shard)) ops.push_back(op);
  }
  double t = 0;
  for (const OperatorCost& op : ops) t += std::max(op.flops / kMatmulRate, op.bytes / kHbmRate);
  return t;
}

TEST(StepTimeTest, FullRecomputeAddsAForward) {
  SimCase c(Zero1Dp8(), 8, 8, "llama-3-8b.json");
  const TimeReport none = EstimateStepTime(c.input);
  c.input.workload.recompute = Recompute::kFull;
  const TimeReport full = EstimateStepTime(c.input);
  // The layers run forward again; embedding and lm_head are outside the checkpointed layers.
  ShardShape shard;
  shard.seq_len = c.input.workload.seq_len;
  shard.hf_eager = true;  // the DeepSpeed engine trains transformers' modules
  const double outside = OutsideLayersForward(c.model, shard, true, true);
  EXPECT_NEAR(full.compute_seconds - none.compute_seconds,
              none.forward_seconds_per_micro_step - outside, 1e-12);
  EXPECT_DOUBLE_EQ(full.model_flops_per_step, none.model_flops_per_step);  // MFU excludes recompute
  EXPECT_LT(full.mfu, none.mfu);
  EXPECT_GT(full.hfu, full.mfu);
}

TEST(StepTimeTest, PipelineStagesSplitLayersAndAddTheBubble) {
  const Json config = ParseJsonOrDie(R"({"zero_optimization": {"stage": 1}})");
  SimCase flat(config, 8, 8, "llama-3-8b.json");
  SimCase piped(config, 8, 8, "llama-3-8b.json", /*pp=*/2);
  for (SimCase* c : {&flat, &piped}) c->input.workload.grad_accum = 8;
  const TimeReport f = EstimateStepTime(flat.input), p = EstimateStepTime(piped.input);
  // Half the layers per stage; the embedding sits on the first, the head on the last, which is
  // the slower one and sets the pace.
  ShardShape shard;
  shard.seq_len = flat.input.workload.seq_len;
  shard.hf_eager = true;
  const double embedding = OutsideLayersForward(flat.model, shard, true, false);
  const double head = OutsideLayersForward(flat.model, shard, false, true);
  EXPECT_NEAR(p.forward_seconds_per_micro_step - head,
              (f.forward_seconds_per_micro_step - head - embedding) / 2, 1e-12);
  // 1F1B with stage times t0 < t1: 8 micro-steps take 8 t1 + t0 (the fill and drain pass the
  // other stage once), so the bubble is t0, a little under one slot of the slow stage.
  const double slow = p.forward_seconds_per_micro_step + p.backward_seconds_per_micro_step;
  EXPECT_LT(p.pipeline_bubble_seconds, slow);
  EXPECT_GT(p.pipeline_bubble_seconds, 0.8 * slow);
  EXPECT_NEAR(p.step_seconds,
              8 * slow + p.pipeline_bubble_seconds + p.exposed_communication_seconds +
                  p.optimizer_seconds,
              1e-9);
  // dp halves, so do the samples per step.
  EXPECT_DOUBLE_EQ(p.tokens_per_second, 1.0 * 8 * 4 * 4096 / p.step_seconds);
}

// torchtitan and NeMo AutoModel call their pipeline schedule once per local batch
// (EngineSettings::pipeline_schedule_micro_batches): 16 micro-batches as 4 calls of 4 fill and
// drain the pipeline 4 times, so the bubble is 4 times the one-call bubble and every micro-step
// costs what it did (same stages, same collectives).
TEST(StepTimeTest, EachPipelineScheduleCallFillsAndDrainsThePipeline) {
  const Json config = ParseJsonOrDie(R"({"zero_optimization": {"stage": 3}})");
  SimCase one(config, 8, 8, "llama-3-8b.json", /*pp=*/4), four(config, 8, 8, "llama-3-8b.json", /*pp=*/4);
  for (SimCase* c : {&one, &four}) {
    c->input.workload.grad_accum = 16;
    c->input.engine.engine = Engine::kFsdp2;
    c->input.engine.virtual_stages = 2;
  }
  four.input.engine.pipeline_schedule_micro_batches = 4;
  EXPECT_EQ(four.input.engine.pipeline_schedule_calls(16), 4);
  EXPECT_EQ(one.input.engine.pipeline_schedule_calls(16), 1);
  const TimeReport a = EstimateStepTime(one.input), b = EstimateStepTime(four.input);
  ASSERT_GT(a.pipeline_bubble_seconds, 0);
  EXPECT_NEAR(b.pipeline_bubble_seconds, 4 * a.pipeline_bubble_seconds, 1e-12 * b.step_seconds);
  EXPECT_DOUBLE_EQ(b.compute_seconds, a.compute_seconds);
  // Each call's last backward runs FSDP's post_backward (torch.distributed.pipelining's
  // backward_maybe_with_nosync): the once-per-step reduce-scatter, and the gathers of the
  // parameters it reshards, run once per call, each against its own call's last backward.
  for (const char* purpose : {"fsdp_reduce_scatter", "fsdp_all_gather_fwd"}) {
    const CollectiveCall* x = Find(a, purpose, GroupKind::kDp);
    const CollectiveCall* y = Find(b, purpose, GroupKind::kDp);
    ASSERT_TRUE(x != nullptr && y != nullptr) << purpose;
    EXPECT_DOUBLE_EQ(y->calls_per_step, 4 * x->calls_per_step) << purpose;
    EXPECT_DOUBLE_EQ(y->seconds, 4 * x->seconds) << purpose;
    EXPECT_NEAR(y->exposed_seconds, 4 * x->exposed_seconds, 1e-12) << purpose;
  }
  EXPECT_NEAR(b.step_seconds - a.step_seconds,
              3 * a.pipeline_bubble_seconds + b.exposed_communication_seconds - a.exposed_communication_seconds,
              1e-9 * b.step_seconds);
  // One call of all 16 is the default.
  four.input.engine.pipeline_schedule_micro_batches = 16;
  EXPECT_DOUBLE_EQ(EstimateStepTime(four.input).step_seconds, a.step_seconds);
}

// With fewer micro-batches in a call than stages, interleaving cannot hide the fill: each chunk
// waits for the previous chunk's round trip (torch's ScheduleInterleaved1F1B, rounds of
// max(1, r / p)). For equal stages of time t a call takes p t + (r - 1) t / v, i.e. a bubble of
// (p - 1) t / v + (p - r) t (1 - 1 / v); one micro-batch a call gets nothing from interleaving.
TEST(StepTimeTest, InterleavingNeedsAMicroBatchForEveryStageOfACall) {
  const Json config = ParseJsonOrDie(R"({"zero_optimization": {"stage": 3}})");
  auto run = [&](int64_t per_call) {
    SimCase c(config, 8, 8, "llama-3-8b.json", /*pp=*/4);
    c.input.workload.grad_accum = 16;
    c.input.engine.engine = Engine::kFsdp2;
    c.input.engine.virtual_stages = 2;
    c.input.engine.pipeline_schedule_micro_batches = per_call;
    return EstimateStepTime(c.input);
  };
  const TimeReport whole = run(16), twos = run(2), ones = run(1);
  const double fill = whole.pipeline_bubble_seconds;  // (sum - max) / v
  // Calls of 2 on 4 stages: 8 x (fill + 2 t / 2), so t is what the slowest stage takes a micro-step.
  const double t = twos.pipeline_bubble_seconds / 8 - fill;
  EXPECT_GE(t, (whole.forward_seconds_per_micro_step + whole.backward_seconds_per_micro_step) * (1 - 1e-9));
  EXPECT_LE(t, whole.step_seconds / 16);
  // Calls of 1: 16 x (fill + 3 t / 2).
  EXPECT_NEAR(ones.pipeline_bubble_seconds, 16 * (fill + 1.5 * t), 1e-9 * ones.step_seconds);
}

// DeepSpeed's PipelineEngine runs TrainSchedule's instruction order (sim/cost/pipeline_makespan.h), its
// activations and gradients sent with blocking send/recv. Megatron-LM's 1F1B formula adds each
// stage's two transfers per micro-step to its time (bubble: sum - max of those); DeepSpeed's
// bubble is the schedule's idle time without transfers, and what the transfers add in the
// schedule is pp_send_recv's exposed time. With the last stage the slowest (llama-3-8b's
// 128,256-word lm_head sits there) the two bubbles differ by exactly the transfers Megatron's
// stages carry through the fill and drain; with an earlier stage the slowest (a 1,000-word
// vocabulary: 32 layers over 3 stages are 11, 11 and 10) DeepSpeed's order overlaps part of the
// fill, so its bubble is smaller still.
TEST(StepTimeTest, DeepSpeedPipelineBubbleFollowsTrainSchedule) {
  const Json config = ParseJsonOrDie(R"({"zero_optimization": {"stage": 1}})");
  for (const bool small_vocab : {false, true}) {
    SimCase ds(config, 6, 8, "llama-3-8b.json", /*pp=*/3), megatron(config, 6, 8, "llama-3-8b.json", /*pp=*/3);
    for (SimCase* c : {&ds, &megatron}) {
      c->input.workload.grad_accum = 8;
      if (small_vocab) c->model.vocab_size = 1000;
    }
    megatron.input.engine.engine = Engine::kMegatronLm;
    // The same modules on both (Megatron's), so the stages differ only by the schedule.
    ds.input.engine.transformers_modules = false;
    const TimeReport a = EstimateStepTime(ds.input), b = EstimateStepTime(megatron.input);
    // One transfer: Megatron-LM exposes two per micro-step (tp = 1: nothing to split).
    const double transfer = b.exposed_seconds_by_purpose.at("pp_send_recv") / (2 * 8);
    ASSERT_GT(transfer, 0);
    const double without_transfers = b.pipeline_bubble_seconds - (3 - 1) * 2 * transfer;
    if (small_vocab) {
      EXPECT_LT(a.pipeline_bubble_seconds, 0.97 * without_transfers);
      EXPECT_GT(a.pipeline_bubble_seconds, 0.9 * without_transfers);
    } else {
      EXPECT_NEAR(a.pipeline_bubble_seconds, without_transfers, 1e-9 * without_transfers);
    }
    // The transfers cost DeepSpeed's schedule at least what they cost one stage's micro-steps.
    EXPECT_GE(a.exposed_seconds_by_purpose.at("pp_send_recv"), 2 * 8 * transfer * (1 - 1e-12));
    EXPECT_NEAR(a.step_seconds,
                8 * (a.forward_seconds_per_micro_step + a.backward_seconds_per_micro_step) +
                    a.pipeline_bubble_seconds + a.exposed_communication_seconds + a.optimizer_seconds,
                1e-9 * a.step_seconds);
  }
}

TEST(StepTimeTest, MoreInterNodeBandwidthNeverSlowsTheStep) {
  struct Case {
    const char* config;
    int world, gpn;
    const char* model;
  };
  for (const Case& k : {Case{"folding-tp2-ep4.json", 8, 4, "mixtral-8x7b.json"},
                        Case{"autosp-sp4.json", 16, 8, "llama-3-8b.json"},
                        Case{"zero3-offload.json", 16, 4, "llama-3-8b.json"}}) {
    SimCase c(LoadSampleConfig(k.config), k.world, k.gpn, k.model);
    c.input.zero.overlap_comm = true;
    double previous = std::numeric_limits<double>::infinity();
    for (double busbw = 5e9; busbw <= 800e9; busbw *= 1.5) {
      c.cluster.inter_node.busbw_bytes_per_second = busbw;
      const double step = EstimateStepTime(c.input).step_seconds;
      EXPECT_LE(step, previous) << k.config << " at " << busbw;
      previous = step;
    }
  }
}

// Uneven key-value heads (module_inject/tp_shard.py get_shard_size): Llama-3-8B's 8 kv heads on
// tp=3 give tp ranks 0-1 3 kv heads (12 query heads) and rank 2 two. The busiest rank holds
// 12/32 of the attention weights, not 1/3, and computes 12 heads; MLP widths split by 3.
TEST(StepTimeTest, UnevenKvHeadsArePricedOnTheBusiestRank) {
  const Json tp3 = ParseJsonOrDie(R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                                     "zero_optimization": {"stage": 1},
                                     "tensor_parallel": {"autotp_size": 3}})");
  const Json tp4 = ParseJsonOrDie(R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                                     "zero_optimization": {"stage": 1},
                                     "tensor_parallel": {"autotp_size": 4}})");
  SimCase uneven(tp3, 6, 6, "llama-3-8b.json");
  uneven.input.workload.seq_len = 4096;
  EXPECT_DOUBLE_EQ(AttentionTpDivisor(uneven.input), 32.0 / 12.0);
  SimCase even(tp4, 8, 8, "llama-3-8b.json");
  EXPECT_EQ(AttentionTpDivisor(even.input), 0);
  // Parameters: attention over 32/12, the dense MLP over 3.
  EXPECT_DOUBLE_EQ(ShardDivisor(ParamFamily::kAttention, uneven.plan.sizes, VocabSplit::kNone,
                                AttentionTpDivisor(uneven.input)),
                   32.0 / 12.0);
  EXPECT_EQ(ShardDivisor(ParamFamily::kDenseMlp, uneven.plan.sizes), 3);
  // The q/k/v/o GEMMs and the attention core of one layer are 12/32 of the whole layer's, where
  // the even-split average would be 1/3.
  ShardShape whole;
  whole.seq_len = 4096;
  ShardShape busiest = whole;
  busiest.tp = 3;
  busiest.attention_tp = AttentionTpDivisor(uneven.input);
  ShardShape average = busiest;
  average.attention_tp = 0;
  auto flops_of = [&](const ShardShape& shard, std::string_view name) {
    double f = 0;
    for (const OperatorCost& op : LayerForwardOperators(uneven.model, 0, shard)) {
      if (op.name == name) f += op.flops;
    }
    return f;
  };
  for (const char* name : {"q_proj", "k_proj", "o_proj", "attention"}) {
    EXPECT_NEAR(flops_of(busiest, name) / flops_of(whole, name), 12.0 / 32.0, 1e-12) << name;
    EXPECT_NEAR(flops_of(average, name) / flops_of(whole, name), 1.0 / 3.0, 1e-12) << name;
  }
  EXPECT_NEAR(flops_of(busiest, "mlp_up") / flops_of(whole, "mlp_up"), 1.0 / 3.0, 1e-12);
}

// DeepCompile's one communicator (compile/init_z1_and_2.py dc.init over
// engine.data_parallel_group): AutoEP's expert gradients are reduced over dp, not edp.
TEST(StepTimeTest, DeepCompileReducesExpertGradientsOverDp) {
  Json config = ParseJsonOrDie(R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                                  "zero_optimization": {"stage": 1},
                                  "expert_parallel": {"enabled": true, "autoep_size": 4}})");
  SimCase eager(config, 8, 8, "mixtral-8x7b.json");
  eager.input.zero = ReadZeroSettings(config);
  EXPECT_NE(Find(EstimateStepTime(eager.input), "edp_grad_reduce", GroupKind::kEdp), nullptr);
  config["compile"] = {{"deepcompile", true}};
  SimCase compiled(config, 8, 8, "mixtral-8x7b.json");
  compiled.input.zero = ReadZeroSettings(config);
  const TimeReport r = EstimateStepTime(compiled.input);
  EXPECT_EQ(Find(r, "edp_grad_reduce", GroupKind::kEdp), nullptr);
  ASSERT_NE(Find(r, "dp_expert_grad_reduce", GroupKind::kDp), nullptr);
}

// DeepCompile's offload schedules run in place of prefetch (compile/init_z3.py), so each gather is
// issued before its reader and csrc/compile/z3.cpp allgatherParam makes the gather stream wait for
// the compute stream: nothing hides it. The default schedule's prefetch does.
TEST(StepTimeTest, DeepCompileOffloadSchedulesGatherOnTheCriticalPath) {
  auto exposed_gathers = [](bool offload) {
    Json config = ParseJsonOrDie(R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                                    "zero_optimization": {"stage": 3}, "compile": {"deepcompile": true}})");
    if (offload) config["compile"]["offload_opt_states"] = true;
    SimCase c(config, 8, 8, "llama-3-8b.json");
    c.input.zero = ReadZeroSettings(config);
    EXPECT_EQ(c.input.zero.deepcompile_gathers_in_place, offload);
    const TimeReport r = EstimateStepTime(c.input);
    const CollectiveCall* fwd = Find(r, "zero3_all_gather_fwd", GroupKind::kDp);
    const CollectiveCall* bwd = Find(r, "zero3_all_gather_bwd", GroupKind::kDp);
    EXPECT_NE(fwd, nullptr);
    EXPECT_NE(bwd, nullptr);
    const CollectiveCall* reduce = Find(r, "dp_grad_reduce", GroupKind::kDp);
    EXPECT_NE(reduce, nullptr);
    if (fwd == nullptr || bwd == nullptr || reduce == nullptr) return std::tuple{0.0, 0.0, 0.0};
    return std::tuple{fwd->exposed_seconds + bwd->exposed_seconds, fwd->seconds + bwd->seconds, reduce->seconds};
  };
  const auto [prefetched, total, reductions] = exposed_gathers(false);
  const auto [in_place, same_total, same_reductions] = exposed_gathers(true);
  EXPECT_DOUBLE_EQ(total, same_total);
  EXPECT_LT(prefetched, 0.5 * total);
  // Every gather exposed, backward's slowed by the gradient reductions that share NVLink with them.
  EXPECT_GT(in_place, total);
  EXPECT_LT(in_place, total + same_reductions);
}

}  // namespace
}  // namespace dsp::sim
