// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the config parser alone (core/json/hjson_parser.cc, hjson-py 3.1.0's
// dialect): fast enough to run hundreds of thousands of inputs a minute, which the whole-validate
// target (config_loader_fuzzer) is not. Every parsed document is re-serialised and every recorded
// location resolved. Built by the `fuzz` preset (docs/fuzzing.md):
//   build/fuzz/fuzz/hjson_parser_fuzzer -max_total_time=180 -max_len=4096 build/fuzz/corpus
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json/hjson_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dsp::ParsedJson parsed = dsp::ParseDeepSpeedConfig("config.json", text);
  static volatile size_t sink = 0;
  if (parsed.ok) {
    sink = parsed.doc.root.dump().size();
    for (const auto& [pointer, offset] : parsed.doc.value_offsets) sink = parsed.doc.LocateValue(pointer).line + offset;
    for (const auto& [pointer, offset] : parsed.doc.key_offsets) sink = parsed.doc.LocateKey(pointer).column + offset;
  }
  for (const auto& d : parsed.diagnostics) sink = d.message.size() + d.loc.line;
  return 0;
}
