// SPDX-License-Identifier: Apache-2.0
// Runs passes in order and verifies the graph after each one, so that a broken rewrite is blamed
// on the pass that made it ("graph invalid after pass 'autosp': ...") rather than surfacing as a
// wrong simulation later. Also the registry of known passes for listings.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"
#include "sim/graph/graph.h"
#include "sim/passes/pass.h"

namespace dsp::sim::passes {

// Called after a pass ran successfully and the graph verified: the pass name and PrintGraph text.
using DumpHook = std::function<void(std::string_view pass, const std::string& text)>;

class Pipeline {
 public:
  void Add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  // Dump the graph after every pass (`--dump-after`); an empty hook disables dumping.
  void SetDumpAfter(DumpHook hook) { dump_after_ = std::move(hook); }
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }

  // Verifies the input, then runs every pass, verifying after each. Errors:
  //   "graph invalid before the pass pipeline: ..."
  //   "pass 'NAME' failed: ..."            (the pass rejected the graph; it is unchanged)
  //   "graph invalid after pass 'NAME': ..." (a pass bug: the rewrite broke the IR)
  // Returns whether any pass changed the graph.
  Result<bool> Run(graph::Graph& graph) const;
  // Every pass's notes from the last Run, in pipeline order.
  std::vector<std::string> Notes() const;
  // Every pass's remarks from the last Run, in pipeline order.
  std::vector<std::string> Remarks() const;

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
  DumpHook dump_after_;
};

struct PassInfo {
  std::string_view name;
  std::string_view description;
};

// Every pass ds-plan knows, in the order a pipeline applies them.
const std::vector<PassInfo>& RegisteredPasses();
// The registered one-line description of `name`; empty for an unknown name.
std::string_view PassDescription(std::string_view name);

}  // namespace dsp::sim::passes
