// SPDX-License-Identifier: Apache-2.0
// ParseStepSweep: the steps.tsv scripts/gpu-ground-truth.py writes, the committed sweeps, and
// errors that name the line and the column.
#include "sim/calibrate/step_sweep.h"

#include <gtest/gtest.h>

#include <string>

#include "core/util/file_io.h"

namespace dsp::sim {
namespace {

const std::string kHeader =
    "model\tconfig\tmicro_batch\tseq\trecompute\tattention\tstatus\tstep_ms_median\ttrace\thost_forward_ms\t"
    "host_backward_ms\n";

TEST(StepSweepTest, ReadsTheScriptsColumnsAndSkipsStepsThatDidNotRun) {
  auto steps = ParseStepSweep(kHeader +
                              "m\tm.json\t2\t4096\tfull\teager\tok\t123.5\tt.json.gz\t20.5\t30\n"
                              "m\tm.json\t1\t65536\tnone\tsdpa\toom\t\t\t\t\n"
                              "m\tm.json\t1\t1024\tnone\tsdpa\tok\t50\t\t\t\n");
  ASSERT_TRUE(steps.ok()) << steps.error().message;
  ASSERT_EQ(steps->size(), 2u);
  const SweepStep& a = (*steps)[0];
  EXPECT_EQ(a.label, "m mb2 s4096 full eager");
  EXPECT_EQ(a.config, "m.json");
  EXPECT_EQ(a.micro_batch, 2);
  EXPECT_EQ(a.seq_len, 4096);
  EXPECT_TRUE(a.full_recompute);
  EXPECT_FALSE(a.flash_attention);
  EXPECT_EQ(a.step_ms, 123.5);
  EXPECT_EQ(a.trace, "t.json.gz");
  EXPECT_EQ(a.host_forward_ms, 20.5);
  EXPECT_EQ(a.host_backward_ms, 30);
  const SweepStep& b = (*steps)[1];
  EXPECT_TRUE(b.flash_attention);
  EXPECT_EQ(b.trace, "");
  EXPECT_EQ(b.host_forward_ms, 0);  // not measured (an older sweep)
}

TEST(StepSweepTest, ErrorsNameTheLineAndTheColumn) {
  auto error = [](const std::string& row) {
    auto r = ParseStepSweep(kHeader + row);
    return r.ok() ? std::string("<parsed>") : r.error().message;
  };
  EXPECT_EQ(error("m\tm.json\t1\tlots\tnone\tsdpa\tok\t5\t\t\t\n"),
            "line 2, column seq: 'lots' is not a number in the expected range");
  EXPECT_EQ(error("m\tm.json\t1\t0\tnone\tsdpa\tok\t5\t\t\t\n"),
            "line 2, column seq: '0' is not a number in the expected range");
  EXPECT_EQ(error("m\tm.json\t1\t8\tselective\tsdpa\tok\t5\t\t\t\n"),
            "line 2, column recompute: 'selective' is not none or full");
  EXPECT_EQ(error("m\tm.json\t1\t8\tnone\tflash\tok\t5\t\t\t\n"),
            "line 2, column attention: 'flash' is not sdpa or eager");
  EXPECT_EQ(error("m\t\t1\t8\tnone\tsdpa\tok\t5\t\t\t\n"), "line 2, column config: is empty or missing");
  EXPECT_EQ(error("m\tm.json\t1\t8\tnone\tsdpa\tok\tnan\t\t\t\n"),
            "line 2, column step_ms_median: 'nan' is not a number in the expected range");
  auto empty = ParseStepSweep("");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message, "no header line: the file is empty");
}

// The two committed sweeps: the one the H200 preset is fitted to (every step traced, host times
// measured) and the one simulate is tested against.
TEST(StepSweepTest, TheCommittedSweepsParse) {
  const std::string root = std::string(DSP_SOURCE_DIR) + "/docs/measurements/";
  auto fit = ParseStepSweep(ReadFile(root + "h200-fit/steps.tsv").value());
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  EXPECT_EQ(fit->size(), 10u);
  for (const SweepStep& s : *fit) {
    EXPECT_FALSE(s.trace.empty()) << s.label;
    EXPECT_GT(s.host_forward_ms, 0) << s.label;
    EXPECT_GT(s.host_backward_ms, 0) << s.label;
  }
  auto test = ParseStepSweep(ReadFile(root + "h200-steps/steps.tsv").value());
  ASSERT_TRUE(test.ok()) << test.error().message;
  EXPECT_EQ(test->size(), 23u);
}

}  // namespace
}  // namespace dsp::sim
