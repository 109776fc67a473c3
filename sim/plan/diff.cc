// SPDX-License-Identifier: Apache-2.0
#include "sim/plan/diff.h"

#include "core/report/groups_report.h"

#include <cmath>
#include <limits>
#include <set>

namespace dsp::sim {
namespace {

std::string Join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

// "4 groups of 2"; sizes differ only in hand-written snapshots, so "3 groups" covers them.
std::string Shape(const Json& groups) {
  if (!groups.is_array()) return "absent";
  std::set<size_t> sizes;
  for (const Json& g : groups) sizes.insert(g.is_array() ? g.size() : 0);
  std::string n = std::to_string(groups.size()) + (groups.size() == 1 ? " group" : " groups");
  return sizes.size() == 1 ? n + " of " + std::to_string(*sizes.begin()) : n;
}

std::string GroupTableDetail(const Json& old_groups, const Json& new_groups) {
  std::string detail = Shape(old_groups) + " -> " + Shape(new_groups);
  if (!old_groups.is_array() || !new_groups.is_array()) return detail;
  size_t n = std::max(old_groups.size(), new_groups.size());
  for (size_t i = 0; i < n; ++i) {
    Json a = i < old_groups.size() ? old_groups[i] : Json(nullptr);
    Json b = i < new_groups.size() ? new_groups[i] : Json(nullptr);
    if (a == b) continue;
    auto show = [](const Json& g) { return g.is_null() ? std::string("(none)") : FormatRankGroup(g); };
    return detail + "; first difference: group " + std::to_string(i) + " " + show(a) + " -> " + show(b);
  }
  return detail;
}

class Comparer {
 public:
  explicit Comparer(double tolerance_percent) : tolerance_(tolerance_percent / 100.0) {}

  void Compare(const std::string& path, const Json& a, const Json& b, bool group_table) {
    if (group_table) {
      if (a != b) Add(path, a, b, std::nullopt, false, GroupTableDetail(a, b));
      return;
    }
    if (a.is_object() && b.is_object()) {
      std::set<std::string> keys;
      for (const auto& [k, v] : a.items()) keys.insert(k);
      for (const auto& [k, v] : b.items()) keys.insert(k);
      const bool tables = path == "groups.tables";
      for (const std::string& k : keys) {
        auto ia = a.find(k), ib = b.find(k);
        Json va = ia == a.end() ? Json(nullptr) : *ia;
        Json vb = ib == b.end() ? Json(nullptr) : *ib;
        if (tables || (ia != a.end() && ib != b.end())) {
          Compare(Join(path, k), va, vb, tables);
        } else {
          OneSided(Join(path, k), ia == a.end() ? vb : va, ia == a.end());
        }
      }
      return;
    }
    if (a.is_number_float() || b.is_number_float()) {
      if (a.is_number() && b.is_number()) {
        double x = a.get<double>(), y = b.get<double>();
        if (x == y) return;
        double rel = x == 0 ? std::numeric_limits<double>::infinity() : (y - x) / std::fabs(x);
        // The slack keeps "exactly 5% at --tolerance 5" from failing on the last bit of a double.
        Add(path, a, b, rel, std::fabs(rel) <= tolerance_ + 1e-12, "");
        return;
      }
    }
    if (a != b) Add(path, a, b, std::nullopt, false, "");
  }

  PlanComparison Take() { return std::move(out_); }

  // A value on one side only, reported leaf by leaf so a new collective reads like any other
  // number ("collectives.all_reduce.dp.bytes_per_step: absent -> 1.607 GB").
  void OneSided(const std::string& path, const Json& v, bool added) {
    if (v.is_object() && !v.empty()) {
      for (const auto& [k, child] : v.items()) OneSided(Join(path, k), child, added);
      return;
    }
    Add(path, added ? Json(nullptr) : v, added ? v : Json(nullptr), std::nullopt, false, added ? "added" : "removed");
  }

 private:
  void Add(const std::string& path, const Json& a, const Json& b, std::optional<double> rel, bool within,
           std::string detail) {
    out_.differences.push_back({path, a, b, rel, within, std::move(detail)});
  }
  double tolerance_;
  PlanComparison out_;
};

void DiffLeaves(const std::string& pointer, const Json* a, const Json* b, std::vector<ValueChange>* out) {
  if (a && b && a->is_object() && b->is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : a->items()) keys.insert(k);
    for (const auto& [k, v] : b->items()) keys.insert(k);
    for (const std::string& k : keys) {
      auto ia = a->find(k), ib = b->find(k);
      // RFC 6901 escaping so a key with "/" or "~" stays unambiguous.
      std::string token;
      for (char c : k) token += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
      DiffLeaves(pointer + "/" + token, ia == a->end() ? nullptr : &*ia, ib == b->end() ? nullptr : &*ib, out);
    }
    return;
  }
  if (a && b && *a == *b) return;
  out->push_back({pointer, a ? *a : Json(nullptr), b ? *b : Json(nullptr), a == nullptr, b == nullptr});
}

}  // namespace

size_t PlanComparison::failures() const {
  size_t n = 0;
  for (const auto& d : differences) n += d.within_tolerance ? 0 : 1;
  return n;
}

const std::vector<std::string>& ComparedSections() {
  static const std::vector<std::string> kSections = {"resolved", "layout", "groups", "memory", "time", "collectives"};
  return kSections;
}

PlanComparison ComparePlanSnapshots(const Json& recorded, const Json& fresh, double tolerance_percent) {
  Comparer c(tolerance_percent);
  static const Json kNull;
  for (const std::string& section : ComparedSections()) {
    const Json& a = recorded.is_object() && recorded.contains(section) ? recorded[section] : kNull;
    const Json& b = fresh.is_object() && fresh.contains(section) ? fresh[section] : kNull;
    c.Compare(section, a, b, false);
  }
  return c.Take();
}

std::vector<ValueChange> DiffJsonLeaves(const Json& old_value, const Json& new_value) {
  std::vector<ValueChange> out;
  DiffLeaves("", &old_value, &new_value, &out);
  return out;
}

std::string FormatRankGroup(const Json& group) {
  if (!group.is_array()) return group.dump();
  RankGroup g;
  for (const Json& v : group) g.push_back(v.is_number_integer() ? v.get<int>() : -1);
  return dsp::FormatRankGroup(g);  // the groups table's form (qualified: this overload would hide it)
}

}  // namespace dsp::sim
