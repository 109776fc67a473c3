// SPDX-License-Identifier: Apache-2.0
// --world-size / --nodes / --gpus-per-node / --pp, shared by the commands that need a cluster shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/util/result.h"

namespace dsp::app {

struct WorldOptions {
  int64_t world_size = 0;     // 0 = not given
  int64_t nodes = 0;
  int64_t gpus_per_node = 0;
  int64_t pp = 1;
  CLI::Option* pp_option = nullptr;  // set by AddTo: whether --pp was given

  // with_pp false: a command that chooses the pipeline stages itself (tune) takes no --pp.
  void AddTo(CLI::App* app, bool with_pp = true);

  struct Resolved {
    std::optional<int64_t> world_size;
    std::optional<int64_t> gpus_per_node;
    int64_t pp = 1;
  };
  // Combines the flags; a contradiction (--world-size 8 --nodes 2 --gpus-per-node 8) is an error.
  Result<Resolved> Resolve() const;
};

}  // namespace dsp::app
