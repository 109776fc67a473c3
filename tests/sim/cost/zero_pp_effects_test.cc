// SPDX-License-Identifier: Apache-2.0
// ZeRO settings beyond the stage reach the cost model the way DeepSpeed's source implies
// (DeepSpeed 0.19.6): ZeRO++ (qwZ, hpZ, qgZ; Wang et al. 2023), MiCS, sub_group_size,
// round_robin_gradients and the offload buffers' pin_memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim/comm/comm_plan.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/offload_time.h"
#include "sim/cost/step_time.h"
#include "tests/sim/cost/time_test_util.h"

namespace dsp::sim {
namespace {

using testing::ParseJsonOrDie;
using testing::SimCase;

constexpr double kPsi = 8'030'261'248;  // Llama-3-8B
constexpr double kNorms = 65.0 * 4096;  // below stage3_param_persistence_threshold: never partitioned

const CollectiveCall* Find(const TimeReport& r, std::string_view purpose) {
  for (const CollectiveCall& c : r.collectives) {
    if (c.purpose == purpose) return &c;
  }
  return nullptr;
}

// A config on 16 ranks, two nodes of 8, read the way simulate reads it.
struct Case : SimCase {
  explicit Case(const char* json, int world = 16) : SimCase(ParseJsonOrDie(json), world, 8, "llama-3-8b.json") {
    input.zero = ReadZeroSettings(ParseJsonOrDie(json), DeepSpeedVersion::Newest());
  }
};

// qwZ: every parameter gather moves int8 values plus one fp32 scale per group of at most 8000
// (partition_parameters.py _all_gather_coalesced, CUDAQuantizer.quantize).
TEST(ZeroPlusPlusTest, QuantizedWeightsHalveTheGatheredBytes) {
  Case plain(R"({"zero_optimization": {"stage": 3}})");
  Case qwz(R"({"zero_optimization": {"stage": 3, "zero_quantized_weights": true}})");
  ASSERT_TRUE(qwz.input.zero.quantized_weights);
  const TimeReport a = EstimateStepTime(plain.input), b = EstimateStepTime(qwz.input);
  for (const char* purpose : {"zero3_all_gather_fwd", "zero3_all_gather_bwd"}) {
    ASSERT_NE(Find(a, purpose), nullptr);
    ASSERT_NE(Find(b, purpose), nullptr);
    EXPECT_DOUBLE_EQ(Find(b, purpose)->bytes_per_call / Find(a, purpose)->bytes_per_call, (1 + 4.0 / 8000) / 2);
    // Across two nodes the halved bytes outweigh the quantization kernels.
    EXPECT_LT(Find(b, purpose)->seconds, Find(a, purpose)->seconds);
  }
  // Stages 1 and 2 never see it (engine.py hands ZeRO++ to the stage-3 optimizer only).
  Case stage2(R"({"zero_optimization": {"stage": 2, "zero_quantized_weights": true}})");
  EXPECT_FALSE(stage2.input.zero.quantized_weights);
}

// hpZ: a secondary 1/hpz partition of the 16-bit parameters on every rank, which every gather
// after the step's first forward reads inside its block of consecutive ranks.
TEST(ZeroPlusPlusTest, HierarchicalPartitionTradesMemoryForIntraNodeGathers) {
  Case plain(R"({"zero_optimization": {"stage": 3}})");
  Case hpz(R"({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8}})");
  for (Case* c : {&plain, &hpz}) c->input.workload.grad_accum = 4;
  const MemoryReport m0 = EstimateMemory(plain.input), m1 = EstimateMemory(hpz.input);
  EXPECT_NEAR(m1.hpz_secondary_bytes, 2 * (kPsi - kNorms) / 8, 1);
  EXPECT_NEAR(m1.parameters_bytes - m0.parameters_bytes, m1.hpz_secondary_bytes, 1);
  const TimeReport a = EstimateStepTime(plain.input), b = EstimateStepTime(hpz.input);
  // The primary gather over all 16 ranks: the first forward of the step only.
  EXPECT_DOUBLE_EQ(Find(b, "zero3_all_gather_fwd")->calls_per_step, Find(a, "zero3_all_gather_fwd")->calls_per_step / 4);
  EXPECT_TRUE(Find(b, "zero3_all_gather_fwd")->inter_node);
  for (const char* purpose : {"hpz_all_gather_fwd", "hpz_all_gather_bwd"}) {
    const CollectiveCall* c = Find(b, purpose);
    ASSERT_NE(c, nullptr) << purpose;
    EXPECT_EQ(c->group_size, 8);
    EXPECT_FALSE(c->inter_node);
  }
  EXPECT_DOUBLE_EQ(Find(b, "hpz_all_gather_fwd")->calls_per_step,
                   Find(a, "zero3_all_gather_fwd")->calls_per_step * 3 / 4);
  EXPECT_EQ(Find(b, "zero3_all_gather_bwd"), nullptr);
  // Less time in gathers (the test cluster's network, 8 rails of 48 GB/s, is almost as fast as
  // NVLink: the win is the latency of 8-rank rings); prefetching hides them either way, so the
  // step is no slower.
  auto gather_seconds = [](const TimeReport& r) {
    double s = 0;
    for (const CollectiveCall& c : r.collectives) {
      if (c.kind == CollectiveKind::kAllGather) s += c.seconds;
    }
    return s;
  };
  EXPECT_LT(gather_seconds(b), gather_seconds(a));
  EXPECT_LE(b.step_seconds, a.step_seconds);
}

// qgZ: int4 all-to-all inside each node, then across nodes (all_to_all_quant_reduce); on one node
// stage3.py keeps the reduce-scatter.
TEST(ZeroPlusPlusTest, QuantizedGradientsReplaceTheReduceScatterAcrossNodes) {
  Case qgz(R"({"zero_optimization": {"stage": 3, "zero_quantized_gradients": true}})");
  const TimeReport t = EstimateStepTime(qgz.input);
  EXPECT_EQ(Find(t, "dp_grad_reduce"), nullptr);
  const CollectiveCall* intra = Find(t, "qgz_intra_node_all_to_all");
  const CollectiveCall* inter = Find(t, "qgz_inter_node_all_to_all");
  ASSERT_NE(intra, nullptr);
  ASSERT_NE(inter, nullptr);
  EXPECT_EQ(intra->group_size, 8);
  EXPECT_FALSE(intra->inter_node);
  EXPECT_EQ(inter->group_size, 2);
  EXPECT_TRUE(inter->inter_node);
  const double buckets = std::ceil(kPsi / 5e8);
  EXPECT_DOUBLE_EQ(intra->calls_per_step, buckets);
  EXPECT_NEAR(intra->bytes_per_call, 0.5 * kPsi / buckets, 1);   // int4
  EXPECT_NEAR(inter->bytes_per_call, intra->bytes_per_call / 8, 1);
  Case one_node(R"({"zero_optimization": {"stage": 3, "zero_quantized_gradients": true}})", 8);
  const TimeReport single = EstimateStepTime(one_node.input);
  EXPECT_NE(Find(single, "dp_grad_reduce"), nullptr);
  EXPECT_EQ(Find(single, "qgz_intra_node_all_to_all"), nullptr);
}

// MiCS: model states over the shard group, replicated across groups; gathers inside the group,
// the shard's gradients all-reduced across replicas at the boundary (mics.py).
TEST(ZeroPlusPlusTest, MicsShardsStatesWithinTheShardGroup) {
  Case mics(R"({"zero_optimization": {"stage": 3, "mics_shard_size": 8}})");
  Case plain(R"({"zero_optimization": {"stage": 3}})");
  const MemoryReport m = EstimateMemory(mics.input), p = EstimateMemory(plain.input);
  EXPECT_EQ(m.zero_group_size, 8);
  EXPECT_NEAR(m.optimizer_states_bytes, 12 * kPsi / 8, 1);
  EXPECT_NEAR(m.optimizer_states_bytes, 2 * p.optimizer_states_bytes, 1);
  const TimeReport t = EstimateStepTime(mics.input);
  for (const char* purpose : {"zero3_all_gather_fwd", "mics_grad_reduce_scatter"}) {
    ASSERT_NE(Find(t, purpose), nullptr) << purpose;
    EXPECT_EQ(Find(t, purpose)->group_size, 8);
    EXPECT_FALSE(Find(t, purpose)->inter_node);
  }
  const CollectiveCall* replicas = Find(t, "mics_grad_replica_all_reduce");
  ASSERT_NE(replicas, nullptr);
  EXPECT_EQ(replicas->group_size, 2);
  EXPECT_TRUE(replicas->inter_node);
  const double buckets = std::ceil(kPsi / 5e8);
  EXPECT_NEAR(replicas->bytes_per_call * replicas->calls_per_step, 2 * kPsi / 8, 1);
  EXPECT_DOUBLE_EQ(replicas->calls_per_step, buckets);  // once per step, not per micro-step
}

// The optimizer step's own peak: stage3.py flattens one sub group's gradients and casts them to
// fp32 (_prepare_fp32_grad_for_sub_group); stage_1_and_2.py casts the whole partition.
TEST(ZeroSettingsEffectTest, OptimizerStepCastsSubGroupsOrTheWholePartition) {
  Case z3(R"({"zero_optimization": {"stage": 3}})", 8);
  const double partition = kPsi / 8;
  EXPECT_NEAR(EstimateMemory(z3.input).optimizer_step_transient_bytes, (2 + 4) * std::min(partition, 1e9), 1);
  Case small(R"({"zero_optimization": {"stage": 3, "sub_group_size": 1e8}})", 8);
  EXPECT_NEAR(EstimateMemory(small.input).optimizer_step_transient_bytes, 6e8, 1);
  Case z1(R"({"zero_optimization": {"stage": 1}})", 8);
  const MemoryReport m1 = EstimateMemory(z1.input);
  EXPECT_NEAR(m1.optimizer_step_transient_bytes, 4 * partition, 1);
  EXPECT_GE(m1.peak_bytes, m1.optimizer_step_peak_bytes);
  // fp32 gradients need no cast.
  z1.input.workload.gradient_bytes_per_element = 4;
  EXPECT_EQ(EstimateMemory(z1.input).optimizer_step_transient_bytes, 0);
  // Offloaded optimizers step on the host.
  Case off(R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}})", 8);
  EXPECT_EQ(EstimateMemory(off.input).optimizer_step_transient_bytes, 0);
}

