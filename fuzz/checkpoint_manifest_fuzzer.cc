// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: what `run --load` checks before it reads tensor data (exec/checkpoint/
// manifest.h): manifest.json's format, identity, step and file list, and a file's piece list
// against the tiny model's parameters (shapes and dtypes as `run` builds them) and a blob size.
// The input is one JSON text, read by the bounded parser every input goes through; it serves as
// the manifest and, its "pieces" array, as a piece list (so one corpus reaches both). See
// docs/fuzzing.md.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "core/json/document.h"
#include "exec/checkpoint/manifest.h"

namespace {

const std::map<std::string, dsp::exec::ParamMeta>& Params() {
  static const std::map<std::string, dsp::exec::ParamMeta> kParams = {
      {"embed.weight", {{64, 32}, 4, "Float"}},
      {"layers.0.attn.qkv.weight", {{96, 32}, 4, "Float"}},
      {"layers.0.mlp.fc1.weight", {{128, 32}, 2, "BFloat16"}},
      {"layers.0.norm.weight", {{32}, 4, "Float"}},
      {"scalar", {{}, 4, "Float"}},
  };
  return kParams;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dsp::ParsedJson parsed =
      dsp::ParseJsonLenient("manifest.json", std::string(reinterpret_cast<const char*>(data), size));
  if (!parsed.ok) return 0;
  const dsp::Json& doc = parsed.doc.root;
  const dsp::Json identity = {{"model", "tiny"}, {"layers", 2}};
  (void)dsp::exec::CheckManifest(doc, identity, "--load fuzz");
  if (doc.is_object() && doc.contains("files") && doc["files"].is_array()) {
    for (const dsp::Json& f : doc["files"]) {
      if (f.is_string()) (void)dsp::exec::PlainFileName(f.get<std::string>());
    }
  }
  if (doc.is_object() && doc.contains("pieces") && doc["pieces"].is_array()) {
    const size_t blob = doc.value("blob_bytes", dsp::Json(4096)).is_number_unsigned()
                            ? doc["blob_bytes"].get<size_t>() % (size_t{1} << 31)
                            : size_t{4096};
    for (const dsp::Json& piece : doc["pieces"]) (void)dsp::exec::ReadPiece(piece, Params(), blob, "fuzz.bin");
  }
  return 0;
}
