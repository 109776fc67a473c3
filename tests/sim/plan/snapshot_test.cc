// SPDX-License-Identifier: Apache-2.0
// The snapshot's inputs survive a round trip through JSON (what check recomputes from), and a
// damaged inputs object is an error naming the field.
#include "sim/plan/snapshot.h"

#include <gtest/gtest.h>

namespace dsp::sim {
namespace {

PlanSnapshot Sample() {
  PlanSnapshot s;
  s.inputs.config = {"configs/a.json", std::string(64, 'a')};
  s.inputs.model = {"model.json", std::string(64, 'b')};
  s.inputs.cluster = {"cluster.json", std::string(64, 'c')};
  s.inputs.config_content = Json::parse(R"({"train_batch_size": 8})");
  s.inputs.nodes = 2;
  s.inputs.gpus_per_node = 4;
  s.inputs.pp = 2;
  s.inputs.seq_len = 2048;
  s.inputs.recompute = "full";
  s.inputs.convention = "deepspeed";
  s.inputs.sets = {"bf16.enabled=true", "train_micro_batch_size_per_gpu=1"};
  s.inputs.ds_plan_version = "9.9.9";
  return s;
}

TEST(PlanSnapshot, InputsRoundTrip) {
  const PlanSnapshot s = Sample();
  Json j = PlanSnapshotToJson(s);
  EXPECT_EQ(j["schema_version"], kPlanSchemaVersion);
  EXPECT_TRUE(j["inputs"]["world_size"].is_null());
  auto back = ReadSnapshotInputs(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->config.path, "configs/a.json");
  EXPECT_EQ(back->cluster.sha256, std::string(64, 'c'));
  EXPECT_EQ(back->config_content, s.inputs.config_content);
  EXPECT_FALSE(back->world_size.has_value());
  EXPECT_EQ(back->nodes, 2);
  EXPECT_EQ(back->gpus_per_node, 4);
  EXPECT_EQ(back->pp, 2);
  EXPECT_EQ(back->seq_len, 2048);
  EXPECT_EQ(back->recompute, "full");
  EXPECT_EQ(back->convention, "deepspeed");
  EXPECT_EQ(back->sets, s.inputs.sets);
  EXPECT_EQ(back->ds_plan_version, "9.9.9");
}

TEST(PlanSnapshot, CollectivesAreSummedPerKindAndGroup) {
  PlanSnapshot s = Sample();
  CollectiveCall a;
  a.kind = CollectiveKind::kAllReduce;
  a.group = GroupKind::kDp;
  a.bytes_per_call = 100;
  a.calls_per_step = 2;
  a.seconds = 1;
  CollectiveCall b = a;  // another purpose on the same kind and group
  b.bytes_per_call = 10;
  b.calls_per_step = 3;
  CollectiveCall c = a;
  c.group = GroupKind::kTp;
  s.time.collectives = {a, b, c};
  Json j = PlanSnapshotToJson(s);
  EXPECT_EQ(j["collectives"]["all_reduce"]["dp"]["bytes_per_step"], 230.0);
  EXPECT_EQ(j["collectives"]["all_reduce"]["dp"]["calls_per_step"], 5.0);
  EXPECT_EQ(j["collectives"]["all_reduce"]["dp"]["seconds"], 2.0);
  EXPECT_EQ(j["collectives"]["all_reduce"]["tp"]["bytes_per_step"], 200.0);
  EXPECT_EQ(j["collectives"].size(), 1u);
}

TEST(PlanSnapshot, RenderedTextPutsNumberArraysOnOneLineAndParsesBack) {
  Json j = Json::parse(R"({"a": [[0, 1], [2, 3]], "b": [0.9, -1e-05], "s": ["x [1,", "2]"], "e": [], "o": {"k": 1}})");
  const std::string text = RenderPlanSnapshot(j);
  EXPECT_EQ(text,
            "{\n"
            "  \"a\": [\n"
            "    [0, 1],\n"
            "    [2, 3]\n"
            "  ],\n"
            "  \"b\": [0.9, -1e-05],\n"
            "  \"e\": [],\n"
            "  \"o\": {\n"
            "    \"k\": 1\n"
            "  },\n"
            "  \"s\": [\n"
            "    \"x [1,\",\n"
            "    \"2]\"\n"
            "  ]\n"
            "}\n");
  EXPECT_EQ(Json::parse(text), j);
}

TEST(PlanSnapshot, DamagedInputsAreErrorsNamingTheField) {
  Json j = PlanSnapshotToJson(Sample());
  Json no_model = j;
  no_model["inputs"].erase("model");
  auto r = ReadSnapshotInputs(no_model);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "/inputs/model is missing");

  Json bad_world = j;
  bad_world["inputs"]["world_size"] = "eight";
  ASSERT_FALSE(ReadSnapshotInputs(bad_world).ok());
  EXPECT_EQ(ReadSnapshotInputs(bad_world).error().message, "/inputs/world_size must be an integer or null");

  Json bad_sets = j;
  bad_sets["inputs"]["set"] = Json::array({1});
  EXPECT_FALSE(ReadSnapshotInputs(bad_sets).ok());
  EXPECT_FALSE(ReadSnapshotInputs(Json::array()).ok());
  EXPECT_FALSE(ReadSnapshotInputs(Json::object()).ok());
}

// --pp-schedule-micro-batches is recorded when given (null otherwise), replayed, read as not
// given from snapshots written before it existed, and a damaged value names the field.
TEST(PlanSnapshot, PipelineScheduleMicroBatchesRoundTrip) {
  PlanSnapshot s = Sample();
  Json j = PlanSnapshotToJson(s);
  EXPECT_TRUE(j["inputs"]["pp_schedule_micro_batches"].is_null());
  EXPECT_EQ(ReadSnapshotInputs(j)->pp_schedule_micro_batches, 0);
  s.inputs.pp_schedule_micro_batches = 4;
  j = PlanSnapshotToJson(s);
  EXPECT_EQ(j["inputs"]["pp_schedule_micro_batches"], 4);
  EXPECT_EQ(ReadSnapshotInputs(j)->pp_schedule_micro_batches, 4);
  Json older = j;
  older["inputs"].erase("pp_schedule_micro_batches");
  EXPECT_EQ(ReadSnapshotInputs(older)->pp_schedule_micro_batches, 0);
  for (const Json& bad : {Json(0), Json("four")}) {
    Json damaged = j;
    damaged["inputs"]["pp_schedule_micro_batches"] = bad;
    auto r = ReadSnapshotInputs(damaged);
    ASSERT_FALSE(r.ok()) << bad.dump();
    EXPECT_NE(r.error().message.find("/inputs/pp_schedule_micro_batches must be"), std::string::npos)
        << r.error().message;
  }
}

}  // namespace
}  // namespace dsp::sim