// ZeRO-Offload at stages 1/2 moves the rank's gradients through host memory every micro-step
// (stage_1_and_2.py copy_grads_in_partition: 2g copies with g >= 2); round_robin_gradients spreads
// a rank's share over the whole backward instead of 1/dp of it.
TEST(ZeroSettingsEffectTest, RoundRobinGradientsSpreadsOffloadCopiesOverTheBackward) {
  const char* base = R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})";
  Case plain(base, 8);
  Case rr(R"({"zero_optimization": {"stage": 2, "round_robin_gradients": true,
              "offload_optimizer": {"device": "cpu"}}})", 8);
  ASSERT_TRUE(rr.input.zero.round_robin_gradients);
  for (Case* c : {&plain, &rr}) {
    c->input.workload.grad_accum = 4;
    c->cluster.cpu_optimizer_params_per_second = 5e8;
  }
  const double copy = 2 * kPsi / 8 / 55e9;  // bf16 gradients over the test cluster's PCIe
  const double backward = 0.2, window = backward / 8;
  const double expected = std::max(0.0, copy - window) + 2 * std::max(0.0, 2 * copy - window) +
                          std::max(0.0, 3 * copy - window);
  EXPECT_NEAR(EstimateOffloadTime(plain.input, 0.1, backward).gradients_to_host_seconds, expected, 1e-12);
  EXPECT_EQ(EstimateOffloadTime(rr.input, 0.1, backward).gradients_to_host_seconds, 0);  // 3 copies < 0.2 s
  // Stage 3 reads neither the flag nor the per-micro-step path.
  Case z3(R"({"zero_optimization": {"stage": 3, "round_robin_gradients": true}})", 8);
  EXPECT_FALSE(z3.input.zero.round_robin_gradients);
}

