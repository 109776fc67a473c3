// SPDX-License-Identifier: Apache-2.0
// The presets ds-plan ships (cluster descriptions, sample model configs) and how --cluster and
// --model find them by name, so an installed ds-plan needs no source tree: `--cluster h100-sxm`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dsp::app {

inline constexpr const char* kModelHelp =
    "Hugging Face config.json of the model, or the name of a bundled one (llama-3-8b, qwen3-30b-a3b, ...)";
inline constexpr const char* kClusterHelp =
    "cluster description: a JSON file, or the name of a bundled preset (h100-sxm, h200, a100-80gb, ...)";

// Where presets are looked up, first match wins:
//   $DSP_DATA_DIR, when set (a relocated data folder);
//   <folder of the executable>/../share/ds-plan (an install under any prefix, or a .deb unpacked
//   with `dpkg -x` anywhere);
//   the source tree's samples/, only for a binary running from the build tree it was built in.
//   /usr/local/share/ds-plan and /usr/share/ds-plan (where /proc is not mounted).
// Each holds clusters/*.json and models/*.json.
std::vector<std::filesystem::path> DataDirs();

// The preset NAME of KIND ("clusters" or "models"): <dir>/<kind>/<name>.json in the first data
// folder that has it (".json" may be given); empty when there is none.
std::filesystem::path FindPreset(const std::string& kind, const std::string& name);

// The presets of KIND, by name, sorted (for messages and completion).
std::vector<std::string> PresetNames(const std::string& kind);

// A CLI11 transform for --cluster / --model: an existing file stays as given; a bare name with no
// such file becomes the preset's path, or a usage error that lists the presets.
CLI::Validator PresetFile(const std::string& kind);

// The preset name a --cluster or --model argument was given as, when PresetFile turned it into
// `path` in this process; empty for a file named by its path. plan records the name, so check finds
// the preset again wherever ds-plan is installed.
std::string PresetNameGivenFor(const std::string& path);

}  // namespace dsp::app
