// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/recompute_policy.h"

namespace dsp::sim {

bool RecomputePolicy::Again(const OperatorCost& op) {
  if (!recomputable_ || recompute_ == Recompute::kNone) return false;
  if (recompute_ == Recompute::kFull) return true;
  // Korthikanti et al.'s selective recompute: the attention core (scores, softmax, dropout, AV).
  if (!op_sac_) return op.attention_core;
  // torchtitan's op-level SAC (torchtitan/models/llama3/infra/parallelize.py
  // _apply_ac_to_transformer_block, _custom_policy): outputs of the ops in _save_list are kept
  // (aten.mm, the fused SDPA kernels, ...) except every second aten.mm of the block; everything
  // else (norms, rotary, the SwiGLU product, unfused attention's bmm) is recomputed. The grouped
  // expert GEMM is saved whole.
  if (op.kind == KernelKind::kAttention) return false;
  if (op.kind == KernelKind::kMatmul && !op.attention_core) {
    if (op.name == "experts" || op.name == "shared_expert") return false;
    return ++matmuls_ % 2 == 0;
  }
  return true;
}

}  // namespace dsp::sim
