// SPDX-License-Identifier: Apache-2.0
// The tiny decoder `ds-plan run` trains: the model input's architecture (dense or MoE, GQA, top-k,
// renormalised top-k) at a size a 2-core CPU runs in milliseconds, with every width chosen so that
// the plan's tp / sp / ep sizes divide what they shard.
#pragma once

#include <cstdint>
#include <string>

#include "core/layout/parallel_sizes.h"
#include "core/model/model_spec.h"
#include "core/util/result.h"

namespace dsp::exec {

struct TinyConfig {
  std::string model_type;  // copied from the model input
  int64_t layers = 2;
  int64_t hidden = 32;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t head_dim = 8;
  int64_t intermediate = 64;  // dense MLP width
  int64_t vocab = 96;
  int64_t experts = 0;        // 0: dense model
  int64_t top_k = 0;
  int64_t expert_intermediate = 0;
  bool norm_topk_prob = false;
  int64_t seq_len = 16;       // tokens per sample
  int64_t micro_batch = 2;    // samples per data-parallel replica per step
  double rms_eps = 1e-6;

  bool is_moe() const { return experts > 0; }
};

// Scales `model` down. Widths are multiples of what shards them (heads and kv heads of tp and sp,
// MLP widths of tp, experts of ep, the sequence of sp); errors say which size cannot be honoured.
// Decoder layers: 2, or one per pipeline stage when there are more; `layers` > 0 asks for that
// many instead (a checkpoint's), which the pipeline stages must divide.
Result<TinyConfig> MakeTinyConfig(const ModelSpec& model, const ParallelSizes& sizes, int64_t micro_batch,
                                  int64_t layers = 0);

// The model used without --model: a llama-like decoder, or a qwen3_moe-like one when `moe`.
ModelSpec DefaultTinyModel(bool moe);

}  // namespace dsp::exec
