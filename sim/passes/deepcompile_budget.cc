// SPDX-License-Identifier: Apache-2.0
#include "sim/passes/deepcompile_budget.h"

#include "sim/comm/collectives.h"
#include "sim/comm/group_links.h"
#include "sim/plan/symbols.h"

namespace dsp::sim::passes {

DeepCompileBudget DeepCompileBudgetFor(const SimInput& in, const MemoryReport& memory) {
  DeepCompileBudget b;
  b.hbm_bytes = memory.hbm_bytes;
  b.peak_bytes = memory.peak_bytes;
  b.bytes_per_element = in.workload.bytes_per_param;
  b.values = PlanSymbolValues(in);
  const GroupKind kind = in.plan->sizes.sp > 1 ? GroupKind::kSpDp : GroupKind::kDp;
  const GroupLinkInfo group = DescribeGroups(in, kind, CollectiveKind::kAllGather);
  b.gather_seconds = [group](double bytes) {
    return CollectiveSeconds(CollectiveKind::kAllGather, group.size, bytes, group.link);
  };
  return b;
}

}  // namespace dsp::sim::passes
