// Renders validate results: compiler-style text, JSON (schemas/validate-report.schema.json),
// SARIF 2.1.0 for code scanning, and GitHub Actions workflow commands.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/validate/validator.h"

namespace dsp {

enum class ReportFormat { kText, kJson, kSarif, kGithub };

std::string RenderText(const std::vector<FileReport>& files);
std::string RenderJson(const std::vector<FileReport>& files);
std::string RenderSarif(const std::vector<FileReport>& files, std::string_view tool_version);
std::string RenderGithub(const std::vector<FileReport>& files);

std::string RenderValidateReport(const std::vector<FileReport>& files, ReportFormat format,
                                 std::string_view tool_version);

// The layout as JSON with nulls for what cannot be derived (shared with the groups report).
Json LayoutToJson(const LayoutSummary& layout);

}  // namespace dsp
