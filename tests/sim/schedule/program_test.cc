// SPDX-License-Identifier: Apache-2.0
// The program a sample config gives: tasks per micro-step, collectives both ways, gradient
// buckets where each ZeRO stage puts them, ZeRO-3 gathers and their prefetch window, recompute,
// the optimizer, and the refusals.
#include "sim/schedule/program.h"

#include <gtest/gtest.h>

#include <set>

#include "sim/schedule/simulator.h"
#include "sim/cost/step_time.h"
#include "tests/sim/schedule/schedule_test_util.h"

namespace dsp::sim::schedule {
namespace {

using testing::Count;
using testing::ScheduleCase;

bool IsGradBucket(const Task& t) { return t.name.find("grad bucket") != std::string::npos; }

TEST(ProgramTest, UlyssesAllToAllsRunBothWays) {
  ScheduleCase c("autosp-sp4.json", 8, 8, "llama-3-8b.json", 1, 4096, 2);
  const Program& p = c.program;
  EXPECT_EQ(p.micro_steps, 2);
  // 4 all-to-alls per layer forward and 4 backward, per micro-step.
  EXPECT_EQ(Count(p, [](const Task& t) { return t.collective && t.kind == CollectiveKind::kAllToAll; }),
            2 * 2 * 4 * 32);
  // The compute of micro 0 is the closed form's: both price each operator with KernelTimeOf
  // (sim/cost/kernel_time.h), forward and backward.
  double fwd = 0, bwd = 0;
  for (const Task& t : p.tasks) {
    if (t.collective || t.micro != 0) continue;
    (t.phase == Phase::kForward ? fwd : bwd) += t.phase == Phase::kOptimizer ? 0 : t.compute_seconds;
  }
  const TimeReport closed = EstimateStepTime(c.input());
  EXPECT_NEAR(fwd / closed.forward_seconds_per_micro_step, 1.0, 1e-6);
  EXPECT_NEAR(bwd / closed.backward_seconds_per_micro_step, 1.0, 1e-6);
  // ZeRO-1 without overlap_comm: the all-reduce buckets come after the last micro-step's backward.
  for (const Task& t : p.tasks) {
    if (IsGradBucket(t)) {
      EXPECT_EQ(t.micro, 1);
      EXPECT_EQ(t.kind, CollectiveKind::kAllReduce);
      EXPECT_EQ(t.group, GroupKind::kSpDp);
    }
  }
  EXPECT_GT(Count(p, IsGradBucket), 0);
  EXPECT_EQ(p.tasks.back().phase, Phase::kOptimizer);
}

double ClosedFormBytes(const TimeReport& r, std::string_view purpose) {
  double bytes = 0;
  for (const CollectiveCall& c : r.collectives) {
    if (c.purpose == purpose) bytes += c.bytes_per_call * c.calls_per_step;
  }
  return bytes;
}

// The schedule prices what the AutoEP graph moves and the closed form (sim/comm/comm_plan.cc) prices
// the rows DeepSpeed moves (auto_ep_layer.py AutoEPMoELayer.forward: dispatch and combine both
// carry the [B*S*K, H] routed rows; ep_tp_dispatch.py restore_combined gathers all of them over
// tp): per step they agree byte for byte, plain and folded.
TEST(ProgramTest, AutoEpBytesAgreeWithTheClosedForm) {
  for (int64_t tp : {1, 2}) {
    Json config = Json::parse(R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
      "bf16": {"enabled": true}, "zero_optimization": {"stage": 1},
      "expert_parallel": {"enabled": true, "autoep_size": 4, "preset_model": "mixtral"}})");
    if (tp > 1) config["tensor_parallel"] = {{"autotp_size", tp}, {"preset_model", "mixtral"}};
    ScheduleCase c(ScheduleCase::InlineConfig{config}, 8, 8, "mixtral-8x7b.json", 2, 4096, 2);
    double a2a = 0, restore_gather = 0, restore_reduce = 0;
    for (const Task& t : c.program.tasks) {
      if (!t.collective) continue;
      if (t.kind == CollectiveKind::kAllToAll && t.group == GroupKind::kEp) a2a += t.bytes;
      if (t.name.find("restore") == std::string::npos) continue;
      (t.kind == CollectiveKind::kAllGather ? restore_gather : restore_reduce) += t.bytes;
    }
    const TimeReport r = EstimateStepTime(c.input());
    const double closed = ClosedFormBytes(r, "ep_dispatch") + ClosedFormBytes(r, "ep_combine");
    ASSERT_GT(closed, 0) << "tp " << tp;
    EXPECT_NEAR(a2a / closed, 1.0, 1e-9) << "tp " << tp;
    // 2 micro-steps x 32 layers x (dispatch + combine) x (forward + backward) of B*S*K/T rows.
    EXPECT_DOUBLE_EQ(a2a, 2.0 * 32 * 2 * 2 * (2.0 * 4096 * 2 / tp) * 4096 * 2) << "tp " << tp;
    EXPECT_DOUBLE_EQ(restore_gather, ClosedFormBytes(r, "fold_restore_all_gather")) << "tp " << tp;
    EXPECT_DOUBLE_EQ(restore_reduce, ClosedFormBytes(r, "fold_restore_backward_all_reduce")) << "tp " << tp;
  }
}

// DeepCompile's ZeRO (z1.cpp / z2.cpp, 0.19.6): gradient buckets are all-reduced inside the
// backward graph, ZeRO-1 in the boundary micro-step only, ZeRO-2 in every micro-step.
TEST(ProgramTest, DeepCompileZeroAllReducesInsideBackward) {
  for (int stage : {1, 2}) {
    Json config = Json::parse(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
                                  "compile": {"deepcompile": true}})");
    config["zero_optimization"] = {{"stage", stage}};
    ScheduleCase c(ScheduleCase::InlineConfig{config}, 8, 8, "llama-3-8b.json", 1, 2048, 3);
    std::set<int> micros;
    int buckets = 0;
    for (const Task& t : c.program.tasks) {
      if (!IsGradBucket(t)) continue;
      ++buckets;
      micros.insert(t.micro);
      EXPECT_EQ(t.kind, CollectiveKind::kAllReduce) << "stage " << stage;
      EXPECT_EQ(t.phase, Phase::kBackward) << "stage " << stage << ": " << t.name;
    }
    EXPECT_GT(buckets, 0);
    const std::set<int> expected = stage == 1 ? std::set<int>{2} : std::set<int>{0, 1, 2};
    EXPECT_EQ(micros, expected) << "stage " << stage;
  }
}

