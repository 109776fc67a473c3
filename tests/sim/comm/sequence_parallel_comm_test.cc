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
