// SPDX-License-Identifier: Apache-2.0
#include "apps/ds-plan/calibrate_modern.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>

#include "apps/ds-plan/data_files.h"
#include "apps/ds-plan/model_input.h"
#include "sim/session/evaluation.h"

namespace dsp::app {
namespace {

namespace fs = std::filesystem;

// "models/x.json": beside the table, under its modern/ folder (samples/runs keeps the models of
// its modern runs there), or a bundled model of that name.
Result<std::string> ModelFile(const std::string& column, const std::string& table) {
  const fs::path dir = fs::path(table).parent_path();
  for (const fs::path& p : {dir / column, dir / "modern" / column}) {
    if (fs::is_regular_file(p)) return p.string();
  }
  const fs::path bundled = FindPreset("models", fs::path(column).stem().string());
  if (!bundled.empty()) return bundled.string();
  return Error{"model " + column + " not found beside " + table + " nor among the bundled models"};
}

}  // namespace

Result<ModernCalibration> ModernCalibrationRuns(const std::vector<sim::TsvRecord>& rows, const std::string& table,
                                                const std::string& hardware, const std::vector<std::string>& hold_out,
                                                const std::vector<std::string>& groups) {
  std::set<std::string> machines, unseen_groups(groups.begin(), groups.end());
  auto in_groups = [&](const sim::TsvRecord& r) {
    return groups.empty() || std::find(groups.begin(), groups.end(), r.at("group")) != groups.end();
  };
  for (const sim::TsvRecord& r : rows) {
    if (!in_groups(r)) continue;
    machines.insert(r.at("hardware"));
    unseen_groups.erase(r.at("group"));
  }
  if (!unseen_groups.empty()) return Error{"--group " + *unseen_groups.begin() + ": no run of the table is in it"};
  if (hardware.empty() && machines.size() > 1) {
    std::string names;
    for (const std::string& m : machines) names += (names.empty() ? "" : ", ") + m;
    return Error{"the runs are on several machines (" + names + "): calibrate one with --hardware NAME"};
  }
  if (!hardware.empty() && machines.count(hardware) == 0) {
    return Error{"--hardware " + hardware + ": no run of the table is on it"};
  }
  ModernCalibration out;
  std::set<std::string> unmatched(hold_out.begin(), hold_out.end());
  for (const sim::TsvRecord& r : rows) {
    if ((!hardware.empty() && r.at("hardware") != hardware) || !in_groups(r)) continue;
    auto plan = sim::PlanModernRun(r);
    if (!plan.ok()) return plan.error();
    auto path = ModelFile(plan->model, table);
    if (!path.ok()) return Error{plan->run_id + ": " + path.error().message};
    auto model = LoadModel(*path);
    if (!model.ok()) return Error{plan->run_id + ": " + model.error().message};
    auto spec = std::make_shared<const ModelSpec>(std::move(model).value());
    sim::CalibrationRun run;
    run.run_id = plan->run_id;
    run.measured_seconds = plan->measured_seconds;
    run.held_out = unmatched.erase(plan->run_id) > 0;
    run.predict = [spec, p = *plan](const sim::Cluster& c) -> Result<sim::RunPrediction> {
      auto e = sim::Evaluate(*spec, c, p.run_id + ".json", p.config.dump(), {}, p.knobs);
      if (!e->has_numbers()) return Error{e->message.empty() ? "the config has errors" : e->message};
      sim::RunPrediction r;
      r.seconds = e->time.step_seconds;
      r.error = r.seconds / p.measured_seconds - 1;
      r.memory = e->memory;
      r.time = e->time;
      return r;
    };
    out.runs.push_back(std::move(run));
  }
  if (!unmatched.empty()) return Error{"--hold-out " + *unmatched.begin() + ": no such run on this machine"};
  return out;
}

}  // namespace dsp::app
