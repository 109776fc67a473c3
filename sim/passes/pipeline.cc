// SPDX-License-Identifier: Apache-2.0
#include "sim/passes/pipeline.h"

#include "sim/graph/text_format.h"
#include "sim/graph/verifier.h"

namespace dsp::sim::passes {

Result<bool> Pipeline::Run(graph::Graph& graph) const {
  if (Status s = graph::VerifyGraph(graph); !s.ok()) {
    return Error{"graph invalid before the pass pipeline: " + s.error().message};
  }
  bool changed = false;
  for (const auto& pass : passes_) {
    const std::string name(pass->name());
    Result<bool> r = pass->Run(graph);
    if (!r.ok()) return Error{"pass '" + name + "' failed: " + r.error().message};
    if (Status s = graph::VerifyGraph(graph); !s.ok()) {
      return Error{"graph invalid after pass '" + name + "': " + s.error().message};
    }
    changed = changed || *r;
    if (dump_after_) dump_after_(name, graph::PrintGraph(graph));
  }
  return changed;
}

std::vector<std::string> Pipeline::Notes() const {
  std::vector<std::string> notes;
  for (const auto& pass : passes_) {
    for (std::string& n : pass->notes()) notes.push_back(std::move(n));
  }
  return notes;
}

std::vector<std::string> Pipeline::Remarks() const {
  std::vector<std::string> remarks;
  for (const auto& pass : passes_) {
    for (std::string& r : pass->remarks()) remarks.push_back(std::move(r));
  }
  return remarks;
}

const std::vector<PassInfo>& RegisteredPasses() {
  // The order a pipeline applies them, whatever order they are asked for in: AutoEP first (in
  // DeepSpeed it is module injection at engine start, and AutoTP skips the subtrees it owns),
  // then tensor parallelism (it partitions the weights the later passes see), then sequence
  // parallelism, and ZeRO last, on the parameters as each rank holds them.
  static const std::vector<PassInfo> passes = {
      {"autoep",
       "AutoEP: E/EP local experts, dispatch and combine all-to-alls over ep (with AutoTP "
       "folding: partition-dispatch and the restore all-gather over tp)"},
      {"autotp",
       "AutoTP: shard column/row linears over tp, copy_to_tp before column and reduce_from_tp "
       "after row linears"},
      {"autosp",
       "AutoSP (Ulysses): shard the sequence over sp, slice the inputs, all-to-all around every "
       "attention"},
      {"zero",
       "ZeRO: stage 3 gathers each parameter before first use and releases it after last use; "
       "gradients reduced over the family's group (dp/sp_dp, edp for routed experts)"},
      {"selective_gather",
       "DeepCompile ZeRO-3 after WARMUP: keep the parameters with the costliest gathers per byte "
       "gathered, within 0.9 x HBM - peak (needs --cluster)"},
      {"prefetch",
       "DeepCompile ZeRO-3 after WARMUP: fuse gathers and launch them ahead, at most 4e9 bytes "
       "outstanding (needs --cluster)"},
  };
  return passes;
}

std::string_view PassDescription(std::string_view name) {
  for (const PassInfo& p : RegisteredPasses()) {
    if (p.name == name) return p.description;
  }
  return {};
}

}  // namespace dsp::sim::passes