// AutoTP from transformers' plan marks Qwen3's q_norm/k_norm replicated_with_grad_allreduce:
// each gets a hook (auto_tp.py register_replicated_grad_hooks) that sums its gradient over tp
// with a blocking all-reduce every micro-step, before the DP reduction. The closed form counts
// the same calls (comm_plan's tp_qk_norm_grad_allreduce).
TEST(ProgramTest, GradAllreduceHooksRunEveryMicroStepOnTheComputeStream) {
  Json config = Json::parse(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
                                "zero_optimization": {"stage": 1}, "tensor_parallel": {"autotp_size": 2}})");
  ScheduleCase c(ScheduleCase::InlineConfig{config}, 8, 8, "qwen3-8b.json", 1, 2048, 3);
  std::set<int> micros;
  int hooks = 0;
  for (const Task& t : c.program.tasks) {
    if (t.name.find("grad_allreduce hook") == std::string::npos) continue;
    ++hooks;
    micros.insert(t.micro);
    EXPECT_EQ(t.kind, CollectiveKind::kAllReduce);
    EXPECT_EQ(t.group, GroupKind::kTp);
    EXPECT_EQ(t.phase, Phase::kBackward);
    EXPECT_DOUBLE_EQ(t.bytes, 2.0 * 128);  // head_dim bf16
  }
  EXPECT_EQ(hooks, 2 * 36 * 3);
  EXPECT_EQ(micros, (std::set<int>{0, 1, 2}));
  // The graph: the DP reduction reads the hook's result.
  const graph::Node* hook = c.graph.Find("tp_grad_allreduce_layers_0_self_attn_k_norm_weight");
  ASSERT_NE(hook, nullptr);
  ASSERT_EQ(hook->users.size(), 1u);
  EXPECT_EQ(hook->users.front()->name, "reduce_grad_layers_0_self_attn_k_norm_weight");
  const TimeReport closed = EstimateStepTime(c.input());
  double calls = 0;
  for (const CollectiveCall& call : closed.collectives) {
    if (call.purpose == "tp_qk_norm_grad_allreduce") calls = call.calls_per_step;
  }
  EXPECT_EQ(calls, 2 * 36 * 3);
  // A model without q/k norms, or a preset (no grad_allreduce spec), has none.
  config["tensor_parallel"]["preset_model"] = "qwen2";
  ScheduleCase preset(ScheduleCase::InlineConfig{config}, 8, 8, "qwen3-8b.json", 1, 2048, 3);
  EXPECT_EQ(Count(preset.program, [](const Task& t) { return t.name.find("grad_allreduce hook") != std::string::npos; }), 0);
}

