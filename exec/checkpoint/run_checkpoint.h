// SPDX-License-Identifier: Apache-2.0
// --save / --load for the runner: which rank writes which pieces under which DeepSpeed-style
// name, the manifest, and the resumption (the unsharded reference replayed to the saved step,
// the checkpoint checked against it, every shard taken from the consolidated weights).
#pragma once

#include <cstdint>

#include "core/util/result.h"
#include "exec/comm/comm.h"
#include "exec/model/tiny_model.h"
#include "exec/optim/zero3.h"
#include "exec/run.h"

namespace dsp::exec {

// After step `step` (the number of steps taken in all): every rank writes its pieces (stages 0-2:
// the first rank of each dense / edp group its tp slices; stage 3: every rank its chunks), all
// ranks meet at `world`'s barrier, then rank 0 writes the manifest.
Status SaveRun(const RunOptions& o, int rank, int64_t step, TinyModel& model, const Zero3Partitions* zero3,
               Comm* world);

// Before any sharding beyond TP/EP slicing: loads o.load_dir, replays the reference to the saved
// step (SGD on the same batches), checks every consolidated parameter against it within the
// tolerance, and copies the consolidated weights into this rank's shards. Returns the saved step.
Result<int64_t> LoadRun(const RunOptions& o, TinyModel& model);

// The same (seed, step) batch the runner draws.
at::Tensor RunBatch(uint64_t seed, int64_t step, int64_t rows, int64_t cols, int64_t vocab);

}  // namespace dsp::exec
