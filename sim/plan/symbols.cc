// SPDX-License-Identifier: Apache-2.0
#include "sim/plan/symbols.h"

#include <algorithm>

#include "sim/graph/builder.h"

namespace dsp::sim {

graph::SymbolValues PlanSymbolValues(const SimInput& in) {
  const Plan& plan = *in.plan;
  graph::SymbolValues values = graph::ModelSymbolValues(*in.model, in.workload.micro_batch, in.workload.seq_len);
  values["T"] = std::max(plan.sizes.tp, 1);
  graph::BindTensorParallelHeads(*in.model, values["T"], values);
  values["P"] = std::max(plan.sizes.sp, 1);
  values["EP"] = std::max(plan.sizes.ep, 1);
  values["DP"] = GroupSizeOf(plan, GroupKind::kDp);
  values["SDP"] = GroupSizeOf(plan, GroupKind::kSpDp);
  values["EDP"] = GroupSizeOf(plan, GroupKind::kEdp);
  return values;
}

}  // namespace dsp::sim
