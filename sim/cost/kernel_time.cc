// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/kernel_time.h"

#include <algorithm>
#include <cmath>

namespace dsp::sim {
namespace {

// FlashAttention's backward recomputes the scores: 2.5 x the forward FLOPs (Dao 2023,
// FlashAttention-2 §3.1 counts 5 matmuls backward against 2 forward).
constexpr double kFlashBackwardFlopsPerForward = 2.5;
// A GEMM's backward is two GEMMs (input and weight gradients), each reading and writing as much.
constexpr double kMatmulBackwardBytesPerForward = 2.0;
// Output tile of cuBLAS's large tensor-core kernels for the wave count.
constexpr double kTileRows = 128, kTileCols = 128;

// The share of the SMs a GEMM keeps busy: its output tiles run in ceil(tiles / SMs) waves and
// the last wave may be partly empty.
double WaveUtilization(double rows, double cols, int sms) {
  if (sms <= 0 || rows <= 0 || cols <= 0) return 1.0;
  const double tiles = std::ceil(rows / kTileRows) * std::ceil(cols / kTileCols);
  const double waves = std::ceil(tiles / sms);
  return tiles / (waves * sms);
}

}  // namespace

KernelRates KernelRatesOf(const Cluster& cluster, AttentionKernel attention) {
  const double mm = cluster.efficiency.matmul > 0 ? cluster.efficiency.matmul : 1.0;
  const double mem = cluster.efficiency.memory > 0 ? cluster.efficiency.memory : 1.0;
  const double fused = cluster.efficiency.attention > 0 ? cluster.efficiency.attention : mm;
  const double flash2 = cluster.efficiency.attention_flash2 > 0 ? cluster.efficiency.attention_flash2 : fused;
  const double attn = attention == AttentionKernel::kFlash2 ? flash2 : fused;
  const double fp8 = cluster.efficiency.fp8_matmul > 0 ? cluster.efficiency.fp8_matmul : mm;
  // A power-limited clock slows the tensor cores, not HBM (GpuSpec::compute_clock_ratio).
  const double clock = cluster.gpu.compute_clock_ratio > 0 ? cluster.gpu.compute_clock_ratio : 1.0;
  const double peak = cluster.gpu.peak_bf16_flops_per_second * clock;
  KernelRates r{peak * mm, cluster.gpu.Fp8PeakFlops() * clock * fp8, peak * attn, cluster.gpu.hbm_bytes_per_second * mem,
                cluster.gpu.kernel_overhead_seconds, cluster.gpu.sm_count};
  r.attention_kernel = attention == AttentionKernel::kFlash2 ? AttentionKernel::kFlash2 : AttentionKernel::kCudnn;
  r.hopper = cluster.gpu.compute_capability / 10 == 9;
  return r;
}

KernelTime KernelTimeOf(const OperatorCost& op, const KernelRates& r, bool backward) {
  double flops = op.flops, bytes = op.bytes, kernels = op.kernels;
  double rate = 0;
  switch (op.kind) {
    case KernelKind::kMatmul:
      rate = (op.fp8 && r.fp8_matmul_flops_per_second > 0 ? r.fp8_matmul_flops_per_second : r.matmul_flops_per_second) *
             WaveUtilization(op.rows, op.cols, r.sm_count);
      if (backward) {
        flops *= kBackwardFlopsPerForward;
        bytes *= kMatmulBackwardBytesPerForward;
        kernels *= 2;
      }
      break;
    case KernelKind::kAttention:
      rate = r.attention_flops_per_second * AttentionShapeFactor(r.attention_kernel, r.hopper, op.attention_shape, r.sm_count);
      flops *= op.executed;
      if (backward) {
        flops *= kFlashBackwardFlopsPerForward;
        bytes *= kBackwardBytesPerForward;
      }
      break;
    case KernelKind::kMemory:
      if (backward) bytes = op.backward_bytes >= 0 ? op.backward_bytes : bytes * kBackwardBytesPerForward;
      break;
  }
  const double compute = rate > 0 ? flops / rate : 0.0;
  const double memory = bytes / r.hbm_bytes_per_second;
  KernelTime t;
  t.seconds = std::max(compute, memory) + r.kernel_overhead_seconds * kernels;
  t.launches = kernels;
  if (memory > compute) t.memory_bound_seconds = t.seconds;
  return t;
}

double KernelSeconds(const OperatorCost& op, const Cluster& cluster, bool backward) {
  return KernelTimeOf(op, KernelRatesOf(cluster), backward).seconds;
}

}  // namespace dsp::sim
