// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the config loader: bytes in, every stage validate runs on a config file
// out (the lenient JSON/hjson parser with source locations, the schema, the key and rule checks,
// the model config reader) and all four renderings of the result. Built by the `fuzz` preset with
// Debian's clang (docs/fuzzing.md):
//   cmake --preset fuzz && cmake --build --preset fuzz
//   build/fuzz/fuzz/config_loader_fuzzer -max_total_time=60 build/fuzz/corpus
// Any crash, hang, leak or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json/document.h"
#include "core/model/model_spec.h"
#include "core/report/validate_report.h"
#include "core/validate/validator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The same bytes as a model config (hidden sizes, heads, experts) and as a DeepSpeed config,
  // the first checked against the second when it parses.
  dsp::ParsedJson parsed = dsp::ParseJsonLenient("model.json", text);
  dsp::Result<dsp::ModelSpec> model = parsed.ok ? dsp::ParseHfConfig(parsed.doc.root)
                                                : dsp::Result<dsp::ModelSpec>(dsp::Error{"not JSON"});
  dsp::ValidateOptions options;
  options.world_size = 8;
  options.gpus_per_node = 4;
  options.seq_len = 4096;
  if (model.ok()) options.model = &*model;
  dsp::FileReport report = dsp::ValidateText("config.json", text, options);
  const std::vector<dsp::FileReport> files = {report};
  // Kept in a volatile so the renderings cannot be optimised away.
  static volatile size_t rendered = 0;
  rendered = dsp::RenderText(files).size() + dsp::RenderJson(files).size() + dsp::RenderSarif(files, "fuzz").size() +
             dsp::RenderGithub(files).size();
  return 0;
}
