// SPDX-License-Identifier: Apache-2.0
// NCCL backend. Debian's LibTorch is CPU-only (no CUDA tensors), so this backend owns the device
// side itself: each collective copies the CPU tensor into a device buffer, runs the NCCL call on
// its own stream and copies the result back. The model math stays on the CPU; what this measures
// and checks on a GPU machine is the NCCL communication path with the plan's real groups.
//
// Set-up: group rank 0 creates the ncclUniqueId and publishes it through the run's store; the
// communicator is non-blocking (config.blocking = 0) so every wait polls against the deadline and
// a dead peer ends in ncclCommAbort and an Error, never a hang.
#include "exec/comm/comm.h"

#ifdef DSP_HAVE_NCCL
#include <cstring>
#include <thread>

#include <cuda_runtime.h>
#include <nccl.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#endif

namespace dsp::exec {

#ifndef DSP_HAVE_NCCL

Result<std::unique_ptr<Comm>> MakeNcclComm(const CommContext&, const std::string& name, const std::vector<int>&) {
  return Error{"--backend nccl: this ds-plan was built without CUDA/NCCL (CMake did not find the CUDA "
               "toolkit and nccl.h/libnccl under /usr/local/cuda); use --backend gloo"};
}

#else

namespace {

using Clock = std::chrono::steady_clock;

std::string CudaText(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

class NcclComm final : public Comm {
 public:
  NcclComm(const CommContext& ctx, const std::string& name, std::vector<int> ranks, int group_rank)
      : Comm(name, std::move(ranks), group_rank), ctx_(ctx) {}

  ~NcclComm() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (buf_ != nullptr) cudaFree(buf_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  Status Init(const ncclUniqueId& id) {
    if (auto e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); e != cudaSuccess) {
      return Fail("cudaStreamCreate", CudaText(e));
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&comm_, size(), id, rank(), &config);
    if (r != ncclSuccess && r != ncclInProgress) return Fail("ncclCommInitRank", NcclText(r));
    return WaitComm("ncclCommInitRank");
  }

  Status AllReduceSum(at::Tensor& t) override {
    at::Tensor c = t.contiguous();
    const size_t bytes = c.numel() * c.element_size();
    if (auto s = Stage(c, bytes); !s.ok()) return s;
    auto r = ncclAllReduce(buf_, buf_, c.numel(), ncclFloat32, ncclSum, comm_, stream_);
    if (auto s = Finish("ncclAllReduce", r); !s.ok()) return s;
    if (auto s = Unstage(c, bytes, 0); !s.ok()) return s;
    if (!c.is_same(t)) t.copy_(c);
    return Status::Ok();
  }

  Result<at::Tensor> AllGather(const at::Tensor& t) override {
    at::Tensor in = t.contiguous();
    std::vector<int64_t> shape = in.sizes().vec();
    shape[0] *= size();
    at::Tensor out = at::empty(shape, in.options());
    const size_t in_bytes = in.numel() * in.element_size();
    if (auto s = Reserve(in_bytes * size()); !s.ok()) return s.error();
    if (auto s = Copy(static_cast<char*>(buf_) + rank() * in_bytes, in.data_ptr(), in_bytes, cudaMemcpyHostToDevice); !s.ok()) {
      return s.error();
    }
    void* mine = static_cast<char*>(buf_) + rank() * in_bytes;
    auto r = ncclAllGather(mine, buf_, in.numel(), ncclFloat32, comm_, stream_);
    if (auto s = Finish("ncclAllGather", r); !s.ok()) return s.error();
    if (auto s = Copy(out.data_ptr(), buf_, in_bytes * size(), cudaMemcpyDeviceToHost); !s.ok()) return s.error();
    return out;
  }

  Result<at::Tensor> ReduceScatter(const at::Tensor& t) override {
    at::Tensor in = t.contiguous();
    std::vector<int64_t> shape = in.sizes().vec();
    shape[0] /= size();
    at::Tensor out = at::empty(shape, in.options());
    const size_t bytes = in.numel() * in.element_size();
    if (auto s = Stage(in, bytes); !s.ok()) return s.error();
    // Output goes to the first chunk's slot (in-place reduce-scatter layout).
    void* dst = static_cast<char*>(buf_) + rank() * (bytes / size());
    auto r = ncclReduceScatter(buf_, dst, out.numel(), ncclFloat32, ncclSum, comm_, stream_);
    if (auto s = Finish("ncclReduceScatter", r); !s.ok()) return s.error();
    if (auto s = Copy(out.data_ptr(), dst, bytes / size(), cudaMemcpyDeviceToHost); !s.ok()) return s.error();
    return out;
  }

  Result<at::Tensor> AllToAll(const at::Tensor& t, const std::vector<int64_t>& send_rows,
                              const std::vector<int64_t>& recv_rows) override {
    at::Tensor in = t.contiguous();
    const int n = size();
    const int64_t row = in.dim() == 0 ? 1 : in.numel() / std::max<int64_t>(in.size(0), 1);
    std::vector<int64_t> send = send_rows, recv = recv_rows;
    if (send.empty()) send.assign(n, in.size(0) / n);
    if (recv.empty()) recv.assign(n, in.size(0) / n);
    int64_t recv_total = 0;
    for (int64_t r : recv) recv_total += r;
    std::vector<int64_t> shape = in.sizes().vec();
    shape[0] = recv_total;
    at::Tensor out = at::empty(shape, in.options());
    const size_t in_bytes = in.numel() * 4, out_bytes = out.numel() * 4;
    if (auto s = Reserve(in_bytes + out_bytes); !s.ok()) return s.error();
    if (auto s = Copy(buf_, in.data_ptr(), in_bytes, cudaMemcpyHostToDevice); !s.ok()) return s.error();
    char* sendbuf = static_cast<char*>(buf_);
    char* recvbuf = sendbuf + in_bytes;
    ncclGroupStart();
    int64_t so = 0, ro = 0;
    ncclResult_t r = ncclSuccess;
    for (int j = 0; j < n && (r == ncclSuccess || r == ncclInProgress); ++j) {
      r = ncclSend(sendbuf + so * row * 4, send[j] * row, ncclFloat32, j, comm_, stream_);
      if (r == ncclSuccess || r == ncclInProgress) r = ncclRecv(recvbuf + ro * row * 4, recv[j] * row, ncclFloat32, j, comm_, stream_);
      so += send[j];
      ro += recv[j];
    }
    ncclResult_t g = ncclGroupEnd();
    if (r == ncclSuccess || r == ncclInProgress) r = g;
    if (auto s = Finish("ncclSend/ncclRecv", r); !s.ok()) return s.error();
    if (auto s = Copy(out.data_ptr(), recvbuf, out_bytes, cudaMemcpyDeviceToHost); !s.ok()) return s.error();
    return out;
  }

  Status Broadcast(at::Tensor& t, int root) override {
    at::Tensor c = t.contiguous();
    const size_t bytes = c.numel() * c.element_size();
    if (auto s = Stage(c, bytes); !s.ok()) return s;
    auto r = ncclBroadcast(buf_, buf_, c.numel(), ncclFloat32, root, comm_, stream_);
    if (auto s = Finish("ncclBroadcast", r); !s.ok()) return s;
    if (auto s = Unstage(c, bytes, 0); !s.ok()) return s;
    if (!c.is_same(t)) t.copy_(c);
    return Status::Ok();
  }

  Status Barrier() override {
    at::Tensor one = at::ones({1}, at::kFloat);
    return AllReduceSum(one);
  }

  std::string Algorithm(const std::string& kind) const override {
    if (kind == "all_to_all") return "nccl grouped send/recv";
    return "nccl " + kind + " (NCCL picks ring/tree; NCCL_ALGO to force)";
  }

 private:
  static std::string NcclText(ncclResult_t r) { return std::string(ncclGetErrorString(r)); }

  Status Fail(const std::string& op, const std::string& what) { return CommFailure(ctx_, *this, op, what); }

  Status Reserve(size_t bytes) {
    if (bytes <= cap_) return Status::Ok();
    if (buf_ != nullptr) cudaFree(buf_);
    buf_ = nullptr;
    if (auto e = cudaMalloc(&buf_, bytes); e != cudaSuccess) return Fail("cudaMalloc", CudaText(e));
    cap_ = bytes;
    return Status::Ok();
  }
  Status Copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
    if (auto e = cudaMemcpyAsync(dst, src, bytes, kind, stream_); e != cudaSuccess) return Fail("cudaMemcpy", CudaText(e));
    if (auto e = cudaStreamSynchronize(stream_); e != cudaSuccess) return Fail("cudaStreamSynchronize", CudaText(e));
    return Status::Ok();
  }
  Status Stage(const at::Tensor& c, size_t bytes) {
    if (auto s = Reserve(bytes); !s.ok()) return s;
    return Copy(buf_, c.data_ptr(), bytes, cudaMemcpyHostToDevice);
  }
  Status Unstage(at::Tensor& c, size_t bytes, size_t offset) {
    return Copy(c.data_ptr(), static_cast<char*>(buf_) + offset, bytes, cudaMemcpyDeviceToHost);
  }

  // Waits for the communicator to leave ncclInProgress, or aborts it at the deadline.
  Status WaitComm(const std::string& op) {
    const auto deadline = Clock::now() + ctx_.timeout;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state == ncclSuccess) return Status::Ok();
      if (state != ncclInProgress) return Abort(op, NcclText(state) + " (" + ncclGetLastError(comm_) + ")");
      if (Clock::now() > deadline) return Abort(op, "timed out after " + std::to_string(ctx_.timeout.count()) + " ms");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  // Polls the stream so a peer that never joins the collective ends in an abort at the deadline.
  Status Finish(const std::string& op, ncclResult_t r) {
    if (r != ncclSuccess && r != ncclInProgress) return Abort(op, NcclText(r));
    if (auto s = WaitComm(op); !s.ok()) return s;
    const auto deadline = Clock::now() + ctx_.timeout;
    for (;;) {
      cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return Status::Ok();
      if (e != cudaErrorNotReady) return Abort(op, CudaText(e));
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress) return Abort(op, NcclText(state));
      if (Clock::now() > deadline) return Abort(op, "timed out after " + std::to_string(ctx_.timeout.count()) + " ms");
      std::this_thread::yield();
    }
  }

