#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the plan snapshots under samples/plans/ with the built ds-plan (after an intended
# change of the cost model or the group tables; review `git diff samples/plans` before committing).
#   folding-tp2-ep4.plan.json      the folding sample as it is: `ds-plan check` passes on it
#   folding-tp2-ep4-zero2.plan.json the same config snapshotted while it said ZeRO stage 2, so
#                                  `ds-plan check` shows the diff a stage change produces
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DSP_BINARY:-build/release/ds-plan}
[ -x "$bin" ] || { echo "build first (scripts/setup.sh)"; exit 2; }
config=samples/configs/folding-tp2-ep4.json
flags=(--model samples/models/mixtral-8x7b.json --cluster samples/clusters/h100-sxm.json --nodes 2 --gpus-per-node 4)
"$bin" plan "$config" "${flags[@]}" -o samples/plans/folding-tp2-ep4.plan.json --force

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/"stage": 1,/"stage": 2,/' "$config" > "$tmp/ds_config.json"
grep -q '"stage": 2,' "$tmp/ds_config.json" || { echo "$config: no \"stage\": 1 to change"; exit 1; }
"$bin" plan "$tmp/ds_config.json" "${flags[@]}" -o "$tmp/plan.json"
# Record the sample's path, as if the snapshot had been taken before the config changed.
sed "s#\"path\": \"$tmp/ds_config.json\"#\"path\": \"$config\"#" "$tmp/plan.json" \
  > samples/plans/folding-tp2-ep4-zero2.plan.json
echo "updated samples/plans"
