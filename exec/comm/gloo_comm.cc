// SPDX-License-Identifier: Apache-2.0
// Gloo backend (CPU) over c10d::ProcessGroupGloo, one process group per rank list on its own
// PrefixStore. Gloo 1.13 lacks reduce_scatter, _allgather_base and list-form alltoall
// (measured on torch 1.13's ProcessGroupGloo), so: reduce-scatter = alltoall_base + local sum, all-gather = list-form
// allgather into chunk views of one output buffer, all-to-all = alltoall_base with split sizes.
#include <map>
#include <mutex>
#include <sstream>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "exec/comm/comm.h"

namespace dsp::exec {
namespace {

class SelfComm final : public Comm {
 public:
  SelfComm(const std::string& name, int global_rank) : Comm(name, {global_rank}, 0) {}
  Status AllReduceSum(at::Tensor&) override { return Status::Ok(); }
  Result<at::Tensor> AllGather(const at::Tensor& t) override { return t.clone(); }
  Result<at::Tensor> ReduceScatter(const at::Tensor& t) override { return t.clone(); }
  Result<at::Tensor> AllToAll(const at::Tensor& t, const std::vector<int64_t>&, const std::vector<int64_t>&) override {
    return t.clone();
  }
  Status Broadcast(at::Tensor&, int) override { return Status::Ok(); }
  Status Barrier() override { return Status::Ok(); }
  std::string Algorithm(const std::string&) const override { return "local copy (group of one)"; }
};

// Which Gloo collectives take bfloat16 tensors, asked of this LibTorch at runtime: each op once on
// a one-rank ProcessGroupGloo over an in-process HashStore (no peer, no network), a thrown error
// meaning "unsupported". The answer is the same on every rank of a run (same library).
std::map<std::string, bool> ProbeGlooBf16() {
  std::map<std::string, bool> ok;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
  try {
    auto store = c10::make_intrusive<c10d::HashStore>();
    auto opts = c10d::ProcessGroupGloo::Options::create(std::chrono::milliseconds(10000));
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    opts->threads = 1;
    pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, 0, 1, opts);
  } catch (const std::exception&) {
    return {{"all_reduce", false}, {"all_gather", false}, {"all_to_all", false}, {"broadcast", false}};
  }
  auto attempt = [&](const std::string& op, auto&& f) {
    try {
      f();
      ok[op] = true;
    } catch (const std::exception&) {
      ok[op] = false;
    }
  };
  const auto bf16 = at::TensorOptions().dtype(at::kBFloat16);
  attempt("all_reduce", [&] {
    std::vector<at::Tensor> v{at::ones({4}, bf16)};
    pg->allreduce(v)->wait();
  });
  attempt("all_gather", [&] {
    std::vector<std::vector<at::Tensor>> outs{{at::empty({4}, bf16)}};
    std::vector<at::Tensor> ins{at::ones({4}, bf16)};
    pg->allgather(outs, ins)->wait();
  });
  attempt("all_to_all", [&] {
    at::Tensor in = at::ones({4}, bf16), out = at::empty({4}, bf16);
    std::vector<int64_t> none;
    pg->alltoall_base(out, in, none, none)->wait();
  });
  attempt("broadcast", [&] {
    std::vector<at::Tensor> v{at::ones({4}, bf16)};
    pg->broadcast(v)->wait();
  });
  return ok;
}

const std::map<std::string, bool>& GlooBf16Table() {
  static const std::map<std::string, bool> table = ProbeGlooBf16();
  return table;
}

// bf16 tensors cross an op Gloo lacks bf16 for as fp32 (exact: fp32 holds every bf16 value; sums
// are rounded back to bf16 once, at the end).
bool Widen(const at::Tensor& t, const std::string& op) {
  return t.scalar_type() == at::kBFloat16 && !GlooBf16Table().at(op);
}

class GlooComm final : public Comm {
 public:
  GlooComm(const CommContext& ctx, const std::string& name, std::vector<int> ranks, int group_rank,
           c10::intrusive_ptr<c10d::ProcessGroupGloo> pg)
      : Comm(name, std::move(ranks), group_rank), ctx_(ctx), pg_(std::move(pg)) {}

  Status AllReduceSum(at::Tensor& t) override {
    const bool widen = Widen(t, "all_reduce");
    return Guard("all_reduce", [&] {
      std::vector<at::Tensor> v{widen ? t.to(at::kFloat) : t};
      pg_->allreduce(v)->wait();
      if (widen) t.copy_(v[0]);
    });
  }

  Result<at::Tensor> AllGather(const at::Tensor& t) override {
    if (Widen(t, "all_gather")) {
      auto r = AllGather(t.to(at::kFloat));
      if (!r.ok()) return r;
      return r->to(at::kBFloat16);
    }
    at::Tensor in = t.dim() == 0 ? t.reshape({1}) : t.contiguous();
    std::vector<int64_t> shape = in.sizes().vec();
    shape[0] *= size();
    at::Tensor out = at::empty(shape, in.options());
    Status s = Guard("all_gather", [&] {
      std::vector<std::vector<at::Tensor>> outs(1);
      for (auto& chunk : out.chunk(size(), 0)) outs[0].push_back(chunk);
      std::vector<at::Tensor> ins{in};
      pg_->allgather(outs, ins)->wait();
    });
    if (!s.ok()) return s.error();
    return out;
  }

