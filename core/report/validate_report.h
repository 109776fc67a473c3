// SPDX-License-Identifier: Apache-2.0
// Renders validate results: compiler-style text, JSON (schemas/validate-report.schema.json),
// SARIF 2.1.0 for code scanning, and GitHub Actions workflow commands.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/validate/validator.h"

namespace dsp {

enum class ReportFormat { kText, kJson, kSarif, kGithub };

// kColor adds ANSI colours as compilers do: the location bold, "error:" red, "warning:" magenta,
// "note:" cyan, the caret green. The caller decides (apps/ds-plan/terminal_color.h).
enum class TextStyle { kPlain, kColor };

std::string RenderText(const std::vector<FileReport>& files, TextStyle style = TextStyle::kPlain);
std::string RenderJson(const std::vector<FileReport>& files);
// An input that could not be read (validate still writes SARIF for the rest, so a CI step that
// uploads the file has one to upload).
struct UnreadInput {
  std::string path;
  std::string message;
};
std::string RenderSarif(const std::vector<FileReport>& files, std::string_view tool_version,
                        const std::vector<UnreadInput>& unread = {});
// A path as a SARIF artifactLocation.uri (RFC 3986): relative paths stay relative references,
// absolute ones become file:// URIs; every byte outside the unreserved set and "/" is
// percent-encoded.
std::string SarifUri(std::string_view path);
std::string RenderGithub(const std::vector<FileReport>& files);

std::string RenderValidateReport(const std::vector<FileReport>& files, ReportFormat format,
                                 std::string_view tool_version, TextStyle style = TextStyle::kPlain);

// The layout as JSON with nulls for what cannot be derived (shared with the groups report).
Json LayoutToJson(const LayoutSummary& layout);

}  // namespace dsp
