// SPDX-License-Identifier: Apache-2.0
// The environment torchrun (or a manual launch) gives each worker process, parsed and checked
// before any socket is opened, so a bad launch fails with a message instead of a hang.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/util/result.h"

namespace dsp::exec {

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // torchrun's agent already hosts the TCPStore on MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True): every worker is then a client and keys live under
  // "/worker/attempt_<restart_count>/", exactly as torch.distributed.rendezvous does it.
  bool use_agent_store = false;
  int restart_count = 0;

  // "" without the agent store.
  std::string StorePrefix() const;
};

// Looks variables up through `getenv` (tests pass a map). RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT are required; LOCAL_RANK defaults to RANK, TORCHELASTIC_RESTART_COUNT to 0.
// Errors name the variable and say how the process is meant to be started.
Result<LaunchEnv> ParseLaunchEnv(const std::function<std::optional<std::string>(const std::string&)>& getenv);

// The process environment.
Result<LaunchEnv> ReadLaunchEnv();

}  // namespace dsp::exec
