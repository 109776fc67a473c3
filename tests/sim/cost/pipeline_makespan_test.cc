// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/pipeline_makespan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>

namespace dsp::sim {
namespace {

// Equal stages: the textbook 1F1B time (m + p - 1)(F + B), for any p and m.
TEST(PipelineMakespanTest, EqualStagesTakeTheTextbookTime) {
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 12; ++m) {
      const std::vector<double> f(p, 1.0), b(p, 2.0);
      EXPECT_DOUBLE_EQ(TrainScheduleMakespan(f, b, m), (m + p - 1) * 3.0) << p << " stages, " << m << " micro-batches";
    }
  }
}

// Unequal stages. The values were also computed by executing DeepSpeed 0.19.6's own
// runtime/pipe/schedule.py TrainSchedule streams with the same rendezvous rule.
TEST(PipelineMakespanTest, UnequalStagesFollowDeepSpeedsInstructionOrder) {
  // The last stage slowest (lm_head and loss there): (m - 1) max + sum, exactly.
  EXPECT_DOUBLE_EQ(TrainScheduleMakespan({1, 1, 1, 2}, {2, 2, 2, 4}, 8), 7 * 6.0 + 15.0);
  EXPECT_DOUBLE_EQ(TrainScheduleMakespan({1.2, 1, 1, 1.5}, {2.4, 2, 2, 3}, 8), 45.6);
  // An earlier stage slowest: DeepSpeed's order overlaps part of the fill; less than that formula
  // (57 and 45).
  EXPECT_DOUBLE_EQ(TrainScheduleMakespan({2, 1, 1, 1}, {4, 2, 2, 2}, 8), 51.0);
  EXPECT_DOUBLE_EQ(TrainScheduleMakespan({1, 1.5, 1, 1}, {2, 3, 2, 2}, 8), 42.0);
  EXPECT_DOUBLE_EQ(TrainScheduleMakespan({2, 1, 1, 1}, {4, 2, 2, 2}, 4), 27.0);
}

// When the last stage is the slowest the time is usually the forward chain to it, m of its
// micro-steps and the gradient chain back, (m - 1) max t + sum t; with an earlier stage the
// slowest, usually less. Neither holds in general, which is why the step-time model executes the
// streams instead of using the formula: a last stage whose neighbour's backward is long waits for
// gradients (27.9 against 27.2), and a slow early stage can also take longer than the formula
// (27.1 against 26.7). Both values come from schedule.py's streams executed the same way.
TEST(PipelineMakespanTest, TheFormulaIsNotDeepSpeedsTimeInGeneral) {
  EXPECT_NEAR(TrainScheduleMakespan({3, 0.5, 0.2, 2}, {0.1, 2.8, 0.2, 1.4}, 6), 27.9, 1e-9);
  EXPECT_NEAR(TrainScheduleMakespan({2.7, 1.7, 0.2}, {3.9, 4.8, 0.2}, 3), 27.1, 1e-9);
  // With backward 1-3x forward and the last stage slowest, random stage times agree with it.
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> f(0.5, 2.0), ratio(1.0, 3.0);
  for (int trial = 0; trial < 500; ++trial) {
    const int p = 2 + trial % 6, m = 1 + trial % 11;
    std::vector<double> fw(p), bw(p);
    for (int s = 0; s < p; ++s) {
      fw[s] = f(gen);
      bw[s] = fw[s] * ratio(gen);
    }
    int slow = 0;
    for (int s = 1; s < p; ++s) slow = fw[s] + bw[s] > fw[slow] + bw[slow] ? s : slow;
    std::swap(fw[slow], fw[p - 1]);
    std::swap(bw[slow], bw[p - 1]);
    double sum = 0;
    for (int s = 0; s < p; ++s) sum += fw[s] + bw[s];
    EXPECT_NEAR(TrainScheduleMakespan(fw, bw, m), (m - 1) * (fw[p - 1] + bw[p - 1]) + sum, 1e-9)
        << p << " stages, " << m << " micro-batches";
  }
}

// Each transfer holds both neighbours: one activation and one gradient per micro-batch per
// boundary lie on the critical path of equal stages' fill and drain.
TEST(PipelineMakespanTest, TransfersAddToThePath) {
  const double without = TrainScheduleMakespan({1, 1}, {2, 2}, 4);
  const double with = TrainScheduleMakespan({1, 1}, {2, 2}, 4, 0.5);
  EXPECT_DOUBLE_EQ(without, 15.0);
  EXPECT_DOUBLE_EQ(with, 19.0);  // schedule.py's streams, executed the same way, give 19 too
  EXPECT_DOUBLE_EQ(TrainScheduleMakespan({1.2, 1, 1, 1.5}, {2.4, 2, 2, 3}, 8, 0.25), 50.6);
}

TEST(PipelineMakespanTest, BadInputIsRefused) {
  EXPECT_THROW(TrainScheduleMakespan({}, {}, 1), std::invalid_argument);
  EXPECT_THROW(TrainScheduleMakespan({1}, {1, 2}, 1), std::invalid_argument);
  EXPECT_THROW(TrainScheduleMakespan({1}, {1}, 0), std::invalid_argument);
}

}  // namespace
}  // namespace dsp::sim
