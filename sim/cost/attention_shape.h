// SPDX-License-Identifier: Apache-2.0
// How a fused attention kernel's speed depends on the shape it runs: its head dimension, the
// length of the key loop each query block walks (the sequence, or the window), and how many
// thread blocks it has to spread over the SMs. The cluster's `attention` and `attention_flash2`
// efficiencies are the rates at the reference shape (head dim 128, causal, 4K tokens, a full GPU);
// this is the factor every other shape runs at relative to it. Formulas and sources:
// docs/cost-model.md "Attention by shape".
#pragma once

#include "sim/frameworks/attention_kernel.h"

namespace dsp::sim {

/// The shape one fused attention call runs (0 in a field = not known, no adjustment for it).
struct AttentionShape {
  double head_dim = 0;    // mean of the query-key and value head dimensions
  double key_length = 0;  // keys a query block walks: the sequence, or a sliding window
  double blocks = 0;      // thread blocks of one call: sequences x heads x query blocks of 128
};

/// The reference shape the presets' attention efficiencies describe.
inline constexpr double kReferenceHeadDim = 128, kReferenceKeyLength = 4096;

/// Rate of `kernel` on `shape` relative to the reference shape on the same GPU.
///  - Head dimension and key length, on Hopper only (`hopper`): FlashAttention-3 (Shah et al.
///    2024, arXiv 2407.08608, Fig. 5, causal forward on an H100 SXM5, BF16, head dim 64/128/256,
///    512 to 16K tokens at 16K tokens a batch) measures FlashAttention-2's and cuDNN's TFLOP/s;
///    the factor is the table's value at the shape over its value at (128, 4K), interpolated in
///    head dim and log2 of the length, held at the table's ends. Other GPUs: 1 (no such table).
///  - Fill, on every GPU: blocks run in waves over `sm_count` SMs, one block an SM, and a call
///    with fewer blocks than SMs, or a partial last wave, leaves SMs idle.
double AttentionShapeFactor(AttentionKernel kernel, bool hopper, const AttentionShape& shape, int sm_count);

}  // namespace dsp::sim
