// SPDX-License-Identifier: Apache-2.0
#include "apps/ds-plan/world_options.h"

namespace dsp::app {

void WorldOptions::AddTo(CLI::App* app, bool with_pp) {
  app->add_option("--world-size", world_size, "total number of ranks (GPUs)")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app->add_option("--nodes", nodes, "number of nodes (with --gpus-per-node)")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  app->add_option("--gpus-per-node", gpus_per_node, "GPUs per node; also marks groups that cross nodes")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 10));
  if (!with_pp) return;
  pp_option = app->add_option("--pp", pp, "pipeline stages (PipelineModule; not part of the config)")
                  ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
}

Result<WorldOptions::Resolved> WorldOptions::Resolve() const {
  Resolved r;
  r.pp = pp;
  if (gpus_per_node > 0) r.gpus_per_node = gpus_per_node;
  if (nodes > 0) {
    if (gpus_per_node == 0) return Error{"--nodes needs --gpus-per-node"};
    int64_t from_nodes = nodes * gpus_per_node;
    if (world_size > 0 && world_size != from_nodes) {
      return Error{"--world-size " + std::to_string(world_size) + " contradicts --nodes " +
                   std::to_string(nodes) + " x --gpus-per-node " + std::to_string(gpus_per_node) +
                   " = " + std::to_string(from_nodes)};
    }
    if (from_nodes > (int64_t{1} << 20)) {
      return Error{"--nodes " + std::to_string(nodes) + " x --gpus-per-node " + std::to_string(gpus_per_node) +
                   " = " + std::to_string(from_nodes) + " ranks: at most 1048576 are supported"};
    }
    r.world_size = from_nodes;
  } else if (world_size > 0) {
    r.world_size = world_size;
  }
  if (r.world_size && *r.world_size % pp != 0) {
    return Error{"--pp " + std::to_string(pp) + " does not divide the world size " + std::to_string(*r.world_size)};
  }
  return r;
}

}  // namespace dsp::app
