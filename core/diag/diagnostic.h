// SPDX-License-Identifier: Apache-2.0
// A diagnostic is one finding about one value of one file: a stable rule id, a severity, what is
// wrong, how to fix it, and where (JSON pointer plus line:column).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/diag/source.h"

namespace dsp {

enum class Severity { kError, kWarning, kNote };

std::string_view SeverityName(Severity s);

struct Diagnostic {
  std::string rule_id;
  Severity severity = Severity::kError;
  std::string message;
  std::string hint;     // what to do about it; may be empty
  std::string pointer;  // RFC 6901 JSON pointer of the offending value ("" = whole document)
  SourceLoc loc;        // where that value starts in the file (unknown for command-line input)
};

// Counts by severity, used for exit codes and summaries.
struct DiagnosticCounts {
  int errors = 0;
  int warnings = 0;
  int notes = 0;
};
DiagnosticCounts Count(const std::vector<Diagnostic>& diags);

// Sort by position in the file (unknown locations last), then rule id, so output is deterministic.
void SortDiagnostics(std::vector<Diagnostic>& diags);

}  // namespace dsp
