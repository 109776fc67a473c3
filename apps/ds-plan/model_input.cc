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

}  // namespace dsp::app
