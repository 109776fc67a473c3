// SPDX-License-Identifier: Apache-2.0
// Megatron-core's generate_masked_orthogonal_rank_groups and RankGenerator. The arithmetic is the
// Python's (prefix products, decompose with its round-trip assertion, the substring test on the
// order string, list.index for tokens) because the point of this file is to agree with Megatron
// bit for bit, quirks included. Two liberties, neither visible in the output: the in-group offsets
// are decomposed once per call rather than once per group, and nothing allocates per rank.
#include "core/layout/megatron_rank_generator.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <string>
#include <utility>

namespace dsp::megatron {
namespace {

using Index = std::int64_t;

// A short list of per-axis numbers (sizes, strides or digits). Megatron orders have at most six
// axes; fixed storage keeps this function, which sweeps call tens of thousands of times, free of
// heap allocations.
struct Axes {
  static constexpr size_t kCapacity = 16;
  std::array<Index, kCapacity> v{};
  size_t n = 0;
  void Push(Index x) { v[n++] = x; }
};

// prefix_product(a): exclusive prefix products [1, a0, a0*a1, ...] (one longer than `a`).
Axes PrefixProduct(const Axes& a) {
  Axes r;
  r.Push(1);
  for (size_t i = 0; i < a.n; ++i) r.Push(r.v[i] * a.v[i]);
  return r;
}

Index InnerProduct(const Axes& a, const Axes& b) {
  Index sum = 0;
  for (size_t i = 0; i < std::min(a.n, b.n); ++i) sum += a.v[i] * b.v[i];
  return sum;
}

std::string PyList(const Axes& a) {
  std::string out = "[";
  for (size_t i = 0; i < a.n; ++i) out += (i ? ", " : "") + std::to_string(a.v[i]);
  return out + "]";
}

// decompose(index, shape) into `idx`: mixed-radix digits of `index`, first digit fastest.
// Returns Megatron's assertion that the digits re-compose to `index` (false when
// index >= prod(shape)); `stride` is prefix_product(shape).
bool Decompose(Index index, const Axes& shape, const Axes& stride, Axes& idx) {
  idx.n = shape.n;
  Index recomposed = 0;
  for (size_t i = 0; i < shape.n; ++i) {
    idx.v[i] = (index / stride.v[i]) % shape.v[i];
    recomposed += idx.v[i] * stride.v[i];
  }
  return recomposed == index;
}

Error DecomposeError(Index index, const Axes& shape, const Axes& idx) {
  return Error{"idx " + std::to_string(index) + " with shape " + PyList(shape) +
               " mismatch the return idx " + PyList(idx)};
}

std::vector<std::string> Split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

}  // namespace

Result<std::vector<std::vector<int>>> GenerateMaskedOrthogonalRankGroups(
    int world_size, const std::vector<int>& parallel_size, const std::vector<bool>& mask) {
  if (parallel_size.size() != mask.size()) {
    return Error{"parallel_size and mask must have the same length"};
  }
  for (int s : parallel_size) {
    if (s < 1) return Error{"parallel sizes must be positive, got " + std::to_string(s)};
  }
  if (parallel_size.size() >= Axes::kCapacity) return Error{"too many parallel axes"};
  Axes sizes;
  for (int size : parallel_size) sizes.Push(size);
  Axes masked_shape, unmasked_shape, masked_stride, unmasked_stride;
  const Axes global_stride = PrefixProduct(sizes);
  for (size_t i = 0; i < sizes.n; ++i) {
    (mask[i] ? masked_shape : unmasked_shape).Push(sizes.v[i]);
    (mask[i] ? masked_stride : unmasked_stride).Push(global_stride.v[i]);
  }
  const Axes masked_prefix = PrefixProduct(masked_shape);
  const Axes unmasked_prefix = PrefixProduct(unmasked_shape);
  const Index group_size = masked_prefix.v[masked_shape.n];
  const Index num_of_group = world_size / group_size;

  Axes digits;
  // <decompose(rank_in_group, masked_shape), masked_stride> does not depend on the group, so it
  // is computed once per call instead of once per rank (same values as Megatron's nested loop).
  std::vector<int> offset(group_size);
  for (Index rank_in_group = 0; rank_in_group < group_size; ++rank_in_group) {
    if (!Decompose(rank_in_group, masked_shape, masked_prefix, digits)) {
      return DecomposeError(rank_in_group, masked_shape, digits);
    }
    offset[rank_in_group] = static_cast<int>(InnerProduct(digits, masked_stride));
  }
  std::vector<std::vector<int>> ranks;
  ranks.reserve(num_of_group);
  for (Index group_index = 0; group_index < num_of_group; ++group_index) {
    if (!Decompose(group_index, unmasked_shape, unmasked_prefix, digits)) {
      return DecomposeError(group_index, unmasked_shape, digits);
    }
    const int base = static_cast<int>(InnerProduct(digits, unmasked_stride));
    std::vector<int>& rank = ranks.emplace_back(offset);
    int* out = rank.data();
    for (Index k = 0; k < group_size; ++k) out[k] += base;
  }
  return ranks;
}

Result<RankGenerator> RankGenerator::Create(int tp, int ep, int dp, int pp, int cp,
                                            std::string_view order, int rank_offset) {
  if (!(ep == 1 || cp == 1)) {
    return Error{
        "Both EP and CP > 1 in not allow in one rank generator. CP is only included in default "
        "RankGenerator, and EP only in expert RankGenerator."};
  }
  RankGenerator gen;
  gen.rank_offset_ = rank_offset;
  gen.world_size_ = tp * dp * pp * cp * ep;

  // Megatron iterates name_to_size in this insertion order and tests `name not in order` on the
  // lower-cased order *string* (a substring test, not a token test).
  const std::pair<const char*, int> name_to_size[] = {
      {"tp", tp}, {"pp", pp}, {"dp", dp}, {"ep", ep}, {"cp", cp}};
  std::string lowered(order);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const auto& [name, size] : name_to_size) {
    if (lowered.find(name) == std::string::npos) {
      if (size != 1) {
        // The two f-strings in Megatron concatenate without a space: "haven'tspecified".
        return Error{"The size of (" + std::string(name) + ") is (" + std::to_string(size) +
                     "), but you haven'tspecified the order (" + std::string(order) + ")."};
      }
      lowered += std::string("-") + name;
    }
  }
  gen.order_ = lowered;
  gen.tokens_ = Split(lowered, '-');
  for (const std::string& token : gen.tokens_) {
    auto it = std::find_if(std::begin(name_to_size), std::end(name_to_size),
                           [&](const auto& entry) { return token == entry.first; });
    if (it == std::end(name_to_size)) {
      return Error{"KeyError: '" + token + "' in order (" + std::string(order) + ")"};
    }
    gen.ordered_size_.push_back(it->second);
  }
  return gen;
}

Result<std::vector<std::vector<int>>> RankGenerator::GetRanks(std::string_view token) const {
  // get_mask: every named axis is set via list.index, so "dp-cp" and "cp-dp" give the same mask.
  std::vector<bool> mask(tokens_.size(), false);
  size_t start = 0;
  while (true) {
    const size_t end = token.find('-', start);
    const std::string_view t =
        token.substr(start, end == std::string_view::npos ? end : end - start);
    auto it = std::find(tokens_.begin(), tokens_.end(), t);
    if (it == tokens_.end()) return Error{"'" + std::string(t) + "' is not in list"};
    mask[it - tokens_.begin()] = true;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  auto ranks = GenerateMaskedOrthogonalRankGroups(world_size_, ordered_size_, mask);
  if (!ranks.ok()) return ranks;
  if (rank_offset_ > 0) {
    for (auto& group : *ranks) {
      for (int& r : group) r += rank_offset_;
    }
  }
  return ranks;
}

}  // namespace dsp::megatron
