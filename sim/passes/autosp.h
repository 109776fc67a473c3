// SPDX-License-Identifier: Apache-2.0
// AutoSP (DeepSpeed-Ulysses as a compiler pass, deepspeed/compile/passes/sp_compile.py): every
// rank keeps S/P tokens of each sequence and trades sequence for heads around attention with
// all-to-alls, so attention sees the whole sequence for N/P heads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/model/model_spec.h"
#include "sim/passes/pass.h"

namespace dsp::sim::passes {

struct AutoSpOptions {
  // Sequence-parallel size: the top-level `sequence_parallel_size`. 1 means nothing to do.
  int64_t sp_size = 1;
  // The symbol the graph divides by, so shapes read "S/P" whatever the number.
  std::string symbol = "P";
  // Attention heads N and KV heads G as integers: the graph's shapes are symbolic, but
  // divisibility by sp_size must be checked on numbers (the all-to-all scatters heads).
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  // Sequence length when known (S must split evenly into sp_size chunks).
  std::optional<int64_t> seq_len;
  // DeepCompile's AutoSP pass (compile.deepcompile with "autosp" in compile.passes) rather than
  // eager Ulysses (sequence_parallel_size alone: runtime/sequence_parallel/ulysses_sp.py). The
  // compile pass reshapes whatever heads reach SDPA into sp groups (custom_ops/all_to_all.py), so
  // KV heads must divide; eager Ulysses repeats KV heads up to sp when there are fewer
  // (UlyssesSPAttentionHF: kv_replication_factor = sp // kv heads, repeat_interleave).
  bool compiled = false;

  static AutoSpOptions ForModel(const ModelSpec& spec, int64_t sp_size,
                                std::optional<int64_t> seq_len = std::nullopt);
};

// The five steps of apply_autosp, in order:
//   1. shard S -> S/P in every transitive consumer of input_ids, labels and position_ids (the
//      attention mask is not a consumer and keeps [B, 1, S, S]);
//   2. slice those inputs: `slice_seq` nodes right after each placeholder, read by all its users;
//   3. `all_to_all` (group "sp") after q, k and v of every sdpa, scattering heads and gathering
//      the sequence ([B, N, S/P, D] -> [B, N/P, S, D]), and after the sdpa output the reverse;
//      named a2a_q_<i>, a2a_k_<i>, a2a_v_<i>, a2a_o_<i> for the i-th attention (its layer);
//   4. propagate shapes (the sdpa now computes N/P heads over the full sequence);
//   5. canonicalize: dead-code elimination.
// Errors, with the graph untouched: no sdpa node; N or G not divisible by sp_size; a known
// sequence length not divisible by sp_size; sp_size < 1.
class AutoSpPass : public Pass {
 public:
  explicit AutoSpPass(AutoSpOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "autosp"; }
  std::string_view description() const override;
  Result<bool> Run(graph::Graph& graph) override;

 private:
  AutoSpOptions options_;
};

}  // namespace dsp::sim::passes
