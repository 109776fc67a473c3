// File reading and atomic writing: outputs go to a temporary file in the same directory and are
// renamed over the target, so an interrupted run never leaves a half-written file.
#pragma once

#include <string>

#include "core/util/result.h"

namespace dsp {

// Reads a file, device or pipe (or "-" for standard input) whole. Refuses directories and
// anything longer than `max_bytes`, stopping the read there.
Result<std::string> ReadFile(const std::string& path, size_t max_bytes = size_t{256} << 20);

Status WriteFileAtomic(const std::string& path, const std::string& contents);

}  // namespace dsp
