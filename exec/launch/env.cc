// SPDX-License-Identifier: Apache-2.0
#include "exec/launch/env.h"

#include <charconv>
#include <cstdlib>

namespace dsp::exec {
namespace {

constexpr const char* kHowToLaunch =
    " (start ds-plan run under torchrun, e.g. scripts/torchrun --nproc_per_node 4 --no_python "
    "ds-plan run CONFIG, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT yourself)";

Result<int> ParseInt(const std::string& name, const std::string& text, int min, int max) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return Error{name + "=\"" + text + "\" is not an integer in " + std::to_string(min) + ".." +
                 std::to_string(max)};
  }
  return value;
}

}  // namespace

std::string LaunchEnv::StorePrefix() const {
  return use_agent_store ? "/worker/attempt_" + std::to_string(restart_count) : "";
}

Result<LaunchEnv> ParseLaunchEnv(const std::function<std::optional<std::string>(const std::string&)>& getenv) {
  LaunchEnv env;
  auto required = [&](const std::string& name) -> Result<std::string> {
    auto v = getenv(name);
    if (!v || v->empty()) return Error{name + " is not set" + kHowToLaunch};
    return *v;
  };
  auto world_text = required("WORLD_SIZE");
  if (!world_text.ok()) return world_text.error();
  auto world = ParseInt("WORLD_SIZE", *world_text, 1, 1 << 20);
  if (!world.ok()) return world.error();
  env.world_size = *world;

  auto rank_text = required("RANK");
  if (!rank_text.ok()) return rank_text.error();
  auto rank = ParseInt("RANK", *rank_text, 0, env.world_size - 1);
  if (!rank.ok()) return Error{rank.error().message + " (WORLD_SIZE is " + std::to_string(env.world_size) + ")"};
  env.rank = *rank;

  env.local_rank = env.rank;
  if (auto v = getenv("LOCAL_RANK"); v && !v->empty()) {
    auto local = ParseInt("LOCAL_RANK", *v, 0, 1 << 20);
    if (!local.ok()) return local.error();
    env.local_rank = *local;
  }
  auto addr = required("MASTER_ADDR");
  if (!addr.ok()) return addr.error();
  env.master_addr = *addr;
  auto port_text = required("MASTER_PORT");
  if (!port_text.ok()) return port_text.error();
  auto port = ParseInt("MASTER_PORT", *port_text, 1, 65535);
  if (!port.ok()) return port.error();
  env.master_port = *port;

  // torch/distributed/rendezvous.py compares the string with "True".
  auto agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
  env.use_agent_store = agent && *agent == "True";
  if (auto v = getenv("TORCHELASTIC_RESTART_COUNT"); v && !v->empty()) {
    auto restarts = ParseInt("TORCHELASTIC_RESTART_COUNT", *v, 0, 1 << 20);
    if (!restarts.ok()) return restarts.error();
    env.restart_count = *restarts;
  }
  return env;
}

Result<LaunchEnv> ReadLaunchEnv() {
  return ParseLaunchEnv([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

}  // namespace dsp::exec
