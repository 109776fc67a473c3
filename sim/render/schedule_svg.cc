// SPDX-License-Identifier: Apache-2.0
#include "sim/render/schedule_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "sim/schedule/summary.h"

namespace dsp::sim::render {
namespace {

constexpr double kLeft = 150;   // label column
constexpr double kWidth = 1100; // time area
constexpr double kLane = 16;
constexpr double kMemoryHeight = 60;

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.')) {
    const bool dot = s.back() == '.';
    s.pop_back();
    if (dot) break;
  }
  return s;
}

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// 1, 2 or 5 times a power of ten, so about `target` ticks span `range`.
double TickStep(double range, int target) {
  const double raw = range / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

}  // namespace

std::string CategoryColor(const std::string& category) {
  static const std::pair<const char*, const char*> colors[] = {
      {"compute forward", "#9ecae1"}, {"compute backward", "#4292c6"}, {"recompute", "#c6dbef"},
      {"optimizer", "#969696"},       {"all_reduce", "#fb6a4a"},       {"all_gather", "#74c476"},
      {"reduce_scatter", "#fd8d3c"},  {"all_to_all", "#9e9ac8"},       {"broadcast", "#bcbddc"},
      {"checkpoint copy", "#e7ba52"}};
  for (const auto& [name, color] : colors) {
    if (category == name) return color;
  }
  return "#d9d9d9";
}

