// SPDX-License-Identifier: Apache-2.0
#include "sim/calibrate/step_sweep.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "sim/calibrate/tsv.h"

namespace dsp::sim {
namespace {

class SweepRow {
 public:
  SweepRow(const std::map<std::string, std::string>& cells, int line) : cells_(cells), line_(line) {}

  const std::string* Text(const std::string& column, bool required, std::string* error) const {
    auto it = cells_.find(column);
    if (it != cells_.end() && !it->second.empty()) return &it->second;
    if (required && error->empty()) *error = Where(column) + "is empty or missing";
    return nullptr;
  }
  // A finite number in [lo, hi]; `fallback` when the column is absent and not required.
  double Number(const std::string& column, double lo, double hi, bool required, double fallback,
                std::string* error) const {
    const std::string* text = Text(column, required, error);
    if (text == nullptr) return fallback;
    char* end = nullptr;
    const double v = std::strtod(text->c_str(), &end);
    if (end == text->c_str() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) {
      if (error->empty()) *error = Where(column) + "'" + *text + "' is not a number in the expected range";
      return fallback;
    }
    return v;
  }

 private:
  std::string Where(const std::string& column) const {
    return "line " + std::to_string(line_) + ", column " + column + ": ";
  }
  const std::map<std::string, std::string>& cells_;
  int line_;
};

}  // namespace

Result<std::vector<SweepStep>> ParseStepSweep(std::string_view tsv) {
  std::istringstream in{std::string(tsv)};
  std::string line;
  std::vector<std::string> header;
  std::vector<SweepStep> steps;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (header.empty()) {
      header = SplitTabs(line);
      continue;
    }
    const std::vector<std::string> cells = SplitTabs(line);
    std::map<std::string, std::string> named;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) named[header[i]] = cells[i];
    if (named["status"] != "ok") continue;
    const SweepRow row(named, number);
    std::string error;
    SweepStep s;
    for (const char* column : {"model", "config", "recompute", "attention"}) row.Text(column, true, &error);
    s.config = named["config"];
    s.micro_batch = static_cast<int64_t>(row.Number("micro_batch", 1, 1 << 20, true, 1, &error));
    s.seq_len = static_cast<int64_t>(row.Number("seq", 1, 1 << 26, true, 1, &error));
    s.step_ms = row.Number("step_ms_median", 1e-3, 1e9, true, 0, &error);
    s.host_forward_ms = row.Number("host_forward_ms", 0, 1e9, false, 0, &error);
    s.host_backward_ms = row.Number("host_backward_ms", 0, 1e9, false, 0, &error);
    if (const std::string* trace = row.Text("trace", false, &error)) s.trace = *trace;
    const std::string& recompute = named["recompute"];
    const std::string& attention = named["attention"];
    if (error.empty() && recompute != "none" && recompute != "full") {
      error = "line " + std::to_string(number) + ", column recompute: '" + recompute + "' is not none or full";
    }
    if (error.empty() && attention != "sdpa" && attention != "eager") {
      error = "line " + std::to_string(number) + ", column attention: '" + attention + "' is not sdpa or eager";
    }
    if (!error.empty()) return Error{error};
    s.full_recompute = recompute == "full";
    s.flash_attention = attention == "sdpa";
    s.label = named["model"] + " mb" + named["micro_batch"] + " s" + named["seq"] + " " + recompute + " " + attention;
    steps.push_back(std::move(s));
  }
  if (header.empty()) return Error{"no header line: the file is empty"};
  return steps;
}

}  // namespace dsp::sim
