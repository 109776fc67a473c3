// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/attention_shape.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace dsp::sim {
namespace {

// FlashAttention-3 (Shah et al. 2024, arXiv 2407.08608), Fig. 5: causal attention forward speed,
// TFLOP/s on an H100 80GB SXM5, BF16, at 512, 1K, 2K, 4K, 8K and 16K tokens (16K tokens a batch,
// 2048 / head dim heads), for head dim 64, 128 and 256.
constexpr std::array<double, 3> kHeadDims = {64, 128, 256};
constexpr int kLengths = 6;  // 512 * 2^i
using Curve = std::array<double, kLengths>;
constexpr std::array<Curve, 3> kFlash2 = {{{180, 229, 262, 284, 295, 299},
                                           {191, 260, 298, 319, 333, 335},
                                           {208, 251, 278, 293, 297, 298}}};
constexpr std::array<Curve, 3> kCudnn = {{{225, 288, 334, 363, 379, 388},
                                          {315, 410, 484, 518, 529, 539},
                                          {308, 391, 450, 483, 497, 509}}};

// Linear interpolation in log2(length / 512), held at the table's ends.
double AtLength(const Curve& curve, double length) {
  const double x = std::clamp(std::log2(std::max(length, 1.0) / 512.0), 0.0, static_cast<double>(kLengths - 1));
  const int i = std::min(static_cast<int>(x), kLengths - 2);
  const double t = x - i;
  return curve[i] * (1 - t) + curve[i + 1] * t;
}

// Linear interpolation in head dim between the table's rows, held at its ends.
double AtShape(const std::array<Curve, 3>& table, double head_dim, double length) {
  const double d = std::clamp(head_dim, kHeadDims.front(), kHeadDims.back());
  const int i = d <= kHeadDims[1] ? 0 : 1;
  const double t = (d - kHeadDims[i]) / (kHeadDims[i + 1] - kHeadDims[i]);
  return AtLength(table[i], length) * (1 - t) + AtLength(table[i + 1], length) * t;
}

// Share of the SMs busy over a call's waves of blocks, one block an SM.
double Fill(double blocks, int sm_count) {
  if (blocks <= 0 || sm_count <= 0) return 1.0;
  const double waves = std::ceil(blocks / sm_count);
  return blocks / (waves * sm_count);
}

// The blocks of the measurements behind the table: 16K tokens in query blocks of 128 over
// 2048 / 128 = 16 heads.
constexpr double kReferenceBlocks = 16384.0 / 128.0 * 16.0;

}  // namespace

double AttentionShapeFactor(AttentionKernel kernel, bool hopper, const AttentionShape& shape, int sm_count) {
  double factor = 1.0;
  if (hopper && shape.head_dim > 0 && shape.key_length > 0) {
    const bool flash2 = kernel == AttentionKernel::kFlash2;
    static const double reference_flash2 = AtShape(kFlash2, kReferenceHeadDim, kReferenceKeyLength);
    static const double reference_cudnn = AtShape(kCudnn, kReferenceHeadDim, kReferenceKeyLength);
    factor = AtShape(flash2 ? kFlash2 : kCudnn, shape.head_dim, shape.key_length) /
             (flash2 ? reference_flash2 : reference_cudnn);
  }
  if (shape.blocks > 0) factor *= Fill(shape.blocks, sm_count) / Fill(kReferenceBlocks, sm_count);
  return factor;
}

}  // namespace dsp::sim
