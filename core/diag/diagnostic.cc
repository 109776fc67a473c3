// SPDX-License-Identifier: Apache-2.0
#include "core/diag/diagnostic.h"

#include <algorithm>
#include <tuple>

namespace dsp {

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kNote:
      return "note";
  }
  return "error";
}

DiagnosticCounts Count(const std::vector<Diagnostic>& diags) {
  DiagnosticCounts c;
  for (const auto& d : diags) {
    switch (d.severity) {
      case Severity::kError:
        ++c.errors;
        break;
      case Severity::kWarning:
        ++c.warnings;
        break;
      case Severity::kNote:
        ++c.notes;
        break;
    }
  }
  return c;
}

void SortDiagnostics(std::vector<Diagnostic>& diags) {
  auto key = [](const Diagnostic& d) {
    int line = d.loc.known() ? d.loc.line : 1 << 30;
    return std::make_tuple(line, d.loc.column, d.pointer, d.rule_id, d.message);
  };
  std::stable_sort(diags.begin(), diags.end(),
                   [&](const Diagnostic& a, const Diagnostic& b) { return key(a) < key(b); });
}

}  // namespace dsp
