// SPDX-License-Identifier: Apache-2.0
// --model (a Hugging Face config.json) and --cluster (samples/clusters/*.json).
#pragma once

#include <string>

#include "core/model/model_spec.h"
#include "sim/cost/cluster.h"
#include "core/util/result.h"

namespace dsp::app {

Result<ModelSpec> LoadModel(const std::string& path);

// Every problem names the file and, for bad values, the line and the JSON pointer.
Result<sim::Cluster> LoadCluster(const std::string& path);

}  // namespace dsp::app
