// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "sim/cost/model_states.h"
#include "sim/cost/sim_input.h"

namespace dsp::sim {
namespace {

TEST(OptimizerStateTest, BytesPerParameterFollowTheOptimizer) {
  EXPECT_EQ(ReadOptimizerStateBytes(Json::parse(R"({})")), 12);
  EXPECT_EQ(ReadOptimizerStateBytes(Json::parse(R"({"optimizer": {"type": "AdamW"}})")), 12);
  EXPECT_EQ(ReadOptimizerStateBytes(Json::parse(R"({"optimizer": {"type": "OneBitLamb"}})")), 12);
  EXPECT_EQ(ReadOptimizerStateBytes(Json::parse(R"({"optimizer": {"type": "SGD", "params": {"lr": 0.1}}})")), 4);
  EXPECT_EQ(ReadOptimizerStateBytes(Json::parse(R"({"optimizer": {"type": "sgd", "params": {"momentum": 0.9}}})")), 8);
  EXPECT_EQ(ReadOptimizerStateBytes(Json::parse(R"({"optimizer": {"type": "Lion"}})")), 8);
}

TEST(OptimizerStateTest, SgdShrinksTheOptimizerStatesOnly) {
  // ZeRO paper accounting with K = 4 (plain SGD): 7.5B parameters on 64 GPUs at stage 1 keep
  // 2 + 2 bytes per parameter and 4/64 of the optimizer states.
  ZeroSettings z;
  z.stage = 1;
  const double psi = 7.5e9;
  ModelStateBytes adam = ModelStatesPerRank(psi, 64, z, MemoryConvention::kZeroPaper);
  ModelStateBytes sgd = ModelStatesPerRank(psi, 64, z, MemoryConvention::kZeroPaper, 4);
  EXPECT_DOUBLE_EQ(adam.optimizer_states_bytes, 12 * psi / 64);
  EXPECT_DOUBLE_EQ(sgd.optimizer_states_bytes, 4 * psi / 64);
  EXPECT_DOUBLE_EQ(sgd.parameters_bytes, adam.parameters_bytes);
  EXPECT_DOUBLE_EQ(sgd.gradients_bytes, adam.gradients_bytes);
}

}  // namespace
}  // namespace dsp::sim
