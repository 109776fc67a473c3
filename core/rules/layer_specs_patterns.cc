// SPDX-License-Identifier: Apache-2.0
// layer_specs[i].patterns: a list of Python regular expressions (re.match against parameter
// names). Each is checked and compiled once here, for the parse-time findings and for the
// --model matching.
#include <string>

#include "core/rules/ds_semantics.h"
#include "core/rules/tensor_parallel_internal.h"
#include "core/util/text.h"

namespace dsp::autotp {
namespace {

// A JSON value as Python would print it in an error message.
using ds_semantics::PyRepr;

std::string PatternHint(const PythonRegex& re) {
  if (re.error.find("?<") != std::string::npos) {
    return "Python spells a named group (?P<name>...); (?<name>...) is JavaScript/.NET syntax";
  }
  if (re.error.find("bad escape \\k") != std::string::npos) {
    return "Python spells a named back-reference (?P=name); \\k<name> is JavaScript/.NET syntax";
  }
  return "fix the regular expression; test it with python -c \"import re; re.compile(r'...')\"";
}

}  // namespace

void CheckSpecPatterns(RuleContext& ctx, const std::string& p, const Json& spec, LayerSpec* out) {
  const std::string pp = PointerJoin(p, "patterns");
  if (!spec.contains("patterns") || (spec["patterns"].is_array() && spec["patterns"].empty())) {
    ReportSpec(ctx, "tp-spec-no-patterns", spec.contains("patterns") ? pp : p,
               "this layer spec has no patterns (DeepSpeed's default is an empty list), so it "
               "matches no parameter and does nothing",
               "add \"patterns\": [regular expressions matched against names such as "
               "model.layers.0.self_attn.q_proj.weight]");
    return;
  }
  const Json& patterns = spec["patterns"];
  if (!patterns.is_array()) {
    std::string why = patterns.is_string()
                          ? "DeepSpeed iterates a string character by character, so every single "
                            "character becomes its own regular expression"
                          : "DeepSpeed iterates it as the list of regular expressions";
    ReportSpec(ctx, "tp-spec-patterns", pp,
               "patterns is " + std::string(patterns.type_name()) + ", not a list: " + why,
               patterns.is_string() ? "wrap it in a list: [" + patterns.dump() + "]"
                                    : std::string("use a list of regular expression strings"));
    return;
  }
  for (size_t i = 0; i < patterns.size(); ++i) {
    const std::string ip = PointerJoin(pp, std::to_string(i));
    if (!patterns[i].is_string()) {
      ReportSpec(ctx, "tp-spec-patterns", ip,
                 "pattern " + PyRepr(patterns[i]) +
                     " is not a string: re.match raises TypeError when AutoTP matches names",
                 "quote the regular expression");
      continue;
    }
    SpecPattern sp;
    sp.pointer = ip;
    sp.regex = CompilePythonRegex(patterns[i].get<std::string>());
    sp.digit_blind = IsIndexBlind(sp.regex.source);
    if (!sp.regex.error.empty()) {
      ReportSpec(ctx, "tp-spec-pattern-invalid", ip,
                 "pattern \"" + sp.regex.source + "\" is not a valid Python regular expression (" +
                     sp.regex.error +
                     "): re.match raises re.error when AutoTP matches the "
                     "model's parameter names",
                 PatternHint(sp.regex));
      continue;
    }
    if (!sp.regex.unsupported.empty()) {
      ctx.Report("tp-spec-pattern-unsupported", ip,
                 "pattern \"" + sp.regex.source + "\" uses " + sp.regex.unsupported +
                     ", which Python accepts but ds-plan cannot evaluate: it is left out of the "
                     "--model checks",
                 "rewrite it without that construct to have it checked against the model");
      continue;
    }
    if (!sp.regex.python311.empty()) {  // still evaluated: it is valid on Python 3.11+
      ctx.Report("tp-spec-pattern-unsupported", ip,
                 "pattern \"" + sp.regex.source + "\" uses " + sp.regex.python311 +
                     ", which Python's re accepts only from Python 3.11: on older Pythons "
                     "re.match raises re.error when AutoTP matches the model's parameter names",
                 "rewrite it without that construct if the job may run on Python 3.10 or older");
    }
    out->patterns.push_back(std::move(sp));
  }
}

}  // namespace dsp::autotp
