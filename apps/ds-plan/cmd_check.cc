// SPDX-License-Identifier: Apache-2.0
// ds-plan check plan.json: recomputes a snapshot written by `ds-plan plan` from the inputs it
// records (paths as recorded, resolved against the current directory: CI runs from the repository
// root, where plan was run) and exits 1 with a diff when the group tables or any number moved
// beyond the tolerance. Changed input files are notes, not failures: editing a comment in the
// config must not break CI, and a changed config that moves the plan fails through the plan itself.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/data_files.h"
#include "apps/ds-plan/plan_setup.h"
#include "core/json/hjson_parser.h"
#include "core/schema/schema_check.h"
#include "core/util/file_io.h"
#include "core/util/sha256.h"
#include "core/util/text.h"
#include "sim/plan/check_report.h"
#include "sim/plan/diff.h"
#include "sim/plan/snapshot.h"

namespace dsp::app {
namespace {

struct CheckArgs {
  std::vector<std::string> plans;
  double tolerance = 1.0;  // percent
  std::string format = "text";
};

// The snapshot file, parsed strictly: it is written by ds-plan, never by hand.
Result<Json> ReadSnapshot(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.error();
  // The bounded parser (nesting at most 256 deep): a hostile snapshot nested 20,000 deep overflowed
  // the stack when the tree was copied (found by the fuzz regression under ASan).
  ParsedJson parsed = ParseJsonLenient(path, std::move(text).value());
  const bool strict = parsed.ok && std::none_of(parsed.diagnostics.begin(), parsed.diagnostics.end(),
                                                [](const Diagnostic& d) { return d.severity == Severity::kError; });
  Json doc = strict ? std::move(parsed.doc.root) : Json();
  if (!strict || !doc.is_object()) return Error{path + ": not a plan snapshot (not a JSON object)"};
  auto v = doc.find("schema_version");
  if (v == doc.end() || !v->is_number_integer()) return Error{path + ": no schema_version: not a plan snapshot"};
  if (v->get<int64_t>() != sim::kPlanSchemaVersion) {
    return Error{path + ": schema_version " + v->dump() + " is not supported (this ds-plan reads " +
                 std::to_string(sim::kPlanSchemaVersion) + "): write the snapshot again with ds-plan plan"};
  }
  return doc;
}

// A snapshot names the files it was computed from; check runs on pull requests (docs/ci.md), so a
// recorded path may only lead to a file inside the directory check runs in: no absolute path, no
// "..", no symlink out of it. Anything else could make check read and print any file the runner
// can read.
Status RecordedPathInside(const std::string& path) {
  const std::filesystem::path p(path);
  if (path.empty() || p.is_absolute()) return Error{"\"" + path.substr(0, 200) + "\" is not a relative path"};
  for (const auto& part : p) {
    if (part == "..") return Error{"\"" + path.substr(0, 200) + "\" leaves the working directory (\"..\")"};
  }
  std::error_code ec;
  const std::filesystem::path root = std::filesystem::canonical(std::filesystem::current_path(ec), ec);
  if (ec) return Error{"cannot resolve the working directory"};
  const std::filesystem::path real = std::filesystem::weakly_canonical(root / p, ec);
  if (ec) return Error{"cannot resolve \"" + path.substr(0, 200) + "\""};
  auto [r, q] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
  if (r != root.end()) {
    return Error{"\"" + path.substr(0, 200) + "\" resolves outside the working directory (a symlink?)"};
  }
  return Status::Ok();
}

// A model or cluster recorded by its preset name (plan --cluster h100-sxm): ds-plan's own bundled
// file (apps/ds-plan/data_files.h), trusted like the binary itself. Empty when the recorded path is
// a file here, or names no preset.
std::string BundledPreset(const char* kind, const std::string& recorded) {
  std::error_code ec;
  if (recorded.find('/') != std::string::npos || std::filesystem::exists(recorded, ec)) return "";
  return FindPreset(kind, recorded).string();
}

// Checks one snapshot; the JSON report goes to *json (format json), the text one to stdout.
int CheckOne(const std::string& plan, const CheckArgs& args, Json* json) {
  auto recorded = ReadSnapshot(plan);
  if (!recorded.ok()) return UsageError(recorded.error().message);
  auto inputs = sim::ReadSnapshotInputs(*recorded);
  if (!inputs.ok()) return UsageError(plan + ": " + inputs.error().message);
  static const std::set<std::string> kRecompute = {"none", "selective", "full"};
  static const std::set<std::string> kConvention = {"zero-paper", "deepspeed"};
  if (!kRecompute.contains(inputs->recompute) || !kConvention.contains(inputs->convention)) {
    return UsageError(plan + ": /inputs/recompute or /inputs/convention has an unknown value");
  }

  sim::PlanCheckResult result;
  result.plan_path = plan;
  result.tolerance_percent = args.tolerance;
  result.recorded_version = inputs->ds_plan_version;
  result.current_version = kVersion;
  // Missing inputs are IO errors (exit 2): the check could not run, which is not a finding.
  for (auto [name, file] : {std::pair{"config", &inputs->config}, {"model", &inputs->model},
                            {"cluster", &inputs->cluster}}) {
    const std::string bundled =
        file == &inputs->config ? "" : BundledPreset(file == &inputs->model ? "models" : "clusters", file->path);
    if (!bundled.empty()) file->path = bundled;
    if (Status inside = bundled.empty() ? RecordedPathInside(file->path) : Status::Ok(); !inside.ok()) {
      return UsageError(plan + ": recorded " + name + " path " + inside.error().message +
                        ": check reads only files inside the directory it runs in");
    }
    // Regular files only: a FIFO would block the read for ever, a device never ends.
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file->path, ec)) {
      return UsageError(plan + ": recorded " + name + " " + EscapeControl(file->path.substr(0, 200)) +
                        " is not a regular file: check reads only the config, model and cluster files a snapshot records");
    }
    auto bytes = ReadFile(file->path);
    if (!bytes.ok()) return UsageError(plan + ": recorded " + name + ": " + bytes.error().message);
    std::string now = Sha256Hex(bytes.value());
    if (now == file->sha256) continue;
    result.changed_inputs.push_back({name, file->path, file->sha256, now});
    if (file == &inputs->config) {
      Json current = ParseDeepSpeedConfig(file->path, std::move(bytes).value()).doc.root;
      // Only a DeepSpeed config's keys are shown: never echo a file that is not one (a snapshot
      // naming a credentials file would otherwise print its token).
      if (HasDeepSpeedKeys(current) && HasDeepSpeedKeys(inputs->config_content)) {
        result.config_changes = sim::DiffJsonLeaves(inputs->config_content, current);
      }
    }
  }

