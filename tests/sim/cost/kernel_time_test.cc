// SPDX-License-Identifier: Apache-2.0
// The kernel model against what one H200 measured (docs/measurements/h200-calibration.json,
// scripts/gpu-calibrate.py: bf16 GEMMs and scaled_dot_product_attention, CUDA events): with the
// efficiencies read from those microbenchmarks (0.75 / 0.8 / 0.65, which the H100 preset keeps) on
// the H200's datasheet figures, every GEMM shape and attention case is predicted within 15 %. The
// H200 preset itself carries the efficiencies of whole training steps (calibrate --steps), which
// GpuStepsTest checks; isolated kernels run faster than a step's mix (below).
#include <gtest/gtest.h>

#include <cmath>

#include "core/util/file_io.h"
#include "sim/cost/cluster.h"
#include "sim/cost/flops.h"
#include "sim/cost/kernel_time.h"

namespace dsp::sim {
namespace {

Json Load(const std::string& relative) {
  auto text = ReadFile(std::string(DSP_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(text.ok()) << relative;
  return Json::parse(text.ok() ? *text : "{}");
}

TEST(KernelTimeTest, H200GemmAndAttentionMeasurementsWithin15Percent) {
  const Cluster preset = ParseCluster(Load("samples/clusters/h200.json")).value();
  // The kernel microbenchmarks' figures on that H200 (docs/cost-model.md, Calibration): large
  // GEMMs at 0.75 of peak, a copy and silu at 0.8 of HBM, forward attention at 0.65.
  Cluster h200 = preset;
  h200.efficiency.matmul = 0.75;
  h200.efficiency.memory = 0.8;
  h200.efficiency.attention = 0.65;
  // A training step's memory-bound kernels (unfused norms, casts, routing) and causal attention with
  // its backward run well below a copy and a forward attention kernel alone.
  EXPECT_LT(preset.efficiency.memory, 0.8 * h200.efficiency.memory);
  EXPECT_LT(preset.efficiency.attention, 0.8 * h200.efficiency.attention);
  const Json measured = Load("docs/measurements/h200-calibration.json");
  int checked = 0;
  for (const Json& g : measured["gemm"]) {
    const double m = g["m"], k = g["k"], n = g["n"];
    OperatorCost op{"gemm", 2 * m * k * n, (m * k + k * n + m * n) * 2};
    op.kind = KernelKind::kMatmul;
    op.rows = m;
    op.cols = n;
    const double predicted = KernelSeconds(op, h200, false);
    EXPECT_NEAR(predicted / g["seconds"].get<double>(), 1.0, 0.15) << g.dump();
    ++checked;
  }
  for (const Json& a : measured["sdpa"]) {
    const double b = a["b"], heads = a["heads"], s = a["seq"], d = a["head_dim"];
    OperatorCost op{"attention", 4 * b * heads * s * s * d, 4 * b * heads * s * d * 2};
    op.kind = KernelKind::kAttention;
    EXPECT_NEAR(KernelSeconds(op, h200, false) / a["seconds"].get<double>(), 1.0, 0.15) << a.dump();
    ++checked;
  }
  // A copy of 8 GiB moves through HBM at the memory efficiency.
  const Json& hbm = measured["hbm"];
  OperatorCost copy{"copy", 0, hbm["bytes_moved"].get<double>()};
  copy.kind = KernelKind::kMemory;
  EXPECT_NEAR(KernelSeconds(copy, h200, false) / hbm["seconds"].get<double>(), 1.0, 0.15);
  EXPECT_EQ(checked, 11);
}

TEST(KernelTimeTest, WavesPenalizeATileCountJustPastTheSms) {
  Cluster c = ParseCluster(Load("samples/clusters/h100-sxm.json")).value();
  c.gpu.kernel_overhead_seconds = 0;
  // 132 SMs: 132 output tiles of 128 x 128 fill one wave, 133 need two.
  auto gemm = [&](double rows) {
    OperatorCost op{"gemm", 2 * rows * 4096 * 128, 0};
    op.kind = KernelKind::kMatmul;
    op.rows = rows;
    op.cols = 128;
    return KernelSeconds(op, c, false);
  };
  const double full = gemm(132 * 128), past = gemm(133 * 128);
  EXPECT_NEAR(past / full, 2.0 * 132 / 133 * 133 / 132, 1e-9);  // twice the time for 1/132 more work
  c.gpu.sm_count = 0;  // no wave model: time follows FLOPs
  EXPECT_NEAR(gemm(133 * 128) / gemm(132 * 128), 133.0 / 132, 1e-12);
}

}  // namespace
}  // namespace dsp::sim

namespace dsp::sim {
namespace {

// An FP8 GEMM runs at the cluster's FP8 peak x its fp8_matmul efficiency (the matmul one when the
// cluster does not give it); an absent FP8 peak is twice the bf16 one, 0 means none.
TEST(KernelTimeTest, Fp8GemmsRunAtTheFp8Rate) {
  Cluster c;
  c.gpu.peak_bf16_flops_per_second = 989e12;
  c.gpu.hbm_bytes_per_second = 3.35e12;
  c.efficiency.matmul = 0.8;
  c.efficiency.memory = 0.8;
  EXPECT_DOUBLE_EQ(KernelRatesOf(c).fp8_matmul_flops_per_second, 2 * 989e12 * 0.8);
  c.gpu.peak_fp8_flops_per_second = 1979e12;
  c.efficiency.fp8_matmul = 0.6;
  EXPECT_DOUBLE_EQ(KernelRatesOf(c).fp8_matmul_flops_per_second, 1979e12 * 0.6);
  OperatorCost op{"q_proj", 2.0 * 8192 * 8192 * 8192, 3.0 * 8192 * 8192 * 2};
  op.kind = KernelKind::kMatmul;
  const double bf16 = KernelSeconds(op, c, false);
  op.fp8 = true;
  EXPECT_NEAR(KernelSeconds(op, c, false) / bf16, (989e12 * 0.8) / (1979e12 * 0.6), 1e-9);
}

// A power-limited clock (gpu.compute_clock_ratio) slows the tensor cores' kernels, bf16 and FP8
// GEMMs and fused attention alike, and leaves HBM-bound kernels at their bandwidth.
TEST(KernelTimeTest, AComputeClockRatioSlowsTensorCoreKernelsOnly) {
  Cluster c;
  c.gpu.peak_bf16_flops_per_second = 989e12;
  c.gpu.peak_fp8_flops_per_second = 1979e12;
  c.gpu.hbm_bytes_per_second = 3.35e12;
  c.efficiency = {0.8, 0.8};
  c.efficiency.attention = 0.5;
  c.efficiency.fp8_matmul = 0.6;
  const KernelRates full = KernelRatesOf(c);
  c.gpu.compute_clock_ratio = 0.75;
  const KernelRates capped = KernelRatesOf(c);
  EXPECT_DOUBLE_EQ(capped.matmul_flops_per_second, 0.75 * full.matmul_flops_per_second);
  EXPECT_DOUBLE_EQ(capped.fp8_matmul_flops_per_second, 0.75 * full.fp8_matmul_flops_per_second);
  EXPECT_DOUBLE_EQ(capped.attention_flops_per_second, 0.75 * full.attention_flops_per_second);
  EXPECT_DOUBLE_EQ(capped.hbm_bytes_per_second, full.hbm_bytes_per_second);
  OperatorCost gemm{"q_proj", 2.0 * 8192 * 8192 * 8192, 3.0 * 8192 * 8192 * 2};
  gemm.kind = KernelKind::kMatmul;
  OperatorCost norm{"norm", 0, 4.0 * 8192 * 8192};
  EXPECT_NEAR(KernelTimeOf(gemm, capped, false).seconds / KernelTimeOf(gemm, full, false).seconds, 1 / 0.75, 1e-9);
  EXPECT_DOUBLE_EQ(KernelTimeOf(norm, capped, false).seconds, KernelTimeOf(norm, full, false).seconds);
}

}  // namespace
}  // namespace dsp::sim
