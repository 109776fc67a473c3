// SPDX-License-Identifier: Apache-2.0
// ZeRO stage 3 as DeepSpeed runs it (DeepSpeed 0.19.6 runtime/zero/partition_parameters.py and
// stage3.py): every parameter a rank holds (after AutoTP slicing and AutoEP placement) is
// partitioned over its family's group -- dense parameters over dp (sp_dp with Ulysses), routed
// experts over edp, the tables `ds-plan groups` prints -- as one flat tensor padded to a multiple of
// the group size, of which the rank keeps its chunk. A use of the parameter all-gathers it, computes,
// and drops the gathered tensor; backward gathers it again, recomputes the use with autograd on, and
// reduce-scatters the weight gradient over the same group into the rank's chunk. The SGD step then
// updates the chunks only: no rank ever holds a whole parameter between uses.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <vector>

#include <ATen/ATen.h>

#include "exec/comm/comm.h"
#include "exec/model/tiny_model.h"
#include "exec/optim/data_parallel.h"

namespace dsp::exec {

class Zero3Partitions {
 public:
  // Partitions every parameter of `groups` (their `params`, all held by this rank) over the
  // group's communicator. The model's local copies are released: TinyModel::Use gathers.
  // `expert_reduce_fault`: the expert-grads-over-dp fault, routed experts' gradients summed over
  // this (dense dp) group instead of reduce-scattered over their own.
  Zero3Partitions(TinyModel& model, std::vector<ReduceGroup> groups, Comm* expert_reduce_fault = nullptr);

  bool Holds(int param) const { return index_.count(param) != 0; }
  // op(x, gathered weight), with the gather before and the gradient reduce-scatter in backward.
  at::Tensor Apply(int param, const at::Tensor& x, WeightOp op);

  // After backward of both losses: divides the reduce-scattered chunks' gradients by the group's
  // divisor, compares them with the reference gradients' chunks, steps both models and compares the
  // chunks of the weights; clears the gradients.
  Status Step(double lr, FamilyDiffs& diffs);

  // All-gathers issued since the last Step (forward and backward), for the tests.
  int64_t gathers() const { return gathers_; }

  struct Part {
    int param = -1;
    Comm* comm = nullptr;
    Comm* wrong_reduce = nullptr;  // the fault: all-reduce over this group, then keep the own chunk
    double divisor = 1;
    std::vector<int64_t> shape;  // of the whole local parameter (after TP/EP)
    int64_t numel = 0, padded = 0;
    at::Tensor chunk;  // this rank's partition, requires grad
  };
  const std::vector<Part>& parts() const { return parts_; }

 private:
  at::Tensor ReferenceChunk(const Part& p, const at::Tensor& full) const;

  TinyModel& model_;
  std::vector<Part> parts_;
  std::map<int, size_t> index_;
  std::deque<WeightOp> ops_;  // kept alive until Step: backward recomputes them
  int64_t gathers_ = 0;
  friend struct Zero3ApplyAccess;
};

}  // namespace dsp::exec
