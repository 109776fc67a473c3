// SPDX-License-Identifier: Apache-2.0
// A compiler pass over the graph IR (sim/graph), the way DeepSpeed's compile backend applies
// AutoTP/AutoSP/AutoEP/ZeRO as FX graph passes. A pass either rewrites the graph completely or
// returns an error and leaves it untouched: every check runs before the first mutation, so a
// rejected plan never leaves a half-parallelised graph behind for the simulation to misread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"
#include "sim/graph/graph.h"

namespace dsp::sim::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  // Short identifier used in errors, dumps and `ds-plan passes` ("autosp").
  virtual std::string_view name() const = 0;
  // One line for listings.
  virtual std::string_view description() const = 0;
  // True when the graph changed; false for "nothing to do" (the graph is left byte-identical).
  virtual Result<bool> Run(graph::Graph& graph) = 0;
  // What the last Run drew as DeepSpeed builds it although it will misbehave at run time (a
  // mismatch DeepSpeed itself does not check): one line each, for the caller to print as warnings.
  virtual std::vector<std::string> notes() const { return {}; }
  // What the last Run decided that the picture alone does not say (a profile-driven choice and
  // what it was based on): one line each, printed as notes.
  virtual std::vector<std::string> remarks() const { return {}; }
};

}  // namespace dsp::sim::passes
