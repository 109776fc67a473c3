// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/workload.h"

namespace dsp::sim {

std::string_view RecomputeName(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "none";
}

std::string_view ConventionName(MemoryConvention convention) {
  return convention == MemoryConvention::kZeroPaper ? "zero-paper" : "deepspeed";
}

}  // namespace dsp::sim
