// SPDX-License-Identifier: Apache-2.0
// Helpers for the pass tests: build a preset's graph and print the lines of one layer, so that
// expectations are text-in/text-out like the builder tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sim/graph/builder.h"
#include "sim/graph/text_format.h"
#include "tests/core/model/model_test_util.h"

namespace dsp::sim::passes::testing {

inline graph::Graph BuildPreset(const std::string& file) {
  Result<graph::Graph> g = graph::BuildModelGraph(dsp::testing::ParsePresetOrDie(file));
  EXPECT_TRUE(g.ok()) << g.error().message;
  return g.ok() ? std::move(g).value() : graph::Graph();
}

// The printed lines of the nodes whose module is `module` or below it (`model.layers.0` gives
// the whole layer, inserted collectives included since they carry their block's module).
inline std::string ModuleLines(const graph::Graph& g, const std::string& module) {
  std::string out;
  for (const graph::Node* n : g) {
    if (n->module == module || n->module.starts_with(module + ".")) {
      out += graph::PrintNode(*n) + "\n";
    }
  }
  return out;
}

inline int CountOp(const graph::Graph& g, std::string_view op, const std::string& module_prefix) {
  int count = 0;
  for (const graph::Node* n : g) {
    if (n->op == op && n->module.starts_with(module_prefix)) ++count;
  }
  return count;
}

}  // namespace dsp::sim::passes::testing