  int code = kExitOk;
  std::optional<Json> fresh = ComputeSnapshot(SimArgsFromInputs(*inputs), &code);
  // The config no longer validates or plans (exit 1, its errors are on stderr), or an input became
  // unusable (exit 2): still report which inputs changed, since that is usually why.
  result.recomputed = fresh.has_value();
  if (fresh) result.comparison = sim::ComparePlanSnapshots(*recorded, *fresh, args.tolerance);
  if (args.format == "json") {
    *json = sim::PlanCheckToJson(result);
  } else {
    std::cout << sim::RenderPlanCheckText(result);
  }
  if (!fresh) return code;
  return result.ok() ? kExitOk : kExitFindings;
}

// Several snapshots (a pre-commit hook passes every changed one): each is checked in turn; the exit
// code is the worst (2 could not check one, 1 one changed, 0 all hold). JSON: one plan's report as
// an object, several as an array in the order given.
int RunCheck(const CheckArgs& args) {
  if (!std::isfinite(args.tolerance) || args.tolerance < 0) return UsageError("--tolerance must be a percentage >= 0");
  int worst = kExitOk;
  Json reports = Json::array();
  for (const std::string& plan : args.plans) {
    Json json;
    worst = std::max(worst, CheckOne(plan, args, &json));
    if (!json.is_null()) reports.push_back(std::move(json));
  }
  if (args.format == "json" && !reports.empty()) {
    std::cout << (args.plans.size() == 1 ? reports.front() : reports).dump(2) << "\n";
  }
  return worst;
}

}  // namespace

Command AddCheckCommand(CLI::App& root) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* app = root.add_subcommand(
      "check", "recompute a plan snapshot from its recorded inputs and fail when the plan changed");
  app->add_option("plans", args->plans, "snapshots written by ds-plan plan (each checked in turn)")->required();
  app->add_option("--tolerance", args->tolerance,
                  "largest accepted relative change of a floating-point value, in percent (default 1)");
  app->add_option("--format", args->format, "output format")->check(CLI::IsMember({"text", "json"}));
  return Command{app, [args] { return RunCheck(*args); }};
}

}  // namespace dsp::app