namespace {

// Where a time and a memory figure land on the drawing.
struct Scales {
  double span = 1;  // seconds across the time axis
  double low = 0, peak = 0;  // the memory curves' shared axis, bytes
  double hbm_bytes = 0;
  bool hbm_known = false, hbm_on_axis = false;
  double x(double seconds) const { return kLeft + kWidth * seconds / span; }
  // The memory lane's y for `bytes`, the lane starting at `my`.
  double y(double my, double bytes) const {
    return my + kMemoryHeight - (peak > low ? kMemoryHeight * (bytes - low) / (peak - low) : 0);
  }
};

// Memory in use on one rank: a step curve scaled to the highest peak of the shown ranks, its
// peak, HBM's line or headroom, and the baseline's curve.
std::string MemoryLaneSvg(const schedule::RankTimeline& tl, const schedule::RankTimeline* bt,
                          const MemoryBaseline& baseline, const Scales& scale, double my) {
  std::string out;
  out += "<text x=\"20\" y=\"" + Fmt(my + 12) + "\">memory</text>\n";
  out += "<text x=\"20\" y=\"" + Fmt(my + 26) + "\">peak " + Fmt(tl.peak_bytes / 1e9) + " GB</text>\n";
  out += "<text x=\"20\" y=\"" + Fmt(my + kMemoryHeight) + "\">axis from " + Fmt(scale.low / 1e9) + " GB</text>\n";
  std::string points = Fmt(scale.x(0)) + "," + Fmt(scale.y(my, scale.low));
  double prev = tl.memory.empty() ? 0 : tl.memory.front().second;
  for (const auto& [t, bytes] : tl.memory) {
    points += " " + Fmt(scale.x(t)) + "," + Fmt(scale.y(my, prev)) + " " + Fmt(scale.x(t)) + "," + Fmt(scale.y(my, bytes));
    prev = bytes;
  }
  points += " " + Fmt(scale.x(scale.span)) + "," + Fmt(scale.y(my, prev)) + " " + Fmt(scale.x(scale.span)) + "," + Fmt(scale.y(my, scale.low));
  out += "<polygon class=\"memory\" points=\"" + points + "\" fill=\"#fdd0a2\" stroke=\"#d94801\" stroke-width=\"0.8\"/>\n";
  out += "<line x1=\"" + Fmt(scale.x(tl.peak_at)) + "\" y1=\"" + Fmt(my) + "\" x2=\"" + Fmt(scale.x(tl.peak_at)) + "\" y2=\"" +
         Fmt(my + kMemoryHeight) + "\" stroke=\"#7f2704\" stroke-dasharray=\"2,2\"/>\n";
  if (scale.hbm_known) {
    const bool over = tl.peak_bytes > scale.hbm_bytes;
    const std::string verdict = "HBM " + Fmt(scale.hbm_bytes / 1e9) + " GB" +
                                (over ? ": does not fit, peak " + Fmt((tl.peak_bytes - scale.hbm_bytes) / 1e9) + " GB over"
                                      : ": " + Fmt((scale.hbm_bytes - tl.peak_bytes) / 1e9) + " GB free at the peak");
    if (scale.hbm_on_axis) {
      out += "<line class=\"hbm\" x1=\"" + Fmt(kLeft) + "\" y1=\"" + Fmt(scale.y(my, scale.hbm_bytes)) + "\" x2=\"" +
             Fmt(kLeft + kWidth) + "\" y2=\"" + Fmt(scale.y(my, scale.hbm_bytes)) +
             "\" stroke=\"#cb181d\" stroke-width=\"1.2\"><title>" + Escape(verdict) + "</title></line>\n";
    }
    out += "<text class=\"hbm-label\" x=\"" + Fmt(kLeft + kWidth - 4) + "\" y=\"" +
           Fmt(scale.hbm_on_axis ? scale.y(my, scale.hbm_bytes) - 3 : my + 10) + "\" text-anchor=\"end\" fill=\"" +
           (over ? "#cb181d" : "#525252") + "\">" + Escape(verdict) + "</text>\n";
  }
  if (bt != nullptr) {
    std::string line;
    double before = bt->memory.empty() ? 0 : bt->memory.front().second;
    for (const auto& [t, bytes] : bt->memory) {
      line += (line.empty() ? "" : " ") + Fmt(scale.x(t)) + "," + Fmt(scale.y(my, before)) + " " + Fmt(scale.x(t)) + "," + Fmt(scale.y(my, bytes));
      before = bytes;
    }
    line += " " + Fmt(scale.x(scale.span)) + "," + Fmt(scale.y(my, before));
    out += "<polyline class=\"memory-baseline\" points=\"" + line +
           "\" fill=\"none\" stroke=\"#525252\" stroke-width=\"0.8\" stroke-dasharray=\"4,2\"><title>" +
           Escape(baseline.label) + ": peak " + Fmt(bt->peak_bytes / 1e9) + " GB</title></polyline>\n";
    out += "<text x=\"20\" y=\"" + Fmt(my + 40) + "\" fill=\"#525252\">- - " + Escape(baseline.label) + " " +
           Fmt(bt->peak_bytes / 1e9) + " GB</text>\n";
  }
  return out;
}

// The time axis in ms and the legend of the task categories present.
std::string AxisAndLegendSvg(const schedule::Program& program, double ms, double legend_y) {
  std::string out;
  // Time axis.
  const double axis_y = legend_y - 20;
  out += "<line x1=\"" + Fmt(kLeft) + "\" y1=\"" + Fmt(axis_y) + "\" x2=\"" + Fmt(kLeft + kWidth) + "\" y2=\"" +
         Fmt(axis_y) + "\" stroke=\"black\"/>\n";
  const double step = TickStep(ms, 10);
  for (double t = 0; t <= ms + 1e-9 && t / step < 100; t += step) {
    const double px = kLeft + kWidth * t / ms;
    out += "<line x1=\"" + Fmt(px) + "\" y1=\"" + Fmt(axis_y) + "\" x2=\"" + Fmt(px) + "\" y2=\"" + Fmt(axis_y + 4) +
           "\" stroke=\"black\"/>\n";
    out += "<text x=\"" + Fmt(px) + "\" y=\"" + Fmt(axis_y + 15) + "\" text-anchor=\"middle\">" + Fmt(t) + "</text>\n";
  }
  out += "<text x=\"" + Fmt(kLeft - 10) + "\" y=\"" + Fmt(axis_y + 15) + "\" text-anchor=\"end\">ms</text>\n";

  // Legend: the categories present.
  std::set<std::string> present;
  for (const schedule::Task& t : program.tasks) present.insert(schedule::TaskCategory(t));
  double lx = kLeft;
  for (const std::string& cat : present) {
    out += "<rect x=\"" + Fmt(lx) + "\" y=\"" + Fmt(legend_y + 8) + "\" width=\"12\" height=\"12\" fill=\"" +
           CategoryColor(cat) + "\"/>\n";
    out += "<text x=\"" + Fmt(lx + 16) + "\" y=\"" + Fmt(legend_y + 18) + "\">" + Escape(cat) + "</text>\n";
    lx += 24 + 7.0 * static_cast<double>(cat.size());
  }
  return out;
}

}  // namespace

