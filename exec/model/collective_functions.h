// SPDX-License-Identifier: Apache-2.0
// The collectives a sharded forward inserts, as autograd functions (DeepSpeed's compile/custom_ops/tp_collectives.py, module_inject/layers.py):
//   copy_to_tp      forward identity,             backward all-reduce over tp   (Megatron "f")
//   reduce_from_tp  forward all-reduce over tp,   backward identity             (Megatron "g")
//   seq_to_heads    Ulysses all-to-all [B, S/P, N, d] -> [B, S, N/P, d]; backward the reverse
//   heads_to_seq    the reverse of seq_to_heads
//   all_to_all_rows uneven row all-to-all (EP dispatch/combine); backward swaps the splits
//   restore_rows    folded MoE "restore": all-gather of variable row counts across tp; backward
//                   all-reduces the full-view gradient over tp and keeps this rank's rows, which
//                   leaves the tp factor that expert "tp cancel" and router AVERAGE remove
//   tp_mean_grad    forward identity, backward all-reduce / tp: the folded MoE's input, whose
//                   per-peer gradients are tp x (own assignments' part), made whole again
// A null Comm (the unsharded reference) makes each of them the identity. A communication failure
// inside backward is thrown as CollectiveError, the only way out of the autograd engine; the runner
// turns it back into an Error.
#pragma once

#include <stdexcept>
#include <vector>

#include <ATen/ATen.h>

#include "exec/comm/comm.h"

namespace dsp::exec {

struct CollectiveError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `skip_backward_allreduce` is the no-copy-allreduce fault.
at::Tensor CopyToTp(const at::Tensor& x, Comm* tp, bool skip_backward_allreduce = false);
at::Tensor ReduceFromTp(const at::Tensor& x, Comm* tp);
at::Tensor SeqToHeads(const at::Tensor& x, Comm* sp);
at::Tensor HeadsToSeq(const at::Tensor& x, Comm* sp);
at::Tensor AllToAllRows(const at::Tensor& x, Comm* group, const std::vector<int64_t>& send_rows,
                        const std::vector<int64_t>& recv_rows);

// `rows` on each member: returns every member's rows concatenated in member order; `counts` gets
// each member's row count.
at::Tensor RestoreRows(const at::Tensor& rows, Comm* tp, std::vector<int64_t>* counts);
at::Tensor TpMeanGrad(const at::Tensor& x, Comm* tp);

// Throws CollectiveError unless ok (for code on the autograd path).
void ThrowIfError(const Status& s);
at::Tensor ValueOrThrow(Result<at::Tensor> r);

}  // namespace dsp::exec
