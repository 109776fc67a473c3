// SPDX-License-Identifier: Apache-2.0
// --bench: every collective kind on every group kind of the plan (see BenchResult in exec/run.h).
#pragma once

#include <map>
#include <vector>

#include "core/layout/groups.h"
#include "exec/comm/comm.h"
#include "exec/run.h"

namespace dsp::exec {

// `groups`: this rank's group of each kind (groups of one rank are skipped). Collective over all
// ranks: every rank must call it with the same kinds and options.
Result<std::vector<BenchResult>> MeasureCollectives(const std::map<GroupKind, Comm*>& groups,
                                                    const RunOptions& options);

}  // namespace dsp::exec
