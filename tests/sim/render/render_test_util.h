// SPDX-License-Identifier: Apache-2.0
// Shared inputs for the render tests: a two-layer graph with every collective op and group.
#pragma once

#include <string>

#include "core/util/file_io.h"
#include "core/model/model_spec.h"
#include "core/json/document.h"

namespace dsp::testing {

// Two decoder layers after (hand-written) tensor, sequence and expert parallelism: each
// collective op once, each group at least once, and a module path with a backslash and a quote.
inline constexpr const char* kCollectiveGraph =
    R"(%x = placeholder() {module="", param="", shape=[B, S/P, H], group=""}
%g0 = all_gather(%x) {module="model.layers.0", param="", shape=[B, S, H], group="sp"}
%c0 = copy_to_tp(%g0) {module="model.layers.0.self_attn", param="", shape=[B, S, H], group="tp"}
%q0 = linear(%c0) {module="model.layers.0.self_attn.q_proj", param="model.layers.0.self_attn.q_proj.weight", shape=[B, S, H/P], group=""}
%a0 = all_to_all(%q0) {module="model.layers.0.self_attn", param="", shape=[B, S/P, H], group="sp"}
%o0 = linear(%a0) {module="model.layers.0.self_attn.o_proj", param="model.layers.0.self_attn.o_proj.weight", shape=[B, S, H], group=""}
%r0 = reduce_from_tp(%o0) {module="model.layers.0.self_attn", param="", shape=[B, S, H], group="tp"}
%d1 = dispatch(%r0) {module="model.layers.1.mlp", param="", shape=[B, S, H], group="ep"}
%e1 = experts(%d1) {module="model.layers.1.mlp.experts", param="", shape=[B, S, H], group=""}
%m1 = combine(%e1) {module="model.layers.1.mlp", param="", shape=[B, S, H], group="ep"}
%s1 = reduce_scatter(%m1) {module="model.layers.1", param="", shape=[B, S/P, H], group="dp"}
%w1 = all_reduce(%s1) {module="model.layers.1.odd \" \\ name", param="", shape=[B, S/P, H], group="edp"}
%loss = cross_entropy(%w1, %x) {module="", param="", shape=[], group=""}
%output = output(%loss) {module="", param="", group=""}
)";

inline ModelSpec LoadSampleModel(const std::string& rel) {
  auto text = ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel);
  return ParseHfConfig(Json::parse(text.value())).value();
}

}  // namespace dsp::testing
