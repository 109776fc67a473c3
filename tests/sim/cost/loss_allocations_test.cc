// SPDX-License-Identifier: Apache-2.0
// The loss's logits-sized tensors replayed through the caching allocator: the replay's allocated
// peak is what OutputLayerActivationBytes prices, and the freed 16-bit logits stay cached beside
// the fp32 gradients when the training loop drops them before backward (torchtitan train.py at
// 9dec370: `del pred` before `loss.backward()`).
#include "sim/cost/loss_allocations.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/sim/cost/memory_test_util.h"

namespace dsp::sim {
namespace {

// torchtitan's Llama 3.1 8B runs: 2 x 8,192 tokens a rank, no TP, transformers' eager modules.
LayerShape LossShape() {
  LayerShape s = testing::Llama3_8BLayer();
  s.seq_len = 8192;
  s.micro_batch = 2;
  s.hf_eager = true;
  return s;
}

constexpr int64_t kVocab = 128256;

// The largest total the events hold at once, per logit.
double AllocatedPeakPerLogit(const LayerShape& s) {
  const double logits = LocalLogits(s, kVocab);
  CachingAllocatorReplay replay(false);
  replay.Run(LossPhaseEvents(s, logits));
  return static_cast<double>(replay.peak_allocated()) / logits;
}

// What OutputLayerActivationBytes prices per logit beyond the hidden-size part.
double PricedPerLogit(const LayerShape& s) {
  LayerShape no_vocab = s;
  const double hidden_part = OutputLayerActivationBytes(no_vocab, 0);
  return (OutputLayerActivationBytes(s, kVocab) - hidden_part) / LocalLogits(s, kVocab);
}

TEST(LossAllocationsTest, TheReplaysPeakIsWhatTheOutputLayerPrices) {
  std::vector<LayerShape> shapes;
  LayerShape s = LossShape();
  shapes.push_back(s);                           // transformers' ForCausalLMLoss: 14 bytes a logit
  s.logits_freed_before_backward = true;         // torchtitan's loop: 12
  shapes.push_back(s);
  LayerShape tp = s;
  tp.tp = 8;
  tp.megatron_sp = true;
  tp.loss_parallel = true;                       // DTensor's loss_parallel: 16
  shapes.push_back(tp);
  LayerShape compiled = LossShape();
  compiled.compiled_loss = true;                 // Inductor's fused loss: 4
  shapes.push_back(compiled);
  LayerShape bf16 = LossShape();
  bf16.bf16_loss = true;                         // no upcast: 8
  shapes.push_back(bf16);
  bf16.logits_freed_before_backward = true;      // ... 6 with the logits dropped
  shapes.push_back(bf16);
  LayerShape pipeline = tp;
  pipeline.logits_freed_before_backward = false;  // loss_parallel in a pipeline stage: 18
  shapes.push_back(pipeline);
  // Within a block's unsplit remainder (under 1 MiB, which PyTorch counts as allocated too).
  for (const LayerShape& shape : shapes) {
    EXPECT_NEAR(AllocatedPeakPerLogit(shape), PricedPerLogit(shape), 2.0 * 1024 * 1024 / LocalLogits(shape, kVocab))
        << shape.logits_freed_before_backward << shape.loss_parallel << shape.compiled_loss << shape.bf16_loss;
  }
  EXPECT_NEAR(AllocatedPeakPerLogit(tp), 16, 0.01);
  EXPECT_NEAR(AllocatedPeakPerLogit(pipeline), 18, 0.01);
  EXPECT_NEAR(AllocatedPeakPerLogit(bf16), 6, 0.01);
  EXPECT_DOUBLE_EQ(LocalLogits(tp, kVocab), 8192.0 * 2 * kVocab / 8);
}

TEST(LossAllocationsTest, FreedLogitsStayCachedBesideTheFp32Gradients) {
  for (const bool expandable : {false, true}) {
    LayerShape s = LossShape();
    const double logits = LocalLogits(s, kVocab);
    // A loop that holds the model output keeps the logits through backward: nothing is left over.
    EXPECT_NEAR(LossPhaseCachedBytes(s, kVocab, expandable), 0, 64e6) << expandable;
    // Dropped before backward, their 2-byte block is too small for the 4-byte gradients.
    s.logits_freed_before_backward = true;
    EXPECT_NEAR(LossPhaseCachedBytes(s, kVocab, expandable), 2 * logits, 64e6) << expandable;
    s.tp = 8;
    s.megatron_sp = true;
    s.loss_parallel = true;
    EXPECT_NEAR(LossPhaseCachedBytes(s, kVocab, expandable), 2 * logits / 8, 64e6) << expandable;
    // Losses whose requests the logits' block can serve leave nothing behind.
    LayerShape compiled = LossShape();
    compiled.logits_freed_before_backward = true;
    compiled.compiled_loss = true;
    EXPECT_NEAR(LossPhaseCachedBytes(compiled, kVocab, expandable), 0, 64e6) << expandable;
    LayerShape bf16 = compiled;
    bf16.compiled_loss = false;
    bf16.bf16_loss = true;
    EXPECT_NEAR(LossPhaseCachedBytes(bf16, kVocab, expandable), 0, 64e6) << expandable;
  }
}

TEST(LossAllocationsTest, NoLogitsNoReplay) {
  LayerShape s = LossShape();
  s.fused_loss = true;  // Liger's chunks
  EXPECT_TRUE(LossPhaseEvents(s, LocalLogits(s, kVocab)).empty());
  s = LossShape();
  s.hf_eager = false;   // Megatron's fused vocab-parallel cross-entropy: not replayed
  EXPECT_TRUE(LossPhaseEvents(s, LocalLogits(s, kVocab)).empty());
  EXPECT_EQ(LossPhaseCachedBytes(s, kVocab, false), 0);
}

}  // namespace
}  // namespace dsp::sim

