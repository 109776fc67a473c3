// SPDX-License-Identifier: Apache-2.0
#include "exec/launch/env.h"

#include <map>

#include <gtest/gtest.h>

namespace dsp::exec {
namespace {

Result<LaunchEnv> Parse(const std::map<std::string, std::string>& vars) {
  return ParseLaunchEnv([&](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

const std::map<std::string, std::string> kTorchrun = {
    {"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"MASTER_ADDR", "127.0.0.1"},
    {"MASTER_PORT", "29500"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "1"}};

TEST(LaunchEnvTest, ReadsWhatTorchrunSets) {
  auto env = Parse(kTorchrun);
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(env->rank, 2);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->local_rank, 2);
  EXPECT_EQ(env->master_addr, "127.0.0.1");
  EXPECT_EQ(env->master_port, 29500);
  EXPECT_TRUE(env->use_agent_store);
  // torch.distributed.rendezvous: PrefixStore(f"/worker/attempt_{restart_count}", store)
  EXPECT_EQ(env->StorePrefix(), "/worker/attempt_1");
}

TEST(LaunchEnvTest, ManualLaunchHasNoAgentStore) {
  auto vars = kTorchrun;
  vars.erase("TORCHELASTIC_USE_AGENT_STORE");
  vars.erase("TORCHELASTIC_RESTART_COUNT");
  vars.erase("LOCAL_RANK");
  auto env = Parse(vars);
  ASSERT_TRUE(env.ok());
  EXPECT_FALSE(env->use_agent_store);
  EXPECT_EQ(env->StorePrefix(), "");
  EXPECT_EQ(env->local_rank, 2) << "LOCAL_RANK defaults to RANK";
  // Only the exact string "True" means the agent store, as in rendezvous.py.
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  EXPECT_FALSE(Parse(vars)->use_agent_store);
}

TEST(LaunchEnvTest, MissingOrBadVariablesAreNamed) {
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
    auto vars = kTorchrun;
    vars.erase(name);
    auto env = Parse(vars);
    ASSERT_FALSE(env.ok()) << name;
    EXPECT_NE(env.error().message.find(std::string(name) + " is not set"), std::string::npos) << env.error().message;
    EXPECT_NE(env.error().message.find("torchrun"), std::string::npos) << "says how to launch";
  }
  auto vars = kTorchrun;
  vars["RANK"] = "4";
  auto env = Parse(vars);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.error().message.find("RANK=\"4\" is not an integer in 0..3"), std::string::npos) << env.error().message;
  vars = kTorchrun;
  vars["MASTER_PORT"] = "http";
  EXPECT_FALSE(Parse(vars).ok());
  vars = kTorchrun;
  vars["WORLD_SIZE"] = "0";
  EXPECT_FALSE(Parse(vars).ok());
}

}  // namespace
}  // namespace dsp::exec