// pin_memory: pinned host buffers let copies overlap compute; a copy to pageable memory returns
// only when done (CUDA Runtime API, "API synchronization behavior"). Default true from 0.19.5.
TEST(ZeroSettingsEffectTest, UnpinnedOffloadBuffersExposeEveryCopy) {
  const Json config = ParseJsonOrDie(R"({"zero_optimization": {"stage": 2, "round_robin_gradients": true,
      "offload_optimizer": {"device": "cpu", "pin_memory": false}}})");
  EXPECT_FALSE(ReadZeroSettings(config, DeepSpeedVersion::Newest()).optimizer_pin_memory);
  const Json defaults = ParseJsonOrDie(R"({"zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}})");
  EXPECT_TRUE(ReadZeroSettings(defaults, DeepSpeedVersion{0, 19, 5}).optimizer_pin_memory);
  EXPECT_FALSE(ReadZeroSettings(defaults, DeepSpeedVersion{0, 19, 4}).optimizer_pin_memory);
  EXPECT_FALSE(ReadZeroSettings(defaults, DeepSpeedVersion{0, 19, 4}).param_pin_memory);
  SimCase c(config, 8, 8, "llama-3-8b.json");
  c.input.zero = ReadZeroSettings(config, DeepSpeedVersion::Newest());
  c.input.workload.grad_accum = 4;
  c.cluster.cpu_optimizer_params_per_second = 5e8;
  const double copy = 2 * kPsi / 8 / 55e9;
  // Eight copies, each at the pageable rate (the cluster's default: PCIe / 6), none hidden.
  EXPECT_NEAR(EstimateOffloadTime(c.input, 0.1, 10.0).gradients_to_host_seconds, 8 * copy * 6, 1e-9);
  c.input.zero.optimizer_pin_memory = true;
  EXPECT_EQ(EstimateOffloadTime(c.input, 0.1, 10.0).gradients_to_host_seconds, 0);
}

