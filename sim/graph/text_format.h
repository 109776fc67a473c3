// SPDX-License-Identifier: Apache-2.0
// The graph's text form: one line per node, in order,
//   %name = op(%arg1, %arg2) {module="...", param="...", shape=[B, S, H], group=""}
// (shape is left out only where the node has none: the output). PrintGraph and ParseGraph are
// exact inverses on printed text, which is what the golden tests and debugging dumps rely on.
#pragma once

#include <string>
#include <string_view>

#include "core/util/result.h"
#include "sim/graph/graph.h"

namespace dsp::sim::graph {

std::string PrintNode(const Node& node);  // one line, no newline
std::string PrintGraph(const Graph& graph);  // every node, each line ending in '\n'

// Reads the text form. Blank lines and lines starting with '#' are skipped; spaces between tokens
// are free; attributes may come in any order and default to empty (shape to absent). Arguments
// must name earlier nodes and names must be unique. Errors are "line:column: message" (1-based).
// The result is not verified: run Verify for the graph-level rules (one output, shapes).
Result<Graph> ParseGraph(std::string_view text);

}  // namespace dsp::sim::graph
