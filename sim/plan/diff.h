// SPDX-License-Identifier: Apache-2.0
// Compares two plan snapshots (sim/plan/snapshot.h): the one a user committed and the one the same
// inputs give today. Pure JSON arithmetic, so it can be unit-tested on hand-written snapshots.
//
// Rules (docs/plan.md "What check compares"):
//   * group tables are compared exactly, and a change is summarised per kind with the first group
//     that differs;
//   * integers (sizes, ZeRO stage, batch, ranks) and strings and booleans (fits) must be equal;
//   * floating-point numbers (bytes, seconds, tokens/s, MFU) may move by up to `tolerance_percent`
//     of the recorded value; moves within it are kept (within_tolerance) and reported as notes;
//   * a value present on one side only is always a difference.
// Only the computed sections are compared; "inputs" are the caller's business (hashes, config keys).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json/document.h"

namespace dsp::sim {

struct PlanDifference {
  std::string field;  // dotted path: "layout.tp", "groups.tables.tp", "memory.peak_bytes"
  Json old_value;     // null when absent in the recorded snapshot
  Json new_value;     // null when absent today
  std::optional<double> relative_change;  // floats: (new - old) / |old|; +inf when old is 0
  bool within_tolerance = false;          // a float that moved, but not beyond the tolerance
  std::string detail;                     // group tables: sizes and the first differing group
};

struct PlanComparison {
  std::vector<PlanDifference> differences;  // in snapshot order: resolved, layout, groups, memory, ...
  // Differences that fail the check (everything not within_tolerance).
  size_t failures() const;
};

/// The sections compared, in order.
const std::vector<std::string>& ComparedSections();

PlanComparison ComparePlanSnapshots(const Json& recorded, const Json& fresh, double tolerance_percent);

/// A leaf of a JSON value that differs between two documents (used for the recorded config
/// content versus today's file): JSON pointer, old and new value (null where absent).
struct ValueChange {
  std::string pointer;
  Json old_value;
  Json new_value;
  bool old_absent = false;
  bool new_absent = false;
};

/// Leaf-level differences, objects descended key by key (sorted), arrays compared whole.
std::vector<ValueChange> DiffJsonLeaves(const Json& old_value, const Json& new_value);

/// "[0-3]", "[0,2,4,6]": the compact rank-list form the groups table uses.
std::string FormatRankGroup(const Json& group);

}  // namespace dsp::sim