// The node's ranks run CPU Adam on one host at once (DeepSpeed's launcher leaves OMP_NUM_THREADS
// unset): with a node rate a rank gets min(its own rate, node rate / ranks on the node).
TEST(ZeroSettingsEffectTest, CpuAdamSharesTheNodesHost) {
  const Json config = ParseJsonOrDie(R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}})");
  SimCase c(config, 8, 8, "llama-3-8b.json");
  c.input.zero = ReadZeroSettings(config, DeepSpeedVersion::Newest());
  c.cluster.cpu_optimizer_params_per_second = 5e8;
  const double alone = EstimateOffloadTime(c.input, 1.0, 1.0).cpu_optimizer_seconds;
  EXPECT_NEAR(alone, kPsi / 8 / 5e8, 1e-9);
  c.cluster.cpu_optimizer_node_params_per_second = 8e8;  // 1e8 each for the node's 8 ranks
  EXPECT_NEAR(EstimateOffloadTime(c.input, 1.0, 1.0).cpu_optimizer_seconds, kPsi / 8 / 1e8, 1e-9);
  c.cluster.cpu_optimizer_node_params_per_second = 8e9;  // faster than one rank's own rate
  EXPECT_NEAR(EstimateOffloadTime(c.input, 1.0, 1.0).cpu_optimizer_seconds, alone, 1e-9);
  // A world of 4 on a node of 8: four ranks share the host.
  SimCase half(config, 4, 8, "llama-3-8b.json");
  half.input.zero = c.input.zero;
  half.cluster.cpu_optimizer_params_per_second = 5e8;
  half.cluster.cpu_optimizer_node_params_per_second = 8e8;
  EXPECT_NEAR(EstimateOffloadTime(half.input, 1.0, 1.0).cpu_optimizer_seconds, kPsi / 4 / 2e8, 1e-9);
}

}  // namespace
}  // namespace dsp::sim
