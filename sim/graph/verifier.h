// SPDX-License-Identifier: Apache-2.0
// Structural checks every pass runs before and after rewriting a graph, so that a broken rewrite
// is reported at the pass that made it rather than as a wrong simulation later.
#pragma once

#include <vector>

#include "core/util/result.h"
#include "sim/graph/graph.h"

namespace dsp::sim::graph {

// Every violation, in graph order, each message naming the node ("%layers_0_mlp_mul: ..."):
//   - duplicate node names;
//   - an argument that is not in the graph or not earlier (use-def order);
//   - users lists out of step with args: a user that does not use the node, a use missing from
//     the users list, a user listed twice, a user not in the graph (dangling);
//   - not exactly one output node, or an output that something uses;
//   - a non-output node without a shape, a node without an op, a placeholder with arguments.
std::vector<Error> VerifyGraphErrors(const Graph& graph);

// Ok, or all of VerifyGraphErrors joined by newlines.
Status VerifyGraph(const Graph& graph);

}  // namespace dsp::sim::graph
