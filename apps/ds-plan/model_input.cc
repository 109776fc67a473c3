#include "apps/ds-plan/model_input.h"

#include "core/json/document.h"
#include "core/util/file_io.h"

namespace dsp::app {

Result<ModelSpec> LoadModel(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.error();
  ParsedJson parsed = ParseJsonLenient(path, std::move(text).value());
  if (!parsed.ok) {
    const Diagnostic& d = parsed.diagnostics.back();
    return Error{path + ":" + std::to_string(d.loc.line) + ":" + std::to_string(d.loc.column) + ": " + d.message};
  }
  auto spec = ParseHfConfig(parsed.doc.root);
  if (!spec.ok()) return Error{path + ": " + spec.error().message};
  return spec;
}

Result<sim::Cluster> LoadCluster(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.error();
  ParsedJson parsed = ParseJsonLenient(path, std::move(text).value());
  if (!parsed.ok) {
    const Diagnostic& d = parsed.diagnostics.back();
    return Error{path + ":" + std::to_string(d.loc.line) + ":" + std::to_string(d.loc.column) + ": " + d.message};
  }
  auto cluster = sim::ParseCluster(parsed.doc.root);
  if (!cluster.ok()) {
    // The message starts with the pointer; add the line so editors can jump to it.
    const std::string& msg = cluster.error().message;
    std::string pointer = msg.substr(0, msg.find(':'));
    SourceLoc loc = parsed.doc.LocateValue(pointer == "/" ? "" : pointer);
    return Error{path + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column) + ": " + msg};
  }
  return cluster;
}

}  // namespace dsp::app
