// SPDX-License-Identifier: Apache-2.0
// `ds-plan run --save DIR` / `--load DIR`: each rank's shards of the tiny model, written with the
// layout that produced them, and read back on any other layout by consolidating every parameter
// across its tp slices and ZeRO chunks first -- what DeepSpeed PR #8168 made AutoTP + ZeRO-3
// checkpoints do (before it, the tp shards were silently dropped).
//
// DIR holds, per writing rank, a binary file of raw tensor data named after DeepSpeed's scheme
// (runtime/engine.py _get_ckpt_name, _get_zero_ckpt_name: mp_rank_XX_model_states,
// zero_pp_rank_D_mp_rank_XX_optim_states, expp_rank_E_mp_rank_XX_model_states; ".bin", not
// torch.save pickles) with a "<file>.json" listing its pieces, and manifest.json, written last by
// rank 0 once every rank's files are in place: the layout, the group tables, the step, the tiny
// model and seed, every parameter's full shape, the files and the (tp, dp, pp, ep) place of each
// file's writer. With pipeline stages the files are per PipelineModule layer (runtime/pipe/module.py
// ckpt_layer_path: layer_II[-model_TT]-model_states). Every file is written atomically.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/json/document.h"
#include "core/util/result.h"
#include "exec/model/tiny_model.h"

namespace dsp::exec {

// One slice of one parameter: the tp shard of the reference tensor (Shard), and within that
// slice, flattened and padded, the elements [chunk_offset, chunk_offset + numel) (a whole slice:
// offset 0, numel = the slice's elements).
struct CheckpointPiece {
  std::string param;
  Shard shard;
  int64_t chunk_offset = 0;
  at::Tensor data;  // contiguous, flattened
};

// Writes DIR/<file> and DIR/<file>.json (atomically each).
Status WriteCheckpointFile(const std::string& dir, const std::string& file, const std::vector<CheckpointPiece>& pieces);

// manifest.json: `identity` (the tiny model, dtype and seed: what must match on load), `layout`
// (sizes, zero stage, group tables), `step`, the full shape of every parameter, and `files`.
Status WriteCheckpointManifest(const std::string& dir, const Json& manifest);

struct LoadedCheckpoint {
  int64_t step = 0;
  Json layout;
  std::map<std::string, at::Tensor> full;  // every parameter, reference-shaped
};

// Reads DIR and consolidates every parameter of `model` (names and reference shapes) from its
// pieces. Errors name what is wrong: no manifest (an interrupted save), another model or seed
// (`identity` differs, naming the field), a parameter with a tp slice or chunk no file holds
// (which slice, and of how many).
Result<LoadedCheckpoint> LoadCheckpoint(const std::string& dir, TinyModel& model, const Json& identity,
                                        at::ScalarType dtype);

}  // namespace dsp::exec