TEST(ProgramTest, ZeroTwoReducesEveryMicroStepAndGathersAfterTheStep) {
  ScheduleCase c("autotp-layer-specs.json", 8, 8, "llama-3-8b.json", 1, 4096, 2);
  const Program& p = c.program;
  int per_micro[2] = {0, 0};
  for (const Task& t : p.tasks) {
    if (IsGradBucket(t)) {
      EXPECT_EQ(t.kind, CollectiveKind::kReduceScatter);
      ++per_micro[t.micro];
    }
  }
  EXPECT_GT(per_micro[0], 0);
  EXPECT_EQ(per_micro[0], per_micro[1]);
  // Without overlap_comm ZeRO-2 reduces inside the backward hooks: on the compute stream.
  for (const Task& t : p.tasks) {
    if (IsGradBucket(t)) {
      EXPECT_EQ(t.stream, kComputeStream);
    }
  }
  EXPECT_GT(Count(p, [](const Task& t) { return t.phase == Phase::kOptimizer && t.kind == CollectiveKind::kAllGather &&
                                                t.collective; }),
            0);
  // One copy_to_tp backward all-reduce and one reduce_from_tp forward all-reduce per block.
  EXPECT_EQ(Count(p, [](const Task& t) { return t.collective && t.group == GroupKind::kTp; }), 2 * 2 * 2 * 32);
}

// overlap_comm moves the ZeRO-2 buckets to the dp stream, where they hide behind backward.
TEST(ProgramTest, OverlapCommHidesZeroTwoReductions) {
  ScheduleCase c("autotp-layer-specs.json", 16, 8, "llama-3-8b.json", 1, 4096, 1);
  auto off = Simulate(c.program, c.input());
  c.sim->input.zero.overlap_comm = true;
  auto program = BuildProgram(c.graph, c.input());
  ASSERT_TRUE(program.ok());
  for (const Task& t : program->tasks) {
    if (IsGradBucket(t)) {
      EXPECT_EQ(t.stream, ReduceStreamOf(GroupKind::kDp));
    }
  }
  auto on = Simulate(*program, c.input());
  ASSERT_TRUE(off.ok() && on.ok());
  EXPECT_LT(on->step_seconds, off->step_seconds);
}

TEST(ProgramTest, ZeroThreeGathersForwardAndBackwardWithinThePrefetchWindow) {
  ScheduleCase c("zero3-offload.json", 16, 8, "llama-3-70b.json", 1, 4096, 1);
  const Program& p = c.program;
  // 80 layers x 7 matrices + embedding + lm_head are above the persistence threshold.
  const int gathered = 80 * 7 + 2;
  EXPECT_EQ(Count(p, [](const Task& t) { return t.name.starts_with("fwd allgather_"); }), gathered);
  EXPECT_EQ(Count(p, [](const Task& t) { return t.name.starts_with("bwd allgather_"); }), gathered);
  // A gather is issued ahead of its reader (prefetch), after an earlier module's compute.
  for (const Task& t : p.tasks) {
    if (t.name == "fwd allgather_layers_40_self_attn_q_proj_weight") {
      ASSERT_EQ(t.deps.size(), 1u);
      EXPECT_TRUE(p.tasks[static_cast<size_t>(t.deps[0])].name.starts_with("fwd layers_"));
      EXPECT_GT(t.alloc_at_start, 0);
    }
  }
  EXPECT_EQ(p.tasks.back().name, "optimizer step (CPU offload)");
}

