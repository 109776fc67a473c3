// SPDX-License-Identifier: Apache-2.0
// Graph JSON: matches schemas/graph.schema.json and mirrors the graph's nodes and edges.
#include "sim/render/graph_json.h"

#include <gtest/gtest.h>

#include "sim/graph/builder.h"
#include "sim/graph/text_format.h"
#include "tests/apps/report_schema_util.h"
#include "tests/sim/render/render_test_util.h"

namespace dsp::sim::render {
namespace {

TEST(GraphJsonTest, MatchesSchemaAndGraph) {
  auto g = graph::ParseGraph(testing::kCollectiveGraph);
  ASSERT_TRUE(g.ok()) << g.error().message;
  Json doc = GraphToJson(*g);
  EXPECT_EQ(testing::SchemaErrors(schemas::k_graph_schema_json, doc), "") << doc.dump(2);
  EXPECT_EQ(doc["schema_version"], 2);
  ASSERT_EQ(doc["nodes"].size(), g->size());
  EXPECT_EQ(doc["nodes"][0]["name"], "x");
  EXPECT_EQ(doc["nodes"][0]["shape"], "[B, S/P, H]");
  EXPECT_EQ(doc["nodes"][1]["op"], "all_gather");
  EXPECT_EQ(doc["nodes"][1]["group"], "sp");
  EXPECT_TRUE(doc["nodes"].back()["shape"].is_null());  // the output node
  EXPECT_EQ(doc["edges"][0], Json::array({"x", "g0"}));
  EXPECT_EQ(doc["edges"].back(), Json::array({"loss", "output"}));
}

TEST(GraphJsonTest, BuiltModelsMatchSchema) {
  for (const char* m : {"samples/models/tiny-llama.json", "samples/models/tiny-moe.json"}) {
    auto g = graph::BuildModelGraph(testing::LoadSampleModel(m));
    ASSERT_TRUE(g.ok()) << g.error().message;
    Json doc = GraphToJson(*g);
    EXPECT_EQ(testing::SchemaErrors(schemas::k_graph_schema_json, doc), "") << m;
    size_t edges = 0;
    for (const graph::Node* n : *g) edges += n->users.size();
    EXPECT_EQ(doc["edges"].size(), edges) << m;  // one edge per (operand, user) pair
  }
}

TEST(GraphJsonTest, SchemaRejectsMissingFields) {
  Json doc = {{"schema_version", 2}, {"nodes", Json::array({{{"name", "x"}}})}, {"edges", Json::array()}};
  EXPECT_NE(testing::SchemaErrors(schemas::k_graph_schema_json, doc), "");
}

}  // namespace
}  // namespace dsp::sim::render