  Status Abort(const std::string& op, const std::string& what) {
    if (comm_ != nullptr) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
    }
    return Fail(op, what);
  }

  CommContext ctx_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* buf_ = nullptr;
  size_t cap_ = 0;
};

}  // namespace

Result<std::unique_ptr<Comm>> MakeNcclComm(const CommContext& ctx, const std::string& name,
                                           const std::vector<int>& ranks) {
  int group_rank = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == ctx.global_rank) group_rank = static_cast<int>(i);
  }
  if (group_rank < 0) return Error{"rank " + std::to_string(ctx.global_rank) + " is not in " + name};
  int devices = 0;
  if (auto e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    return Error{"--backend nccl needs a CUDA GPU: cudaGetDeviceCount: " +
                 (e != cudaSuccess ? CudaText(e) : std::string("0 devices")) + " (use --backend gloo on CPU)"};
  }
  if (auto e = cudaSetDevice(ctx.local_rank % devices); e != cudaSuccess) {
    return Error{"cudaSetDevice(" + std::to_string(ctx.local_rank % devices) + "): " + CudaText(e)};
  }
  ncclUniqueId id;
  const std::string key = "nccl/" + name + "/id";
  try {
    if (group_rank == 0) {
      if (auto r = ncclGetUniqueId(&id); r != ncclSuccess) {
        return Error{"ncclGetUniqueId: " + std::string(ncclGetErrorString(r))};
      }
      std::vector<uint8_t> bytes(reinterpret_cast<uint8_t*>(&id), reinterpret_cast<uint8_t*>(&id) + sizeof id);
      ctx.store->set(key, bytes);
    } else {
      ctx.store->wait({key}, ctx.timeout);
      auto bytes = ctx.store->get(key);
      if (bytes.size() != sizeof id) return Error{"nccl unique id for " + name + " has the wrong size"};
      std::memcpy(&id, bytes.data(), sizeof id);
    }
  } catch (const std::exception& e) {
    std::string msg = "rank " + std::to_string(ctx.global_rank) + ": sharing the NCCL id of " + name +
                      " failed: " + e.what();
    if (ctx.diagnose) msg += "; " + ctx.diagnose(ranks);
    return Error{msg};
  }
  auto comm = std::make_unique<NcclComm>(ctx, name, ranks, group_rank);
  if (auto s = comm->Init(id); !s.ok()) return s.error();
  return std::unique_ptr<Comm>(std::move(comm));
}

#endif

}  // namespace dsp::exec