  Result<at::Tensor> ReduceScatter(const at::Tensor& t) override {
    if (Widen(t, "all_to_all")) {
      auto r = ReduceScatter(t.to(at::kFloat));
      if (!r.ok()) return r;
      return r->to(at::kBFloat16);
    }
    at::Tensor in = t.contiguous();
    at::Tensor recv = at::empty_like(in);
    Status s = Guard("reduce_scatter", [&] {
      std::vector<int64_t> none;
      pg_->alltoall_base(recv, in, none, none)->wait();
    });
    if (!s.ok()) return s.error();
    // recv holds chunk rank() from every member, in member order.
    std::vector<int64_t> shape = in.sizes().vec();
    shape[0] /= size();
    shape.insert(shape.begin(), size());
    return recv.view(shape).sum(0);
  }

  Result<at::Tensor> AllToAll(const at::Tensor& t, const std::vector<int64_t>& send_rows,
                              const std::vector<int64_t>& recv_rows) override {
    if (Widen(t, "all_to_all")) {
      auto r = AllToAll(t.to(at::kFloat), send_rows, recv_rows);
      if (!r.ok()) return r;
      return r->to(at::kBFloat16);
    }
    at::Tensor in = t.contiguous();
    std::vector<int64_t> shape = in.sizes().vec();
    if (!recv_rows.empty()) {
      int64_t rows = 0;
      for (int64_t r : recv_rows) rows += r;
      shape[0] = rows;
    }
    at::Tensor out = at::empty(shape, in.options());
    Status s = Guard("all_to_all", [&] {
      std::vector<int64_t> send = send_rows, recv = recv_rows;
      pg_->alltoall_base(out, in, recv, send)->wait();
    });
    if (!s.ok()) return s.error();
    return out;
  }

  Status Broadcast(at::Tensor& t, int root) override {
    const bool widen = Widen(t, "broadcast");
    return Guard("broadcast", [&] {
      std::vector<at::Tensor> v{widen ? t.to(at::kFloat) : t};
      c10d::BroadcastOptions o;
      o.rootRank = root;
      pg_->broadcast(v, o)->wait();
      if (widen) t.copy_(v[0]);
    });
  }

  Status Barrier() override {
    return Guard("barrier", [&] { pg_->barrier()->wait(); });
  }

  std::string Algorithm(const std::string& kind) const override {
    if (kind == "all_reduce") return "gloo ring allreduce";
    if (kind == "all_gather") return "gloo allgather into chunk views";
    if (kind == "reduce_scatter") return "gloo alltoall_base + local sum";
    if (kind == "all_to_all") return "gloo alltoall_base";
    if (kind == "broadcast") return "gloo broadcast";
    return "gloo";
  }

 private:
  template <class F>
  Status Guard(const char* op, F&& f) {
    try {
      f();
      return Status::Ok();
    } catch (const std::exception& e) {
      return CommFailure(ctx_, *this, op, e.what());
    }
  }

  CommContext ctx_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

// c10::Error messages carry a C++ backtrace after the first line; the first line is the message.
std::string FirstLine(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace

std::string GroupName(const std::string& kind, const std::vector<int>& ranks) {
  std::ostringstream out;
  out << kind << " group [";
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? "," : "") << ranks[i];
  out << "]";
  return out.str();
}

Error CommFailure(const CommContext& ctx, const Comm& comm, const std::string& op, const std::string& what) {
  std::string msg = "rank " + std::to_string(ctx.global_rank) + ": " + op + " on " + comm.name() + " failed: " +
                    FirstLine(what);
  if (ctx.diagnose) {
    std::string who = ctx.diagnose(comm.ranks());
    if (!who.empty()) msg += "; " + who;
  }
  return Error{msg};
}

std::string GlooBf16Support() {
  std::string native, widened;
  for (const auto& [op, ok] : GlooBf16Table()) {
    std::string& list = ok ? native : widened;
    list += (list.empty() ? "" : ", ") + op;
  }
  if (widened.empty()) return "bf16 natively on every gloo collective";
  if (native.empty()) return "fp32 around every gloo collective (this LibTorch's gloo has no bf16: " + widened + ")";
  return "bf16 natively (" + native + "), fp32 around " + widened + " (no bf16 in this LibTorch's gloo)";
}

std::unique_ptr<Comm> MakeSelfComm(const std::string& name, int global_rank) {
  return std::make_unique<SelfComm>(name, global_rank);
}

Result<std::unique_ptr<Comm>> MakeGlooComm(const CommContext& ctx, const std::string& name,
                                           const std::vector<int>& ranks) {
  int group_rank = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == ctx.global_rank) group_rank = static_cast<int>(i);
  }
  if (group_rank < 0) return Error{"rank " + std::to_string(ctx.global_rank) + " is not in " + name};
  if (ranks.size() == 1) return MakeSelfComm(name, ctx.global_rank);
  try {
    auto store = c10::make_intrusive<c10d::PrefixStore>("pg/" + name + "/", ctx.store);
    auto opts = c10d::ProcessGroupGloo::Options::create(ctx.timeout);
    // Loopback is right for one host (tests, a single node); more hosts need the interface that
    // reaches MASTER_ADDR, which createDefaultDevice finds through the hostname.
    const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
    opts->devices.push_back(iface ? c10d::ProcessGroupGloo::createDeviceForInterface(iface)
                                  : c10d::ProcessGroupGloo::createDefaultDevice());
    opts->threads = 1;
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, group_rank, static_cast<int>(ranks.size()), opts);
    return std::unique_ptr<Comm>(std::make_unique<GlooComm>(ctx, name, ranks, group_rank, std::move(pg)));
  } catch (const std::exception& e) {
    std::string msg = "rank " + std::to_string(ctx.global_rank) + ": creating the gloo " + name +
                      " failed: " + FirstLine(e.what());
    if (ctx.diagnose) {
      std::string who = ctx.diagnose(ranks);
      if (!who.empty()) msg += "; " + who;
    }
    return Error{msg};
  }
}

}  // namespace dsp::exec
