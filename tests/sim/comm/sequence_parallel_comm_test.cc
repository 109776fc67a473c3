// SPDX-License-Identifier: Apache-2.0
// PlanSequenceParallel: DeepSpeed-Ulysses' all-to-alls (arXiv 2309.14509 §3; DeepSpeed 0.19.6
// sequence/layer.py DistributedAttention): q, k, v and the output each way, K/V heads repeated up
// to sp (ulysses_sp.py kv_replication_factor).
#include "tests/sim/comm/comm_test_util.h"

namespace dsp::sim {
namespace {

using testing::CommCase;
using testing::Purposes;
using testing::Sizes;

TEST(SequenceParallelCommTest, UlyssesMovesQueriesAndKeyValueHeadsForwardAndBackward) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "sequence_parallel_size": 8, "bf16": {"enabled": true}})",
             Sizes(8, 8), "llama-3-8b.json");
  const auto planned = c.Run(PlanSequenceParallel);
  ASSERT_EQ(Purposes(planned), (std::vector<std::string>{"ulysses_all_to_all", "ulysses_all_to_all"}));
  const double tokens = 4096.0 / 8;
  EXPECT_DOUBLE_EQ(planned[0].call.bytes_per_call, tokens * 32 * 128 * 2);  // all 32 query heads
  EXPECT_DOUBLE_EQ(planned[1].call.bytes_per_call, tokens * 8 * 128 * 2);   // 8 KV heads
  EXPECT_DOUBLE_EQ(planned[0].calls_per_unit, 2 * 32 * 2.0);  // two per layer, forward and backward
  EXPECT_EQ(planned[0].call.group, GroupKind::kSp);
}

TEST(SequenceParallelCommTest, KeyValueHeadsAreRepeatedUpToTheGroupSize) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "sequence_parallel_size": 16, "bf16": {"enabled": true}})",
             Sizes(16, 8), "llama-3-8b.json");
  const auto planned = c.Run(PlanSequenceParallel);
  ASSERT_EQ(planned.size(), 2u);
  EXPECT_DOUBLE_EQ(planned[1].call.bytes_per_call, 4096.0 / 16 * 16 * 128 * 2);  // 8 heads repeated to 16
}

TEST(SequenceParallelCommTest, NoSequenceParallelismPlansNothing) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", Sizes(8, 8), "llama-3-8b.json");
  EXPECT_TRUE(c.Run(PlanSequenceParallel).empty());
}

}  // namespace
}  // namespace dsp::sim

namespace dsp::sim {
namespace {

using testing::CommCase;
using testing::Purposes;
using testing::Sizes;

PlanInputs ContextParallel8(int64_t cp) {
  PlanInputs in = Sizes(8, 8, 1, 1, RankLayout::kMegatron);
  in.cp = cp;
  return in;
}

// TransformerEngine's AttnFuncWithCPAndKVP2P (transformer_engine/pytorch/attention/
// dot_product_attention/context_parallel.py): cp - 1 ring steps per layer, each sending the KV
// chunk at hand; backward sends KV and dKV together.
TEST(SequenceParallelCommTest, MegatronContextParallelSendsKeyValueChunksAroundTheRing) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", ContextParallel8(4),
             "llama-3-8b.json", Engine::kMegatronLm);
  const auto planned = c.Run(PlanSequenceParallel);
  ASSERT_EQ(Purposes(planned), (std::vector<std::string>{"cp_kv_p2p_fwd", "cp_kv_p2p_bwd"}));
  const double kv = 4096.0 / 4 * 8 * 128 * 2 * 2;  // s/cp tokens, 8 KV heads of 128, K and V, bf16
  EXPECT_DOUBLE_EQ(planned[0].call.bytes_per_call, kv);
  EXPECT_DOUBLE_EQ(planned[0].calls_per_unit, 3 * 32);  // cp - 1 steps per layer
  EXPECT_EQ(planned[0].call.kind, CollectiveKind::kSendRecv);
  EXPECT_EQ(planned[0].schedule, CommSchedule::kForwardOverlap);
  EXPECT_DOUBLE_EQ(planned[1].call.bytes_per_call, 2 * kv);
  EXPECT_EQ(planned[1].call.group_size, 4);
}

// PyTorch's context_parallel with its default rotate method ALL_GATHER
// (torch/distributed/tensor/experimental/_context_parallel/_attention.py _ContextParallelOptions,
// torchtitan's context_parallel_rotate_method "allgather"): K and V gathered for the forward and
// for the backward, dK and dV sent back by the all-to-all rotater.
TEST(SequenceParallelCommTest, TorchContextParallelAllGathersKeysAndValues) {
  CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", ContextParallel8(4),
             "llama-3-8b.json", Engine::kFsdp2);
  const auto planned = c.Run(PlanSequenceParallel);
  ASSERT_EQ(Purposes(planned), (std::vector<std::string>{"cp_kv_all_gather", "cp_dkv_exchange"}));
  EXPECT_DOUBLE_EQ(planned[0].call.bytes_per_call, 4096.0 * 8 * 128 * 2 * 2);  // the whole sequence's K, V
  EXPECT_DOUBLE_EQ(planned[0].calls_per_unit, 2 * 32);
  EXPECT_EQ(planned[1].call.kind, CollectiveKind::kReduceScatter);
}

}  // namespace
}  // namespace dsp::sim

namespace dsp::sim {
namespace {

// Megatron-Core's --cp-comm-type a2a (TransformerEngine AttnFuncWithCPAndQKVOA2A): Ulysses'
// all-to-alls of q, k, v and the output, each TP rank moving its own heads, the key-value heads
// not replicated; allgather (AttnFuncWithCPAndKVAllGather) gathers K and V as PyTorch's does.
TEST(SequenceParallelCommTest, MegatronContextParallelCommTypes) {
  PlanInputs in = testing::Sizes(16, 8, 1, 2, RankLayout::kMegatron);
  in.cp = 4;
  testing::CommCase c(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", in, "llama-3-8b.json",
                      Engine::kMegatronLm);
  c.input.engine.cp_comm = ContextParallel::kAllToAll;
  const auto a2a = c.Run(PlanSequenceParallel);
  ASSERT_EQ(testing::Purposes(a2a), (std::vector<std::string>{"cp_qkvo_all_to_all", "cp_qkvo_all_to_all"}));
  const double tokens = 4096.0 / 4;
  EXPECT_DOUBLE_EQ(a2a[0].call.bytes_per_call, tokens * 32 / 2 * 128 * 2);  // this TP rank's 16 query heads
  EXPECT_DOUBLE_EQ(a2a[1].call.bytes_per_call, tokens * 8 / 2 * 128 * 2);   // its 4 key-value heads
  c.input.engine.cp_comm = ContextParallel::kAllGatherKv;
  EXPECT_EQ(testing::Purposes(c.Run(PlanSequenceParallel)),
            (std::vector<std::string>{"cp_kv_all_gather", "cp_dkv_exchange"}));
}

}  // namespace
}  // namespace dsp::sim