std::string ScheduleToSvg(const schedule::Program& program, const schedule::Schedule& schedule,
                          const std::vector<int>& ranks, const std::string& title,
                          const MemoryBaseline& baseline, double hbm_bytes) {
  std::set<int> stream_set;
  for (const schedule::Task& t : program.tasks) stream_set.insert(t.stream);
  const std::vector<int> streams(stream_set.begin(), stream_set.end());
  const schedule::Schedule* base = baseline.schedule;
  double span = schedule.step_seconds > 0 ? schedule.step_seconds : 1.0;
  if (base != nullptr) span = std::max(span, base->step_seconds);
  if (!std::isfinite(span) || span <= 0) span = 1.0;  // callers refuse non-finite steps; never loop on one
  const double ms = span * 1e3;
  // The memory curves share one scale from the lowest to the highest value of the shown ranks:
  // the resident model states would otherwise flatten what changes during the step.
  double peak = 0, low = -1;
  for (int r : ranks) {
    for (const schedule::Schedule* sc : {&schedule, base}) {
      if (sc == nullptr) continue;
      peak = std::max(peak, sc->Of(r).peak_bytes);
      for (const auto& [t, bytes] : sc->Of(r).memory) low = low < 0 ? bytes : std::min(low, bytes);
    }
  }
  if (low < 0 || low >= peak) low = 0;
  // The axis reaches up to HBM when HBM is within half the curve's range above its peak (or below
  // it: the plan does not fit); far above, the curve keeps its own scale and the headroom is
  // written out instead, so a small curve is not flattened against a distant line.
  const bool hbm_known = hbm_bytes > 0 && std::isfinite(hbm_bytes);
  bool hbm_on_axis = hbm_known && hbm_bytes > low && hbm_bytes <= peak + 0.5 * (peak - low);
  if (hbm_known && hbm_bytes <= low) {
    low = 0;  // everything is above HBM: show the whole range from zero
    hbm_on_axis = true;
  }
  if (hbm_on_axis) peak = std::max(peak, hbm_bytes);
  const Scales scale{span, low, peak, hbm_bytes, hbm_known, hbm_on_axis};
  const double rank_height = kLane * static_cast<double>(streams.size()) + kMemoryHeight + 30;
  const double top = 40;
  const double legend_y = top + rank_height * static_cast<double>(ranks.size()) + 30;
  const double height = legend_y + 40;
  const double width = kLeft + kWidth + 20;

  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Fmt(width) + "\" height=\"" + Fmt(height) +
         "\" viewBox=\"0 0 " + Fmt(width) + " " + Fmt(height) + "\" font-family=\"Helvetica,Arial,sans-serif\" font-size=\"11\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"10\" y=\"20\" font-size=\"14\">" + Escape(title) + "</text>\n";

  for (size_t ri = 0; ri < ranks.size(); ++ri) {
    const int rank = ranks[ri];
    const schedule::RankTimeline& tl = schedule.Of(rank);
    const double y0 = top + rank_height * static_cast<double>(ri);
    out += "<g id=\"rank_" + std::to_string(rank) + "\">\n";
    out += "<text x=\"10\" y=\"" + Fmt(y0 + 12) + "\" font-weight=\"bold\">rank " + std::to_string(rank) + "</text>\n";
    for (size_t si = 0; si < streams.size(); ++si) {
      const double ly = y0 + 18 + kLane * static_cast<double>(si);
      out += "<text x=\"20\" y=\"" + Fmt(ly + 11) + "\">" + Escape(schedule::StreamName(streams[si])) + "</text>\n";
      out += "<rect x=\"" + Fmt(kLeft) + "\" y=\"" + Fmt(ly) + "\" width=\"" + Fmt(kWidth) + "\" height=\"" +
             Fmt(kLane - 2) + "\" fill=\"#f7f7f7\"/>\n";
    }
    for (size_t i = 0; i < program.tasks.size(); ++i) {
      const schedule::Task& task = program.tasks[i];
      const schedule::TaskTime& t = tl.times[i];
      if (t.end <= t.start) continue;
      const size_t si = static_cast<size_t>(std::find(streams.begin(), streams.end(), task.stream) - streams.begin());
      const double ly = y0 + 18 + kLane * static_cast<double>(si);
      const std::string cat = schedule::TaskCategory(task);
      out += "<rect class=\"task\" x=\"" + Fmt(scale.x(t.start)) + "\" y=\"" + Fmt(ly) + "\" width=\"" +
             Fmt(std::max(0.2, scale.x(t.end) - scale.x(t.start))) + "\" height=\"" + Fmt(kLane - 2) + "\" fill=\"" +
             CategoryColor(cat) + "\"><title>" + Escape(task.name) + " (" + Escape(cat) + ", " +
             Fmt((t.end - t.start) * 1e3) + " ms at " + Fmt(t.start * 1e3) + " ms)</title></rect>\n";
    }
    const double my = y0 + 18 + kLane * static_cast<double>(streams.size()) + 6;
    out += MemoryLaneSvg(tl, base != nullptr ? &base->Of(rank) : nullptr, baseline, scale, my);
    out += "</g>\n";
  }

  out += AxisAndLegendSvg(program, ms, legend_y);
  out += "</svg>\n";
  return out;
}

}  // namespace dsp::sim::render
