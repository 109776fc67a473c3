// SPDX-License-Identifier: Apache-2.0
#include "exec/optim/data_parallel.h"

#include <algorithm>

#include "exec/model/collective_functions.h"
#include "exec/optim/parity_stats.h"

namespace dsp::exec {

DataParallelSgd::DataParallelSgd(TinyModel& model, int zero_stage, double lr, std::vector<ReduceGroup> groups,
                                 FoldingReduction folding)
    : model_(model), folding_(folding), zero_stage_(zero_stage), lr_(lr) {
  for (auto& g : groups) {
    Flat f;
    f.group = std::move(g);
    for (int i : f.group.params) {
      f.offsets.push_back(f.numel);
      f.numel += model_.params()[i].local.numel();
    }
    const int64_t n = f.group.comm->size();
    f.padded = (f.numel + n - 1) / n * n;
    if (zero_stage_ >= 1) {
      at::NoGradGuard no_grad;
      at::Tensor w = at::zeros({f.padded}, model_.dtype());
      for (size_t j = 0; j < f.group.params.size(); ++j) {
        const at::Tensor& p = model_.params()[f.group.params[j]].local;
        w.narrow(0, f.offsets[j], p.numel()).copy_(p.reshape({-1}));
      }
      f.master = w.chunk(n)[f.group.comm->rank()].clone();
    }
    flats_.push_back(std::move(f));
  }
}

// The flat gradient of a group: this rank's shard gradients, or the reference gradients narrowed to
// the same shards (what the shard gradients must equal after reduction).
at::Tensor DataParallelSgd::Gather(const Flat& f, bool reference_grads) const {
  at::Tensor flat = at::zeros({f.padded}, model_.dtype());
  for (size_t j = 0; j < f.group.params.size(); ++j) {
    const Param& p = model_.params()[f.group.params[j]];
    at::Tensor g = reference_grads ? p.RefSlice(p.ref.grad()) : p.local.grad();
    if (g.defined()) flat.narrow(0, f.offsets[j], p.local.numel()).copy_(g.reshape({-1}));
  }
  return flat;
}

void DataParallelSgd::Scatter(const Flat& f, const at::Tensor& flat) {
  for (size_t j = 0; j < f.group.params.size(); ++j) {
    at::Tensor& w = model_.params()[f.group.params[j]].local;
    w.copy_(flat.narrow(0, f.offsets[j], w.numel()).view(w.sizes()));
  }
}

// `got` and `want` cover flat positions [lo, lo + got.numel()).
void DataParallelSgd::Compare(const Flat& f, const at::Tensor& got, const at::Tensor& want, int64_t lo,
                              FamilyDiffs& diffs) const {
  const int64_t hi = lo + got.numel();
  for (size_t j = 0; j < f.group.params.size(); ++j) {
    const Param& p = model_.params()[f.group.params[j]];
    const int64_t a = std::max(lo, f.offsets[j]), b = std::min(hi, f.offsets[j] + p.local.numel());
    if (a >= b) continue;
    FamilyDiff& d = diffs[p.family];
    Bump(d.grad_abs, MaxAbsDiff(got.narrow(0, a - lo, b - a), want.narrow(0, a - lo, b - a)));
    Bump(d.grad_ref, MaxAbs(want.narrow(0, a - lo, b - a)));
  }
}

void DataParallelSgd::ReduceFolded() {
  Comm* tp = folding_.tp;
  const double n = static_cast<double>(tp->size());
  for (Param& p : model_.params()) {
    if (!p.local.defined() || !p.local.grad().defined()) continue;
    at::Tensor g = p.local.mutable_grad();
    if (p.expert) {
      // The restore all-gather's backward left a tp factor on every expert gradient.
      if (!folding_.skip_tp_cancel) g.div_(n);
    } else if (p.shard.dim < 0 && p.shard.parts == 1) {
      ThrowIfError(tp->AllReduceSum(g));
      if (!(p.family == ParamFamily::kRouter && folding_.sum_router_grads)) g.div_(n);
    }
    // tp-sharded (column/row) parameters: SKIP, their collectives already ran in forward/backward.
  }
}

Status DataParallelSgd::Step(FamilyDiffs& diffs) {
  at::NoGradGuard no_grad;
  try {
    if (folding_.tp != nullptr) ReduceFolded();
    for (Flat& f : flats_) {
      Comm* comm = f.group.comm;
      const int64_t n = comm->size(), part = f.padded / n, lo = comm->rank() * part;
      at::Tensor grad = Gather(f, false);
      at::Tensor want = Gather(f, true);
      if (zero_stage_ == 2) {
        at::Tensor mine = ValueOrThrow(comm->ReduceScatter(grad)) / f.group.divisor;
        Compare(f, mine, want.narrow(0, lo, part), lo, diffs);
        f.master -= lr_ * mine;
      } else {
        ThrowIfError(comm->AllReduceSum(grad));
        grad /= f.group.divisor;
        Compare(f, grad, want, 0, diffs);
        if (zero_stage_ == 1) f.master -= lr_ * grad.narrow(0, lo, part);
      }
      if (zero_stage_ == 0) {
        for (size_t j = 0; j < f.group.params.size(); ++j) {
          at::Tensor& p = model_.params()[f.group.params[j]].local;
          p -= lr_ * grad.narrow(0, f.offsets[j], p.numel()).view(p.sizes());
        }
      } else {
        Scatter(f, ValueOrThrow(comm->AllGather(f.master)));
      }
    }
  } catch (const CollectiveError& e) {
    return Error{e.what()};
  }
  for (Param& p : model_.params()) {
    if (p.ref.grad().defined()) p.ref -= lr_ * p.ref.grad();
    p.ref.mutable_grad() = at::Tensor();
    if (!p.local.defined()) continue;
    p.local.mutable_grad() = at::Tensor();
    FamilyDiff& d = diffs[p.family];
    at::Tensor want = p.RefSlice(p.ref);
    Bump(d.weight_abs, MaxAbsDiff(p.local, want));
    Bump(d.weight_ref, MaxAbs(want));
  }
  return Status::Ok();
}

}  // namespace dsp::exec
