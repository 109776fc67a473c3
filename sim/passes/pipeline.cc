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

const std::vector<PassInfo>& RegisteredPasses() {
  // Order of DeepSpeed's compile backend: tensor parallelism first (it partitions the weights the
  // later passes see), then sequence parallelism.
  static const std::vector<PassInfo> passes = {
      {"autotp",
       "AutoTP: shard column/row linears over tp, copy_to_tp before column and reduce_from_tp "
       "after row linears"},
      {"autosp",
       "AutoSP (Ulysses): shard the sequence over sp, slice the inputs, all-to-all around every "
       "attention"},
  };
  return passes;
}

}  // namespace dsp::sim::passes
