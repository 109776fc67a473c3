// SPDX-License-Identifier: Apache-2.0
// ParameterTensors and CountParameters: two sinks for the one walk in param_walk.h.
#include <algorithm>
#include <string>
#include <utility>

#include "core/model/model_spec.h"
#include "core/model/param_walk.h"

namespace dsp {

int64_t ParamTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

using model_internal::Dims;

class ListSink {
 public:
  template <class NameFn>
  void Tensor(NameFn&& name, Dims shape, ParamFamily family, int layer, int expert) {
    if (outside && !keep_outside) return;
    Keep(name, shape, family, layer, expert);
  }
  template <class Body>
  void Experts(int64_t count, Body&& body) {
    for (int64_t e = 0; e < count; ++e) body(static_cast<int>(e));
  }
  template <class Body>
  void Layers(const ModelSpec& spec, Body&& body) {
    if (only_layer == kAllLayers) {
      for (int64_t i = 0; i < spec.num_hidden_layers; ++i) body(i);
    } else if (only_layer >= 0 && only_layer < spec.num_hidden_layers) {
      outside = false;
      body(only_layer);
      outside = true;
    }
  }
  template <class NameFn>
  void Keep(NameFn&& name, Dims shape, ParamFamily family, int layer, int expert) {
    out.push_back(ParamTensor{name(), std::vector<int64_t>(shape), family, layer, expert});
  }
  static constexpr int64_t kAllLayers = -1, kNoLayer = -2;
  int64_t only_layer = kAllLayers;  // or one layer index, or kNoLayer
  bool outside = true;              // the walk is outside the layers
  bool keep_outside = true;         // list the embedding, final norm and head
  std::vector<ParamTensor> out;
};

// Counts one representative of every repeated structure, times how often it repeats.
class CountSink {
 public:
  template <class NameFn>
  void Tensor(NameFn&&, Dims shape, ParamFamily family, int, int) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    counts.by_family[family] += n * times_;
    counts.largest_tensor = std::max(counts.largest_tensor, n);
  }
  template <class Body>
  void Experts(int64_t count, Body&& body) {
    const int64_t saved = times_;
    times_ *= count;
    body(0);
    times_ = saved;
  }
  template <class Body>
  void Layers(const ModelSpec& spec, Body&& body) {
    for (const ModelSpec::LayerRun& run : spec.LayerKinds(0, spec.num_hidden_layers)) {
      const int64_t saved = times_;
      times_ *= run.count;
      body(run.representative);
      times_ = saved;
    }
  }
  ParamCounts counts;

 private:
  int64_t times_ = 1;
};

// One MTP module of the checkpoint: a decoder layer (full attention; MoE where the model's layers
// are) plus enorm/hnorm (qwen: pre_fc_norm_embedding/hidden), the [h, 2h] projection of the
// concatenated embedding and hidden state (eh_proj; qwen: fc) and a final norm. DeepSeek-V3's
// also stores its own copies of embed_tokens and the head (shared_head.head; V3 report §2.2 and
// README_WEIGHTS.md); qwen's do not (mtp_use_dedicated_embeddings false).
int64_t MtpParams(const ModelSpec& s) {
  if (s.mtp_layers <= 0) return 0;
  ModelSpec one = s;
  one.num_hidden_layers = 1;
  one.first_dense_layers = 0;
  one.mlp_only_layers.clear();
  one.decoder_sparse_step = 1;
  one.layer_attention = {AttentionKind::kFull};
  one.mtp_layers = 0;
  CountSink sink;
  model_internal::ParamWalker<CountSink>(one, sink).Walk();
  int64_t layer = 0;
  for (const auto& [family, n] : sink.counts.by_family) {
    if (family != ParamFamily::kEmbedding && family != ParamFamily::kLmHead) layer += n;
  }
  layer -= s.hidden_size;  // the model's final norm is not part of the layer
  const int64_t h = s.hidden_size, v = s.vocab_size;
  int64_t extra = 3 * h + 2 * h * h;
  if (s.family == ModelFamily::kDeepSeek) extra += 2 * v * h;
  return s.mtp_layers * (layer + extra);
}

}  // namespace

std::vector<ParamTensor> ParameterTensors(const ModelSpec& spec) {
  ListSink sink;
  model_internal::ParamWalker<ListSink>(spec, sink).Walk();
  return std::move(sink.out);
}

std::vector<ParamTensor> LayerParameterTensors(const ModelSpec& spec, int64_t layer) {
  ListSink sink;
  sink.only_layer = layer;
  sink.keep_outside = false;
  model_internal::ParamWalker<ListSink>(spec, sink).Walk();
  return std::move(sink.out);
}

std::vector<ParamTensor> NonLayerParameterTensors(const ModelSpec& spec) {
  ListSink sink;
  sink.only_layer = ListSink::kNoLayer;
  model_internal::ParamWalker<ListSink>(spec, sink).Walk();
  return std::move(sink.out);
}

ParamCounts CountParameters(const ModelSpec& spec) {
  CountSink sink;
  for (ParamFamily f : kAllParamFamilies) sink.counts.by_family[f] = 0;
  model_internal::ParamWalker<CountSink>(spec, sink).Walk();
  ParamCounts c = std::move(sink.counts);
  for (const auto& [family, n] : c.by_family) c.total += n;
  // Every MoE layer has the same E experts of which top-k run: the idle share of the routed
  // experts is (E - k) / E of them (exact: the routed count is a multiple of E).
  const int64_t routed = c.by_family[ParamFamily::kRoutedExperts];
  const int64_t idle = std::max<int64_t>(spec.num_experts - spec.num_experts_per_tok, 0);
  c.active_per_token =
      c.total - (spec.num_experts > 0 ? routed / spec.num_experts * idle : 0);
  c.mtp = MtpParams(spec);
  return c;
}

}  // namespace dsp
