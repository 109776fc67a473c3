// SPDX-License-Identifier: Apache-2.0
// PlanModernRun's optional columns: a row of samples/runs/modern-runs.tsv with its
// pp_schedule_micro_batches cell changed (NeMo AutoModel's benchmark configs call the pipeline
// schedule once per local batch: local_batch_size / pp_microbatch_size micro-batches).
#include "sim/session/reference_runs.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "tests/sim/table_test_util.h"

namespace dsp::sim {
namespace {

TsvRecord Row(const std::string& run_id) {
  auto rows = ParseTsvRecords(testing::SourceFile("samples/runs/modern-runs.tsv"));
  EXPECT_TRUE(rows.ok());
  for (const TsvRecord& r : *rows) {
    if (r.at("run_id") == run_id) return r;
  }
  ADD_FAILURE() << run_id;
  return {};
}

TEST(ReferenceRunsTest, ScheduleCallsComeFromTheirColumn) {
  TsvRecord r = Row("am-kimi-k2-pp8-ep32-256g");
  ASSERT_EQ(r.at("pp_schedule_micro_batches"), "8");
  auto run = PlanModernRun(r);
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->knobs.engine.pipeline_schedule_micro_batches, 8);
  EXPECT_NE(run->flags.find("--pp-schedule-micro-batches 8"), std::string::npos) << run->flags;
  // Empty (every other row, and tables without the column): the step in one call.
  r["pp_schedule_micro_batches"] = "";
  run = PlanModernRun(r);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->knobs.engine.pipeline_schedule_micro_batches, 0);
  EXPECT_EQ(run->flags.find("--pp-schedule-micro-batches"), std::string::npos);
  r.erase("pp_schedule_micro_batches");
  EXPECT_TRUE(PlanModernRun(r).ok());
  // A bad cell names the run and the column.
  for (const char* bad : {"x", "0", "-2"}) {
    r["pp_schedule_micro_batches"] = bad;
    run = PlanModernRun(r);
    ASSERT_FALSE(run.ok()) << bad;
    EXPECT_NE(run.error().message.find("am-kimi-k2-pp8-ep32-256g: column pp_schedule_micro_batches"),
              std::string::npos)
        << run.error().message;
  }
}

// tp_comm_overlap: userbuffers under megatron-lm (with its sequence parallelism), async TP under
// fsdp2 (torchtitan's TP is always sequence-parallel); a row that says 1 without TP is refused.
TEST(ReferenceRunsTest, TpCommOverlapComesFromItsColumn) {
  TsvRecord r = Row("tt-llama31-405b-3d-1f1b-512g-float8");
  ASSERT_EQ(r.at("tp_comm_overlap"), "1");
  auto run = PlanModernRun(r);
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_TRUE(run->knobs.engine.tp_comm_overlap);
  EXPECT_NE(run->flags.find("--tp-comm-overlap"), std::string::npos) << run->flags;
  r["tp_comm_overlap"] = "0";
  run = PlanModernRun(r);
  ASSERT_TRUE(run.ok());
  EXPECT_FALSE(run->knobs.engine.tp_comm_overlap);
  // Refused: no TP; DeepSpeed (AutoTP has no overlap); Megatron-Core without sequence parallelism;
  // torchtitan's async TP without torch.compile.
  for (auto [run_id, column, value] : {std::tuple{"tt-llama31-8b-fsdp-8g", "tp_comm_overlap", "1"},
                                       std::tuple{"dc-zero3-llama3-70b-ga1-32g", "tp_comm_overlap", "1"},
                                       std::tuple{"mlm-gpt-16b-192g", "sequence_parallel", "0"},
                                       std::tuple{"tt-llama31-405b-3d-1f1b-512g-float8", "compile", "none"}}) {
    r = Row(run_id);
    r[column] = value;
    r["tp_comm_overlap"] = "1";
    run = PlanModernRun(r);
    ASSERT_FALSE(run.ok()) << run_id;
    EXPECT_NE(run.error().message.find(std::string(run_id) + ": column tp_comm_overlap"), std::string::npos)
        << run.error().message;
  }
}

}  // namespace
}  // namespace dsp::sim
