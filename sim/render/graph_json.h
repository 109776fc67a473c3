// SPDX-License-Identifier: Apache-2.0
// The graph IR as JSON for tools outside ds-plan (schemas/graph.schema.json):
//   {"schema_version": 1, "nodes": [{"name", "op", "module", "param", "shape", "group"}],
//    "edges": [[from, to], ...]}
// Nodes are in graph (topological) order; an edge per distinct (operand, user) pair, in the
// order of the user's operands, so the output is as deterministic as the graph.
#pragma once

#include "core/json/document.h"
#include "sim/graph/graph.h"

namespace dsp::sim::render {

// `shape` is the printed form ("[B, S/P, H]") so symbolic dims survive; null for the output node.
Json GraphToJson(const graph::Graph& graph);

}  // namespace dsp::sim::render