// Eager ZeRO-3's hooks: each gather waits for the host's work on that module, on the gather's own
// stream (program_passes.cc AddCollective; the closed form adds the same seconds to each gather
// call: zero_gather_comm.cc).
TEST(ProgramTest, ZeroThreeHostFetchHoldsTheGatherStreamBeforeEachGather) {
  ScheduleCase c("zero3-offload.json", 16, 8, "llama-3-70b.json", 1, 4096, 1);
  EXPECT_EQ(Count(c.program, [](const Task& t) { return t.name.starts_with("host fetch "); }), 0);
  c.sim->cluster.host.zero3_fetch_seconds = 1e-3;
  auto p = BuildProgram(c.graph, c.input());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(Count(*p, [](const Task& t) { return t.name.starts_with("host fetch "); }), 2 * (80 * 7 + 2));
  int checked = 0;
  for (const Task& t : p->tasks) {
    if (!t.name.starts_with("fwd allgather_") && !t.name.starts_with("bwd allgather_")) continue;
    ASSERT_EQ(t.deps.size(), 1u) << t.name;
    const Task& host = p->tasks[static_cast<size_t>(t.deps[0])];
    EXPECT_TRUE(host.name.starts_with("host fetch ")) << t.name;
    EXPECT_EQ(host.stream, t.stream) << t.name;
    EXPECT_FALSE(host.collective);
    EXPECT_DOUBLE_EQ(host.compute_seconds, 1e-3);
    ++checked;
  }
  EXPECT_EQ(checked, 2 * (80 * 7 + 2));
  auto slower = Simulate(*p, c.input());
  auto before = Simulate(c.program, c.input());
  ASSERT_TRUE(slower.ok() && before.ok());
  EXPECT_GT(slower->step_seconds, before->step_seconds);
  // DeepCompile gathers from the compiled graph: no hooks.
  c.sim->input.zero.deepcompile = true;
  auto compiled = BuildProgram(c.graph, c.input());
  ASSERT_TRUE(compiled.ok());
  EXPECT_EQ(Count(*compiled, [](const Task& t) { return t.name.starts_with("host fetch "); }), 0);
}

TEST(ProgramTest, FullRecomputeRerunsEachLayerBeforeItsBackward) {
  ScheduleCase c("autosp-sp4.json", 8, 8, "llama-3-8b.json", 1, 4096, 1);
  c.sim->input.workload.recompute = Recompute::kFull;
  auto p = BuildProgram(c.graph, c.input());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(Count(*p, [](const Task& t) { return t.name.starts_with("recompute layer "); }), 32);
}

// ZeRO-0: the engine all-reduces every gradient after the backward (engine.py
// allreduce_gradients), in reduce_bucket_size pieces: 2 bytes x every parameter (issue 16: the
// schedule used to print "communication none" for plain data parallelism).
TEST(ProgramTest, ZeroZeroAllReducesEveryGradient) {
  ScheduleCase c(ScheduleCase::InlineConfig{dsp::testing::ParseJsonOrDie(
                     R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 0}})")},
                 8, 8, "llama-3-8b.json", 1, 4096, 1);
  double bytes = 0;
  int calls = 0;
  for (const Task& t : c.program.tasks) {
    if (t.collective && t.kind == CollectiveKind::kAllReduce && t.group == GroupKind::kDp) {
      bytes += t.bytes;
      ++calls;
    }
  }
  EXPECT_EQ(calls, 17);  // ceil(8.03e9 / 5e8) buckets
  EXPECT_NEAR(bytes, 2 * 8'030'261'248.0, 1);
}

TEST(ProgramTest, RefusesPipelineParallelism) {
  dsp::testing::SimCase pp(Json::parse(R"({"train_batch_size": 8})"), 8, 8, "tiny-llama.json", 2);
  auto g = graph::BuildModelGraph(pp.model);
  ASSERT_TRUE(g.ok());
  auto p = BuildProgram(*g, pp.input);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("pipeline parallelism (pp > 1) is not simulated"), std::string::npos);
}

}  // namespace
}  // namespace dsp::sim::schedule
