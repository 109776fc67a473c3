// --model: a Hugging Face config.json.
#pragma once

#include <string>

#include "core/model/model_spec.h"
#include "core/util/result.h"

namespace dsp::app {

Result<ModelSpec> LoadModel(const std::string& path);

}  // namespace dsp::app
