// SPDX-License-Identifier: Apache-2.0
#include "exec/model/collective_functions.h"

#include <torch/csrc/autograd/custom_function.h>

namespace dsp::exec {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

Comm* CommOf(AutogradContext* ctx) { return reinterpret_cast<Comm*>(ctx->saved_data["comm"].toInt()); }
int64_t Handle(Comm* c) { return reinterpret_cast<int64_t>(c); }

at::Tensor AllReduced(const at::Tensor& t, Comm* comm) {
  at::Tensor out = t.contiguous().clone();
  ThrowIfError(comm->AllReduceSum(out));
  return out;
}

// [B, S/P, N, d] -> [B, S, N/P, d]: head chunk j goes to member j, which stacks the sequence chunks
// it receives in member order (member i holds sequence chunk i).
at::Tensor SeqToHeadsImpl(const at::Tensor& x, Comm* sp) {
  const int64_t p = sp->size(), b = x.size(0), s = x.size(1), n = x.size(2), d = x.size(3);
  at::Tensor send = x.reshape({b, s, p, n / p, d}).permute({2, 0, 1, 3, 4}).contiguous();  // [P, B, S/P, N/P, d]
  at::Tensor recv = ValueOrThrow(sp->AllToAll(send, {}, {}));                              // [P(src), B, S/P, N/P, d]
  return recv.permute({1, 0, 2, 3, 4}).reshape({b, p * s, n / p, d});
}

// [B, S, N/P, d] -> [B, S/P, N, d].
at::Tensor HeadsToSeqImpl(const at::Tensor& x, Comm* sp) {
  const int64_t p = sp->size(), b = x.size(0), s = x.size(1), n = x.size(2), d = x.size(3);
  at::Tensor send = x.reshape({b, p, s / p, n, d}).permute({1, 0, 2, 3, 4}).contiguous();  // [P, B, S/P, N/P, d]
  at::Tensor recv = ValueOrThrow(sp->AllToAll(send, {}, {}));                              // [P(src head chunk), ...]
  return recv.permute({1, 2, 0, 3, 4}).reshape({b, s / p, p * n, d});
}

struct CopyToTpFn : torch::autograd::Function<CopyToTpFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Comm* tp, bool skip) {
    ctx->saved_data["comm"] = Handle(tp);
    ctx->saved_data["skip"] = skip;
    return x.clone();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    at::Tensor g = ctx->saved_data["skip"].toBool() ? grad[0] : AllReduced(grad[0], CommOf(ctx));
    return {g, at::Tensor(), at::Tensor()};
  }
};

struct ReduceFromTpFn : torch::autograd::Function<ReduceFromTpFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Comm* tp) { return AllReduced(x, tp); }
  static variable_list backward(AutogradContext*, variable_list grad) { return {grad[0], at::Tensor()}; }
};

struct SeqToHeadsFn : torch::autograd::Function<SeqToHeadsFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Comm* sp, bool reverse) {
    ctx->saved_data["comm"] = Handle(sp);
    ctx->saved_data["reverse"] = reverse;
    return reverse ? HeadsToSeqImpl(x, sp) : SeqToHeadsImpl(x, sp);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    Comm* sp = CommOf(ctx);
    at::Tensor g = ctx->saved_data["reverse"].toBool() ? SeqToHeadsImpl(grad[0], sp) : HeadsToSeqImpl(grad[0], sp);
    return {g, at::Tensor(), at::Tensor()};
  }
};

struct AllToAllRowsFn : torch::autograd::Function<AllToAllRowsFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Comm* group, std::vector<int64_t> send,
                            std::vector<int64_t> recv) {
    ctx->saved_data["comm"] = Handle(group);
    ctx->saved_data["send"] = send;
    ctx->saved_data["recv"] = recv;
    return ValueOrThrow(group->AllToAll(x, send, recv));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    auto send = ctx->saved_data["send"].toIntVector();
    auto recv = ctx->saved_data["recv"].toIntVector();
    return {ValueOrThrow(CommOf(ctx)->AllToAll(grad[0], recv, send)), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct RestoreRowsFn : torch::autograd::Function<RestoreRowsFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& rows, Comm* tp, std::vector<int64_t> counts) {
    ctx->saved_data["comm"] = Handle(tp);
    ctx->saved_data["counts"] = counts;
    // An all-gather of uneven row counts is an all-to-all that sends the same rows to everyone.
    const int n = tp->size();
    std::vector<int64_t> send(n, rows.size(0));
    return ValueOrThrow(tp->AllToAll(rows.repeat({n, 1}), send, counts));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    Comm* tp = CommOf(ctx);
    auto counts = ctx->saved_data["counts"].toIntVector();
    at::Tensor g = AllReduced(grad[0], tp);
    int64_t offset = 0;
    for (int i = 0; i < tp->rank(); ++i) offset += counts[i];
    return {g.narrow(0, offset, counts[tp->rank()]).contiguous(), at::Tensor(), at::Tensor()};
  }
};

struct TpMeanGradFn : torch::autograd::Function<TpMeanGradFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Comm* tp) {
    ctx->saved_data["comm"] = Handle(tp);
    return x.clone();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    Comm* tp = CommOf(ctx);
    return {AllReduced(grad[0], tp) / static_cast<double>(tp->size()), at::Tensor()};
  }
};

}  // namespace

at::Tensor RestoreRows(const at::Tensor& rows, Comm* tp, std::vector<int64_t>* counts) {
  at::Tensor mine = at::full({1, 1}, static_cast<float>(rows.size(0)));
  at::Tensor all = ValueOrThrow(tp->AllGather(mine));
  counts->clear();
  for (int i = 0; i < tp->size(); ++i) counts->push_back(static_cast<int64_t>(all[i][0].item<float>()));
  return RestoreRowsFn::apply(rows, tp, *counts);
}

at::Tensor TpMeanGrad(const at::Tensor& x, Comm* tp) {
  if (tp == nullptr || tp->size() == 1) return x;
  return TpMeanGradFn::apply(x, tp);
}

void ThrowIfError(const Status& s) {
  if (!s.ok()) throw CollectiveError(s.error().message);
}

at::Tensor ValueOrThrow(Result<at::Tensor> r) {
  if (!r.ok()) throw CollectiveError(r.error().message);
  return std::move(r).value();
}

at::Tensor CopyToTp(const at::Tensor& x, Comm* tp, bool skip_backward_allreduce) {
  if (tp == nullptr || tp->size() == 1) return x;
  return CopyToTpFn::apply(x, tp, skip_backward_allreduce);
}

at::Tensor ReduceFromTp(const at::Tensor& x, Comm* tp) {
  if (tp == nullptr || tp->size() == 1) return x;
  return ReduceFromTpFn::apply(x, tp);
}

at::Tensor SeqToHeads(const at::Tensor& x, Comm* sp) {
  if (sp == nullptr || sp->size() == 1) return x;
  return SeqToHeadsFn::apply(x, sp, false);
}

at::Tensor HeadsToSeq(const at::Tensor& x, Comm* sp) {
  if (sp == nullptr || sp->size() == 1) return x;
  return SeqToHeadsFn::apply(x, sp, true);
}

at::Tensor AllToAllRows(const at::Tensor& x, Comm* group, const std::vector<int64_t>& send_rows,
                        const std::vector<int64_t>& recv_rows) {
  if (group == nullptr || group->size() == 1) return x;
  return AllToAllRowsFn::apply(x, group, send_rows, recv_rows);
}

}  // namespace dsp::exec
