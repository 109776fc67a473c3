// SPDX-License-Identifier: Apache-2.0
#include "sim/plan/check_report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/util/text.h"

namespace dsp::sim {
namespace {

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Four significant figures: a 1% tolerance must be visible in the numbers, not only in the
// percentage after them.
std::string Bytes(double b) {
  double a = std::fabs(b);
  if (a < 1e3) return FormatNumber("%.0f B", b);
  if (a < 1e6) return FormatNumber("%.2f KB", b / 1e3);
  if (a < 1e9) return FormatNumber("%.2f MB", b / 1e6);
  return FormatNumber("%.3f GB", b / 1e9);
}

std::string Seconds(double s) {
  double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-3) return FormatNumber("%.2f us", s * 1e6);
  if (a < 1) return FormatNumber("%.3f ms", s * 1e3);
  return FormatNumber("%.4f s", s);
}

std::string Relative(double rel) {
  if (std::isinf(rel)) return "(was 0)";
  return FormatNumber("(%+.2f%%)", rel * 100);
}

std::string Short(const std::string& sha) { return sha.substr(0, 12); }

std::string DiffLine(const PlanDifference& d) {
  if (!d.detail.empty() && d.field.rfind("groups.tables.", 0) == 0) {
    return d.field.substr(14) + ": " + d.detail;
  }
  std::string line = d.field + ": " + FormatPlanValue(d.field, d.old_value) + " -> " +
                     FormatPlanValue(d.field, d.new_value);
  if (d.relative_change) line += " " + Relative(*d.relative_change);
  if (!d.detail.empty()) line += " (" + d.detail + ")";
  return line;
}

Json RelativeJson(const std::optional<double>& rel) {
  if (!rel || std::isinf(*rel)) return nullptr;
  return *rel;
}

}  // namespace

std::string FormatPlanValue(const std::string& field, const Json& value) {
  if (value.is_null()) return "absent";
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number()) {
    double v = value.get<double>();
    if (EndsWith(field, "_bytes") || EndsWith(field, "bytes_per_step")) return Bytes(v);
    if (EndsWith(field, "seconds")) return Seconds(v);
    if (EndsWith(field, "mfu")) return FormatNumber("%.2f %%", v * 100);
    if (EndsWith(field, "tokens_per_second")) return FormatNumber("%.0f", v);
    return FormatNumber("%g", v);
  }
  return value.dump();
}

std::string RenderPlanCheckText(const PlanCheckResult& r) {
  std::ostringstream out;
  const std::string tol = FormatNumber("%g%%", r.tolerance_percent);
  const size_t failures = r.comparison.failures();
  if (!r.recomputed) {
    out << r.plan_path << ": CHANGED, the recorded inputs no longer give a plan (errors above)\n";
  } else if (failures == 0) {
    out << EscapeControl(r.plan_path) << ": ok, the plan recomputed from its inputs matches (tolerance " << tol << ")\n";
  } else {
    out << EscapeControl(r.plan_path) << ": CHANGED, " << failures << (failures == 1 ? " difference" : " differences")
        << " (tolerance " << tol << ")\n";
  }
  if (!r.changed_inputs.empty() || !r.config_changes.empty() || r.recorded_version != r.current_version) {
    out << "inputs changed since the snapshot (notes):\n";
    if (r.recorded_version != r.current_version) {
      out << "  ds-plan " << (r.recorded_version.empty() ? "?" : r.recorded_version) << " wrote the snapshot, this is "
          << r.current_version << "\n";
    }
    for (const InputChange& c : r.changed_inputs) {
      out << "  " << c.input << " " << EscapeControl(c.path) << ": sha256 " << Short(c.old_sha256) << " -> " << Short(c.new_sha256)
          << "\n";
      if (c.input != "config") continue;
      for (const ValueChange& v : r.config_changes) {
        out << "    " << (v.pointer.empty() ? "/" : EscapeControl(v.pointer)) << ": " << (v.old_absent ? "absent" : v.old_value.dump())
            << " -> " << (v.new_absent ? "absent" : v.new_value.dump()) << "\n";
      }
    }
  }
  std::vector<const PlanDifference*> groups, values, within;
  for (const PlanDifference& d : r.comparison.differences) {
    if (d.within_tolerance) {
      within.push_back(&d);
    } else if (d.field.rfind("groups.tables.", 0) == 0) {
      groups.push_back(&d);
    } else {
      values.push_back(&d);
    }
  }
  if (!groups.empty()) {
    out << "group tables:\n";
    for (const auto* d : groups) out << "  " << DiffLine(*d) << "\n";
  }
  if (!values.empty()) {
    out << "values:\n";
    for (const auto* d : values) out << "  " << DiffLine(*d) << "\n";
  }
  if (!within.empty()) {
    out << "within tolerance:\n";
    for (const auto* d : within) out << "  " << DiffLine(*d) << "\n";
  }
  return out.str();
}

Json PlanCheckToJson(const PlanCheckResult& r) {
  Json inputs = Json::array();
  for (const InputChange& c : r.changed_inputs) {
    inputs.push_back({{"input", c.input}, {"path", c.path}, {"old_sha256", c.old_sha256}, {"new_sha256", c.new_sha256}});
  }
  Json config = Json::array();
  for (const ValueChange& v : r.config_changes) {
    config.push_back({{"pointer", v.pointer},
                      {"old", v.old_absent ? Json(nullptr) : v.old_value},
                      {"new", v.new_absent ? Json(nullptr) : v.new_value},
                      {"old_absent", v.old_absent},
                      {"new_absent", v.new_absent}});
  }
  Json diffs = Json::array();
  for (const PlanDifference& d : r.comparison.differences) {
    diffs.push_back({{"field", d.field},
                     {"old", d.old_value},
                     {"new", d.new_value},
                     {"relative_change", RelativeJson(d.relative_change)},
                     {"within_tolerance", d.within_tolerance},
                     {"detail", d.detail}});
  }
  return {{"schema_version", 1},
          {"plan", r.plan_path},
          {"ok", r.ok()},
          {"recomputed", r.recomputed},
          {"tolerance_percent", r.tolerance_percent},
          {"failures", r.comparison.failures()},
          {"ds_plan_version", {{"recorded", r.recorded_version}, {"current", r.current_version}}},
          {"changed_inputs", std::move(inputs)},
          {"config_changes", std::move(config)},
          {"differences", std::move(diffs)}};
}

}  // namespace dsp::sim
