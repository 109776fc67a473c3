// SPDX-License-Identifier: Apache-2.0
#include "exec/optim/zero3.h"

#include <algorithm>

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "exec/model/collective_functions.h"
#include "exec/optim/parity_stats.h"

namespace dsp::exec {

struct Zero3ApplyAccess {
  // The whole local parameter from the group's chunks.
  static at::Tensor Gather(Zero3Partitions& z, const Zero3Partitions::Part& p) {
    ++z.gathers_;
    at::Tensor flat = ValueOrThrow(p.comm->AllGather(p.chunk.detach()));
    return flat.reshape({-1}).narrow(0, 0, p.numel).view(p.shape);
  }
};

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Handles through saved_data: the store outlives the step's backward, the op lives in its arena.
struct Zero3ApplyFn : torch::autograd::Function<Zero3ApplyFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& chunk, int64_t store,
                            int64_t part, int64_t op) {
    auto* z = reinterpret_cast<Zero3Partitions*>(store);
    const auto* p = reinterpret_cast<const Zero3Partitions::Part*>(part);
    const auto* f = reinterpret_cast<const WeightOp*>(op);
    ctx->saved_data["store"] = store;
    ctx->saved_data["part"] = part;
    ctx->saved_data["op"] = op;
    ctx->save_for_backward({x});
    at::Tensor w = Zero3ApplyAccess::Gather(*z, *p);
    at::Tensor y = (*f)(x, w);
    return y;  // w goes out of scope here: released after its use
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    auto* z = reinterpret_cast<Zero3Partitions*>(ctx->saved_data["store"].toInt());
    const auto* p = reinterpret_cast<const Zero3Partitions::Part*>(ctx->saved_data["part"].toInt());
    const auto* f = reinterpret_cast<const WeightOp*>(ctx->saved_data["op"].toInt());
    const at::Tensor x = ctx->get_saved_variables()[0];
    // Gathered again for backward, then released (DeepSpeed's pre-backward fetch).
    at::Tensor w = Zero3ApplyAccess::Gather(*z, *p).detach().requires_grad_(true);
    const bool x_grad = x.defined() && x.is_floating_point();
    at::Tensor xd = x_grad ? x.detach().requires_grad_(true) : x;
    at::Tensor y;
    {
      at::AutoGradMode enable(true);
      y = (*f)(xd, w);
    }
    std::vector<at::Tensor> inputs = x_grad ? std::vector<at::Tensor>{xd, w} : std::vector<at::Tensor>{w};
    variable_list g = torch::autograd::grad({y}, inputs, {grad[0]}, /*retain_graph=*/false,
                                            /*create_graph=*/false, /*allow_unused=*/true);
    at::Tensor gw = g.back().defined() ? g.back() : at::zeros_like(w);
    at::Tensor flat = at::zeros({p->padded}, gw.options());
    flat.narrow(0, 0, p->numel).copy_(gw.reshape({-1}));
    at::Tensor mine;
    if (p->wrong_reduce != nullptr) {
      ThrowIfError(p->wrong_reduce->AllReduceSum(flat));
      mine = flat.chunk(p->comm->size())[p->comm->rank()].clone();
    } else {
      mine = ValueOrThrow(p->comm->ReduceScatter(flat));
    }
    return {x_grad ? g.front() : at::Tensor(), mine, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

Zero3Partitions::Zero3Partitions(TinyModel& model, std::vector<ReduceGroup> groups, Comm* expert_reduce_fault)
    : model_(model) {
  at::NoGradGuard no_grad;
  for (const ReduceGroup& g : groups) {
    const int64_t n = g.comm->size();
    for (int i : g.params) {
      Param& param = model_.params()[i];
      Part p;
      p.param = i;
      p.comm = g.comm;
      p.divisor = g.divisor;
      if (param.expert) p.wrong_reduce = expert_reduce_fault;
      p.shape = param.local.sizes().vec();
      p.numel = param.local.numel();
      p.padded = (p.numel + n - 1) / n * n;
      at::Tensor flat = at::zeros({p.padded}, param.local.options().requires_grad(false));
      flat.narrow(0, 0, p.numel).copy_(param.local.reshape({-1}));
      p.chunk = flat.chunk(n)[g.comm->rank()].clone().set_requires_grad(true);
      index_[i] = parts_.size();
      parts_.push_back(std::move(p));
      param.local = at::Tensor();  // released: only the chunk stays
      param.zero3 = true;
    }
  }
}

at::Tensor Zero3Partitions::Apply(int param, const at::Tensor& x, WeightOp op) {
  const Part& p = parts_[index_.at(param)];
  ops_.push_back(std::move(op));
  return Zero3ApplyFn::apply(x, p.chunk, reinterpret_cast<int64_t>(this), reinterpret_cast<int64_t>(&p),
                             reinterpret_cast<int64_t>(&ops_.back()));
}

at::Tensor Zero3Partitions::ReferenceChunk(const Part& p, const at::Tensor& full) const {
  const Param& param = model_.params()[p.param];
  at::Tensor flat = at::zeros({p.padded}, full.options().requires_grad(false));
  flat.narrow(0, 0, p.numel).copy_(param.RefSlice(full).reshape({-1}));
  return flat.chunk(p.comm->size())[p.comm->rank()];
}

Status Zero3Partitions::Step(double lr, FamilyDiffs& diffs) {
  at::NoGradGuard no_grad;
  for (Part& p : parts_) {
    const Param& param = model_.params()[p.param];
    FamilyDiff& d = diffs[param.family];
    at::Tensor got = p.chunk.grad().defined() ? p.chunk.grad() / p.divisor : at::zeros_like(p.chunk);
    at::Tensor want = param.ref.grad().defined() ? ReferenceChunk(p, param.ref.grad()) : at::zeros_like(p.chunk);
    Bump(d.grad_abs, MaxAbsDiff(got, want));
    Bump(d.grad_ref, MaxAbs(want));
    p.chunk -= lr * got;
    p.chunk.mutable_grad() = at::Tensor();
  }
  for (Param& param : model_.params()) {
    if (param.ref.grad().defined()) param.ref -= lr * param.ref.grad();
    param.ref.mutable_grad() = at::Tensor();
  }
  for (const Part& p : parts_) {
    const Param& param = model_.params()[p.param];
    FamilyDiff& d = diffs[param.family];
    at::Tensor want = ReferenceChunk(p, param.ref);
    Bump(d.weight_abs, MaxAbsDiff(p.chunk, want));
    Bump(d.weight_ref, MaxAbs(want));
  }
  ops_.clear();
  gathers_ = 0;
  return Status::Ok();
}

}  // namespace dsp::exec
