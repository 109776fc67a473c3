// SPDX-License-Identifier: Apache-2.0
// DeepSpeed reads a config file with hjson.load (deepspeed/runtime/config.py,
// DeepSpeedConfig.__init__, 0.19.6), so a config file is whatever hjson-py 3.1 accepts: JSON plus
// `#`, `//` and `/* */` comments, quoteless keys and values, single-quoted strings, optional
// commas, ''' multi-line strings and a root object without braces. This parser follows hjson-py
// 3.1.0's decoder (hjson/decoder.py: getNext, scanKeyName, scanstring, scantfnns, JSONObject,
// JSONArray, raw_decode) rule for rule, so it accepts the same files and reads the same values,
// records where every key and value starts, and notes each extension so validate can warn that
// strict loaders (json.load in the Hugging Face Trainer and Accelerate) fail on the file.
#pragma once

#include <string>

#include "core/json/document.h"

namespace dsp {

// Values follow hjson-py: a number written with a fraction or exponent whose value is integral
// and below 1e10 in magnitude becomes an integer (2.0 -> 2, 1e3 -> 1000; the pointer is kept in
// doc.float_literals because json.load reads a float there), and a quoteless value is a string
// unless the whole of it is null, true, false or a number.
ParsedJson ParseDeepSpeedConfig(std::string path, std::string text, const ParseOptions& options = {});

}  // namespace dsp
