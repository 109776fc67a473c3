// SPDX-License-Identifier: Apache-2.0
// Every key path of the DeepSpeed config schema as a dotted name ("zero_optimization.stage"), for
// completion in explore's line mode. Objects are followed through "properties" and local
// "$ref"s; free-form maps (additionalProperties only) stop at their own name.
#pragma once

#include <string>
#include <vector>

#include "core/json/document.h"

namespace dsp {

// Sorted, without duplicates.
std::vector<std::string> SchemaKeyPaths(const Json& schema);

}  // namespace dsp
