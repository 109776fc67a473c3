// SPDX-License-Identifier: Apache-2.0
#include "sim/render/graph_json.h"

#include <set>
#include <utility>

#include "sim/graph/symbolic.h"

namespace dsp::sim::render {

Json GraphToJson(const graph::Graph& graph) {
  Json nodes = Json::array();
  Json edges = Json::array();
  for (const graph::Node* node : graph) {
    nodes.push_back({{"name", node->name},
                     {"op", node->op},
                     {"module", node->module},
                     {"param", node->param},
                     {"param_shape", node->param_shape
                                         ? Json(graph::ShapeToString(*node->param_shape))
                                         : Json(nullptr)},
                     {"shape", node->shape ? Json(graph::ShapeToString(*node->shape)) : Json(nullptr)},
                     {"group", node->group}});
    if (node->window > 0) nodes.back()["window"] = node->window;
    if (node->chunk > 0) nodes.back()["chunk"] = node->chunk;
    // mul(%a, %a) is one dependency, as in Node::users.
    std::set<const graph::Node*> seen;
    for (const graph::Node* arg : node->args) {
      if (seen.insert(arg).second) edges.push_back(Json::array({arg->name, node->name}));
    }
  }
  Json out = Json::object();
  out["schema_version"] = 2;
  out["nodes"] = std::move(nodes);
  out["edges"] = std::move(edges);
  return out;
}

}  // namespace dsp::sim::render
