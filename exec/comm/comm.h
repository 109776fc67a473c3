// SPDX-License-Identifier: Apache-2.0
// exec::Comm: the one narrow interface every collective of `ds-plan run` goes through, for one
// process group given as a list of global ranks. Backends: Gloo through LibTorch's c10d (CPU) and
// NCCL called directly (GPU). Tensors are dense CPU float tensors; rows are dim 0.
//
// Errors are values. A failure (a peer that died, a timeout) is reported with the group's name and,
// through CommContext::diagnose, the ranks that stopped answering, so no caller ever hangs or
// prints a bare "Connection closed by peer".
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "core/util/result.h"

namespace dsp::exec {

class Comm {
 public:
  virtual ~Comm() = default;

  const std::string& name() const { return name_; }   // e.g. "tp group [0,1]"
  const std::vector<int>& ranks() const { return ranks_; }
  int rank() const { return group_rank_; }             // position of this process in ranks()
  int size() const { return static_cast<int>(ranks_.size()); }

  // In place: t = sum over the group.
  virtual Status AllReduceSum(at::Tensor& t) = 0;
  // Concatenation along dim 0 of every member's `t` (equal shapes), in group-rank order.
  virtual Result<at::Tensor> AllGather(const at::Tensor& t) = 0;
  // `t` has size() equal chunks along dim 0; returns the sum over members of chunk rank().
  virtual Result<at::Tensor> ReduceScatter(const at::Tensor& t) = 0;
  // Sends rows [offset_j, offset_j + send_rows[j]) of `t` to member j and returns the rows received,
  // concatenated in member order; recv_rows[j] rows come from member j. Empty vectors: equal split.
  virtual Result<at::Tensor> AllToAll(const at::Tensor& t, const std::vector<int64_t>& send_rows,
                                      const std::vector<int64_t>& recv_rows) = 0;
  // In place, from group rank `root`.
  virtual Status Broadcast(at::Tensor& t, int root) = 0;
  virtual Status Barrier() = 0;

  // What the backend runs for each kind ("ring", "alltoall_base + local sum"), for --bench.
  virtual std::string Algorithm(const std::string& kind) const = 0;

 protected:
  Comm(std::string name, std::vector<int> ranks, int group_rank)
      : name_(std::move(name)), ranks_(std::move(ranks)), group_rank_(group_rank) {}

 private:
  std::string name_;
  std::vector<int> ranks_;
  int group_rank_;
};

// What every backend needs to build a group.
struct CommContext {
  c10::intrusive_ptr<c10d::Store> store;  // already prefixed for this run
  int global_rank = 0;
  int local_rank = 0;
  std::chrono::milliseconds timeout{60000};
  // Given the members of a failed group, says which of them stopped answering ("rank 3 is not
  // responding (no heartbeat for 2.1 s)"); "" when it cannot tell.
  std::function<std::string(const std::vector<int>&)> diagnose;
};

// A group of one rank needs no backend: every collective is the identity.
// How bf16 tensors travel on Gloo in this build: the result of a runtime probe of each collective
// (bf16 natively where Gloo has it, else converted to fp32 around the collective), in words.
std::string GlooBf16Support();

std::unique_ptr<Comm> MakeSelfComm(const std::string& name, int global_rank);

// Collective over the members (only members call it). `name` also prefixes the group's store keys.
Result<std::unique_ptr<Comm>> MakeGlooComm(const CommContext& ctx, const std::string& name,
                                           const std::vector<int>& ranks);
// Fails cleanly (an Error, no abort) without a GPU or without NCCL support in the build.
Result<std::unique_ptr<Comm>> MakeNcclComm(const CommContext& ctx, const std::string& name,
                                           const std::vector<int>& ranks);

// "tp group [0,1]".
std::string GroupName(const std::string& kind, const std::vector<int>& ranks);

// Turns an exception from a backend into an Error naming the group and the silent ranks.
Error CommFailure(const CommContext& ctx, const Comm& comm, const std::string& op, const std::string& what);

}  // namespace dsp::exec