namespace dsp::sim {
namespace {

// torchtitan's TP: the last layer's row-parallel partial sum, and without AsyncTP funcol's
// contiguous copy of it (full-sequence blocks, T x h in bf16), are freed within the layer; lm_head's
// input gather (a buffer, then the saved whole-sequence input) reuses them, and the buffer is freed
// again. The loss's 4- and 8-byte requests are larger: one such block stays unused through its
// peak beside the logits'. The 70B run on 256 GPUs: 16 x 8,192 tokens, h = 8,192: 2.15 GB.
TEST(LossAllocationsTest, TorchtitansTpPartialSumsStayCachedThroughTheLoss) {
  LayerShape s = LossShape();
  s.seq_len = 8192;
  s.micro_batch = 16;
  s.hidden = 8192;
  s.tp = 8;
  s.megatron_sp = true;
  s.loss_parallel = true;
  s.logits_freed_before_backward = true;
  const double logits = LocalLogits(s, kVocab);
  const double block = 2.0 * 16 * 8192 * 8192;
  EXPECT_NEAR(LossPhaseCachedBytes(s, kVocab, false), 2 * logits, 64e6);
  s.tp_partial_blocks = 2;  // funcol: the partial sum and its contiguous copy
  EXPECT_NEAR(LossPhaseCachedBytes(s, kVocab, false), 2 * logits + 2 * block, 64e6);
  s.lm_head_input_gathered = true;  // the gather takes both, and frees its buffer
  EXPECT_NEAR(LossPhaseCachedBytes(s, kVocab, false), 2 * logits + block, 64e6);
  s.tp_partial_blocks = 1;  // AsyncTP: the stacked partials alone; the gather makes the second block
  EXPECT_NEAR(LossPhaseCachedBytes(s, kVocab, false), 2 * logits + block, 64e6);
  // The replay's allocated peak is still the loss's, beside lm_head's saved input.
  CachingAllocatorReplay replay(false);
  replay.Run(LossPhaseEvents(s, logits));
  EXPECT_NEAR((static_cast<double>(replay.peak_allocated()) - block) / logits, 16, 0.01);
}

}  // namespace
}  // namespace dsp::sim
