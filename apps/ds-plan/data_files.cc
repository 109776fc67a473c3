// SPDX-License-Identifier: Apache-2.0
#include "apps/ds-plan/data_files.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <system_error>

namespace dsp::app {
namespace fs = std::filesystem;

std::vector<fs::path> DataDirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("DSP_DATA_DIR"); env != nullptr && *env != '\0') dirs.emplace_back(env);
  std::error_code ec;
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  const bool exe_known = !ec;
  if (exe_known) {
    dirs.push_back(exe_dir / ".." / "share" / "ds-plan");
#if defined(DSP_BUILD_TREE_DIR) && defined(DSP_SOURCE_SAMPLES_DIR)
    // A binary in its own build tree (not installed, not copied elsewhere) reads the source's samples.
    if (fs::equivalent(exe_dir, DSP_BUILD_TREE_DIR, ec) && !ec) dirs.emplace_back(DSP_SOURCE_SAMPLES_DIR);
#endif
  }
  if (!exe_known) {
    // Without /proc (a bare chroot) the executable's folder is unknown: the usual install prefixes.
    dirs.emplace_back("/usr/local/share/ds-plan");
    dirs.emplace_back("/usr/share/ds-plan");
  }
  return dirs;
}

fs::path FindPreset(const std::string& kind, const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) return {};
  const std::string file = name.ends_with(".json") ? name : name + ".json";
  std::error_code ec;
  for (const fs::path& dir : DataDirs()) {
    fs::path candidate = dir / kind / file;
    if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal();
  }
  return {};
}

std::vector<std::string> PresetNames(const std::string& kind) {
  std::set<std::string> names;
  std::error_code ec;
  for (const fs::path& dir : DataDirs()) {
    for (fs::directory_iterator it(dir / kind, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".json") names.insert(it->path().stem().string());
    }
    ec.clear();
  }
  return {names.begin(), names.end()};
}

namespace {
std::map<std::string, std::string>& ResolvedPresets() {
  static std::map<std::string, std::string> resolved;  // path -> the name it was given as
  return resolved;
}
}  // namespace

std::string PresetNameGivenFor(const std::string& path) {
  auto it = ResolvedPresets().find(path);
  return it == ResolvedPresets().end() ? std::string() : it->second;
}

CLI::Validator PresetFile(const std::string& kind) {
  return CLI::Validator(
      [kind](std::string& value) -> std::string {
        std::error_code ec;
        if (value == "-" || fs::exists(value, ec) || value.find('/') != std::string::npos) return {};
        fs::path preset = FindPreset(kind, value);
        if (!preset.empty()) {
          ResolvedPresets()[preset.string()] = fs::path(value).stem().string();
          value = preset.string();
          return {};
        }
        std::vector<std::string> names = PresetNames(kind);
        std::string list;
        for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
        return "no file " + value + " and no preset of that name" +
               (names.empty() ? std::string(" (no preset folder found: set DSP_DATA_DIR)") : " (presets: " + list + ")");
      },
      "FILE or preset name", "PresetFile");
}

}  // namespace dsp::app
