// SPDX-License-Identifier: Apache-2.0
#include "exec/model/checkpoint.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

namespace dsp::exec {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct CheckpointFn : torch::autograd::Function<CheckpointFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t fn, bool offload, int64_t counters) {
    ctx->saved_data["fn"] = fn;
    ctx->saved_data["offload"] = offload;
    ctx->saved_data["counters"] = counters;
    auto* c = reinterpret_cast<CheckpointCounters*>(counters);
    // cpu_checkpointing: the kept input moves to a host buffer of its own (on a GPU run a
    // device-to-host copy; here, where everything is host memory, a separate copy), so the layer's
    // device activations can go.
    ctx->save_for_backward({offload ? x.detach().to(at::kCPU).clone() : x.detach()});
    if (offload && c != nullptr) ++c->offloaded;
    return (*reinterpret_cast<const LayerFn*>(fn))(x);  // autograd is off inside forward()
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto* fn = reinterpret_cast<const LayerFn*>(ctx->saved_data["fn"].toInt());
    auto* c = reinterpret_cast<CheckpointCounters*>(ctx->saved_data["counters"].toInt());
    at::Tensor kept = ctx->get_saved_variables()[0];
    if (ctx->saved_data["offload"].toBool()) kept = kept.clone();  // back from the host copy
    at::Tensor x = kept.detach().requires_grad_(true);
    at::Tensor y;
    {
      at::AutoGradMode enable(true);
      y = (*fn)(x);
    }
    if (c != nullptr) ++c->recomputed;
    // Accumulates into the layer's parameters' .grad, as the reentrant checkpoint does.
    torch::autograd::backward({y}, {grad[0]});
    return {x.grad(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor CheckpointLayer(const at::Tensor& x, const LayerFn* fn, bool cpu_checkpointing,
                           CheckpointCounters* counters) {
  return CheckpointFn::apply(x, reinterpret_cast<int64_t>(fn), cpu_checkpointing,
                             reinterpret_cast<int64_t>(counters));
}

}  // namespace dsp::exec
