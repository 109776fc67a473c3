// SPDX-License-Identifier: Apache-2.0
// Megatron-core's rank-group generator (megatron/core/parallel_state.py, core_v0.14.0), reproduced
// exactly: generate_masked_orthogonal_rank_groups and RankGenerator (megatron/core/parallel_state.py).
//
// Python exceptions become Error values with Megatron's own message text (including the missing
// space in "haven'tspecified"), so a user comparing with a Megatron log sees the same words.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"

namespace dsp::megatron {

/// generate_masked_orthogonal_rank_groups(world_size, parallel_size, mask). `parallel_size` is in
/// order-string order (fastest digit first); mask[i] marks the axes that vary inside a group.
/// Like Megatron it does not check world_size == prod(parallel_size); an inconsistent world size
/// surfaces as decompose's round-trip assertion, returned as an Error.
Result<std::vector<std::vector<int>>> GenerateMaskedOrthogonalRankGroups(
    int world_size, const std::vector<int>& parallel_size, const std::vector<bool>& mask);

/// RankGenerator(tp, ep, dp, pp, cp, order, rank_offset). Axes missing from `order` must have size
/// 1 and are appended as the slowest digits, exactly as Megatron does.
class RankGenerator {
 public:
  static Result<RankGenerator> Create(int tp, int ep, int dp, int pp, int cp,
                                      std::string_view order, int rank_offset = 0);

  /// get_ranks("dp-cp") etc.: the token is a set of axis names; their order never matters.
  Result<std::vector<std::vector<int>>> GetRanks(std::string_view token) const;

  int world_size() const { return world_size_; }
  /// The order after size-1 axes were appended, e.g. "tp-cp-dp-pp" -> "tp-cp-dp-pp-ep".
  const std::string& order() const { return order_; }

 private:
  RankGenerator() = default;

  std::string order_;
  std::vector<std::string> tokens_;
  std::vector<int> ordered_size_;
  int world_size_ = 0;
  int rank_offset_ = 0;
};

}  // namespace dsp::megatron
