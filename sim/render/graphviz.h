// SPDX-License-Identifier: Apache-2.0
// Draws the graph IR with Graphviz's C libraries (cgraph builds the graph, gvc lays it out with
// `dot` and renders SVG in memory), so `ds-plan visualize graph` needs no `dot` binary at run time
// and no temporary files. docs/visualize.md describes what the picture shows.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/util/result.h"
#include "sim/graph/graph.h"

namespace dsp::sim::render {

// An inclusive range of decoder layers, "0-1" or "3".
struct LayerRange {
  int first = 0;
  int last = 0;
  bool Contains(int layer) const { return layer >= first && layer <= last; }
};

// Reads "A-B" (A <= B) or a single "N"; errors name the problem.
Result<LayerRange> ParseLayerRange(std::string_view text);

// Which half of the training step the collectives are drawn for (graph::ActionsOf): both (each
// collective labelled with what it does forward and backward), forward only (collectives that do
// nothing in forward, such as copy_to_tp and gradient reductions, are left out and their edges
// pass through), or backward only (the same for reduce_from_tp, gather_from_tp; edges point the
// way gradients flow).
enum class Direction { kBoth, kForward, kBackward };
// "forward", "backward" or "both".
Result<Direction> ParseDirection(std::string_view text);

struct RenderOptions {
  // Layers drawn in full; the others collapse into one summary node per contiguous run
  // ("layers 2-79 (78 x)"). Absent: every layer is drawn.
  std::optional<LayerRange> layers;
  Direction direction = Direction::kBoth;
  // `--diff`: the graph as built, before the passes. Nodes it lacks are drawn as inserted, nodes
  // whose shape or weight shape changed say what they were, and the nodes the passes erased are
  // listed. Not owned; must outlive the render.
  const graph::Graph* before = nullptr;
};

enum class Format {
  kDot,  // the cgraph graph as DOT text, before layout (no coordinates)
  kSvg,  // laid out with dot and rendered to SVG
};


// Same graph and options, same bytes: nodes, clusters and edges are created in graph order and
// nothing time- or address-dependent reaches the output.
Result<std::string> RenderGraph(const graph::Graph& graph, const RenderOptions& options, Format format);

}  // namespace dsp::sim::render
