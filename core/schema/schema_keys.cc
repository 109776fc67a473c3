// SPDX-License-Identifier: Apache-2.0
#include "core/schema/schema_keys.h"

#include <algorithm>

namespace dsp {
namespace {

const Json* Resolve(const Json& root, const Json& node) {
  if (!node.is_object() || !node.contains("$ref") || !node["$ref"].is_string()) return &node;
  const std::string ref = node["$ref"].get<std::string>();
  if (!ref.starts_with("#")) return &node;
  const Json::json_pointer p(ref.substr(1));
  return root.contains(p) ? &root[p] : &node;
}

void Walk(const Json& root, const Json& node, const std::string& prefix, int depth, std::vector<std::string>* out) {
  const Json* n = Resolve(root, node);
  if (depth > 8 || !n->is_object()) return;
  if (n->contains("properties") && (*n)["properties"].is_object()) {
    for (const auto& [key, child] : (*n)["properties"].items()) {
      if (key.starts_with("$")) continue;
      const std::string path = prefix.empty() ? key : prefix + "." + key;
      out->push_back(path);
      Walk(root, child, path, depth + 1, out);
    }
  }
  for (const char* combinator : {"anyOf", "oneOf", "allOf"}) {
    if (n->contains(combinator) && (*n)[combinator].is_array()) {
      for (const Json& alt : (*n)[combinator]) Walk(root, alt, prefix, depth + 1, out);
    }
  }
}

}  // namespace

std::vector<std::string> SchemaKeyPaths(const Json& schema) {
  std::vector<std::string> out;
  Walk(schema, schema, "", 0, &out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace dsp
