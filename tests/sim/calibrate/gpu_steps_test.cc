// SPDX-License-Identifier: Apache-2.0
// `ds-plan simulate` (world 1, ZeRO-0, bf16, AdamW, the H200 preset) against the training steps
// scripts/gpu-ground-truth.py measured on an H200 (docs/measurements/h200-steps/steps.tsv, 23
// points of Llama-3.2-1B, Llama-3-8B cut to 4 layers and Qwen3-30B-A3B cut to 4 layers, with and
// without recompute, SDPA and eager attention). docs/validation.md "One GPU, measured" holds the
// table this test computes, and the test fails when the table there is not the current one.
//
// Memory: the script is not DeepSpeed's BF16_Optimizer (no DeepSpeed on that machine): between
// steps it holds bf16 parameters, fp32 masters and both moments (14 bytes per parameter) and no
// gradient, which backward creates only after the loss's backward, where the allocated peak is.
// So the comparison is of what ds-plan models about the transformers model: the activations at
// that peak (measured: backward's allocated peak less what the step started with).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/model_spec.h"
#include "core/util/file_io.h"
#include "sim/cost/cluster.h"
#include "sim/session/evaluation.h"
#include "tests/sim/table_test_util.h"

namespace dsp::sim {
namespace {

using testing::Fixed;

std::string Source(const std::string& relative) { return testing::SourceFile(relative); }

std::vector<testing::TsvRow> Rows() { return testing::TsvRows("docs/measurements/h200-steps/steps.tsv"); }

struct Point {
  std::string label;
  double measured_ms = 0, predicted_ms = 0;
  double measured_activations = 0, predicted_activations = 0;  // bytes
  double StepError() const { return predicted_ms / measured_ms - 1; }
  double MemoryError() const { return predicted_activations / measured_activations - 1; }
};

std::vector<Point> Predict(const std::string& cluster_file) {
  const Cluster cluster = ParseCluster(Json::parse(Source(cluster_file), nullptr, true, true)).value();
  std::vector<Point> points;
  for (const auto& row : Rows()) {
    if (row.at("status") != "ok") continue;
    const ModelSpec model = ParseHfConfig(Json::parse(Source(row.at("config")))).value();
    Json config = Json::parse(Source("docs/measurements/h200-steps/zero0-bf16.json"));
    config["train_micro_batch_size_per_gpu"] = std::stoll(row.at("micro_batch"));
    PlanKnobs knobs;
    knobs.world_size = 1;
    knobs.seq_len = std::stoll(row.at("seq"));
    knobs.recompute = row.at("recompute") == "full" ? Recompute::kFull : Recompute::kNone;
    // torch 2.11 on the H200 ran sdpa as cuDNN's kernels (the traces name
    // cudnn_generated_fort_native_sdpa_sm90_flash_*): --attention cudnn.
    knobs.engine.attention = row.at("attention") == "sdpa" ? AttentionKernel::kCudnn : AttentionKernel::kMaterialized;
    auto e = Evaluate(model, cluster, "zero0-bf16.json", config.dump(), {}, knobs);
    EXPECT_TRUE(e->has_numbers()) << e->message;
    if (!e->has_numbers()) continue;
    Point p;
    p.label = row.at("model") + " mb" + row.at("micro_batch") + " s" + row.at("seq") + " " +
              row.at("recompute") + " " + row.at("attention");
    p.measured_ms = std::stod(row.at("step_ms_median"));
    p.predicted_ms = e->time.step_seconds * 1e3;
    p.measured_activations =
        std::stod(row.at("backward_peak_bytes")) - std::stod(row.at("states_allocated_bytes"));
    p.predicted_activations = e->memory.activations_bytes;
    points.push_back(p);
  }
  return points;
}

// The Markdown table docs/validation.md carries.
std::string Table(const std::vector<Point>& points) {
  std::ostringstream out;
  out << "| step (H200, 1 GPU) | measured ms | predicted ms | error | activations measured GB | predicted GB | error |\n";
  out << "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const Point& p : points) {
    out << "| " << p.label << " | " << Fixed(p.measured_ms, "%.1f") << " | " << Fixed(p.predicted_ms, "%.1f")
        << " | " << Fixed(100 * p.StepError(), "%+.1f%%") << " | " << Fixed(p.measured_activations / 1e9, "%.2f")
        << " | " << Fixed(p.predicted_activations / 1e9, "%.2f") << " | " << Fixed(100 * p.MemoryError(), "%+.1f%%")
        << " |\n";
  }
  return out.str();
}

double MeanAbs(const std::vector<Point>& points, double (Point::*error)() const) {
  double sum = 0;
  for (const Point& p : points) sum += std::fabs((p.*error)());
  return sum / static_cast<double>(points.size());
}

const char* kPreset = "samples/clusters/h200.json";

TEST(GpuStepsTest, ActivationsAtTheLossPeakWithin5PercentOnDenseModels) {
  const std::vector<Point> points = Predict(kPreset);
  ASSERT_EQ(points.size(), 23u);
  for (const Point& p : points) {
    // Qwen3-30B-A3B: with its q_norm/k_norm counted (activation_memory.cc), within 1 % from 8K
    // tokens; at 2K about 0.8 GB the model does not count (the MoE block's routing tensors) is
    // 12 % of it.
    const bool moe_short = p.label.rfind("qwen3", 0) == 0 && p.label.find(" s2048 ") != std::string::npos;
    // A few hundred MB the model does not count (cuBLAS and SDPA workspaces) weigh 6 % at 1K
    // tokens: within 5 % or 0.25 GB.
    const double gap = std::fabs(p.predicted_activations - p.measured_activations);
    if (!moe_short && gap < 0.25e9) continue;
    EXPECT_LT(std::fabs(p.MemoryError()), moe_short ? 0.15 : 0.05) << p.label;
  }
  EXPECT_LT(MeanAbs(points, &Point::MemoryError), 0.02);
}

// Step time with the H200 preset, whose efficiencies and host figures calibrate --steps fitted to
// another sweep (docs/measurements/h200-fit: other models; CompareCliTest checks the preset is that
// fit), so every one of these 23 steps is out of sample.
TEST(GpuStepsTest, StepTimeWithThePresetFittedToAnotherSweep) {
  const std::vector<Point> points = Predict(kPreset);
  ASSERT_EQ(points.size(), 23u);
  int within10 = 0;
  for (const Point& p : points) {
    const double error = std::fabs(p.StepError());
    if (error < 0.10) {
      ++within10;
      continue;
    }
    // The misses, each documented in docs/validation.md: the host-bound 1K-token steps of the 1B
    // model (their time varies 66-86 ms from run to run: steps-repeat.tsv, steps-run3.tsv) and its
    // full recompute at 4K (gradient checkpointing's hooks add host time per saved tensor).
    const bool host_bound = p.label.rfind("llama-3.2-1b mb1 s1024 ", 0) == 0;
    const bool recompute_1b = p.label == "llama-3.2-1b mb1 s4096 full sdpa";
    EXPECT_TRUE(host_bound || recompute_1b) << p.label << " " << p.StepError();
    EXPECT_LT(error, 0.16) << p.label;
  }
  EXPECT_GE(within10, 20);
  EXPECT_LT(MeanAbs(points, &Point::StepError), 0.07);
  const std::string doc = Source("docs/validation.md");
  EXPECT_NE(doc.find(Table(points)), std::string::npos)
      << "docs/validation.md's one-GPU table is stale; the current one is:\n"
      << Table(points);
}

}  // namespace
}  // namespace dsp::sim
