#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Quick start, command 1: install, build, then run ds-plan on the bundled samples: validate and
# groups on the folding sample (AutoTP 2 x AutoEP 4 on 8 ranks, 2 nodes of 4 GPUs), a rejected
# config, simulate on the AutoSP sample, tune for Llama-3-70B on 64 GPUs, and the folding sample's
# graph after the AutoEP, AutoTP and ZeRO passes as an SVG picture, and `check` on a stale plan
# snapshot.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo runs: ds-plan (and ds-plan-exec for `run`), not the tests and benchmarks.
scripts/setup.sh --target ds-plan >/dev/null
bin=build/release/ds-plan
echo "\$ ds-plan validate samples/configs/folding-tp2-ep4.json --nodes 2 --gpus-per-node 4 --model samples/models/mixtral-8x7b.json"
"$bin" validate samples/configs/folding-tp2-ep4.json --nodes 2 --gpus-per-node 4 --model samples/models/mixtral-8x7b.json
echo
echo "\$ ds-plan groups samples/configs/folding-tp2-ep4.json --nodes 2 --gpus-per-node 4"
"$bin" groups samples/configs/folding-tp2-ep4.json --nodes 2 --gpus-per-node 4
echo
echo "\$ ds-plan validate samples/configs/invalid/folding-rejected.json --world-size 8"
"$bin" validate samples/configs/invalid/folding-rejected.json --world-size 8 || true
echo
echo "\$ ds-plan simulate samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json --cluster samples/clusters/h100-sxm.json --world-size 8 --seq-len 8192 --recompute selective"
"$bin" simulate samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json --cluster samples/clusters/h100-sxm.json --world-size 8 --seq-len 8192 --recompute selective
echo
echo "\$ ds-plan tune --model samples/models/llama-3-70b.json --cluster samples/clusters/h100-sxm.json --nodes 8 --gpus-per-node 8 --top 5"
"$bin" tune --model samples/models/llama-3-70b.json --cluster samples/clusters/h100-sxm.json --nodes 8 --gpus-per-node 8 --top 5
echo
# explore's line mode on a bundled script (on a terminal, the same command without --script opens
# the full-screen UI).
echo "\$ ds-plan explore samples/configs/zero3-offload.json --model samples/models/llama-3-70b.json --cluster samples/clusters/h100-sxm.json --nodes 8 --script samples/explore/tp2.txt"
"$bin" explore samples/configs/zero3-offload.json --model samples/models/llama-3-70b.json --cluster samples/clusters/h100-sxm.json --nodes 8 --script samples/explore/tp2.txt
echo
# The picture goes to a fresh temporary folder: the demo never overwrites anything of yours.
out=$(mktemp -d)/mixtral-folding.svg
echo "\$ ds-plan visualize graph samples/configs/folding-tp2-ep4.json --model samples/models/mixtral-8x7b.json --world-size 8 --layers 0-1 -o $out"
"$bin" visualize graph samples/configs/folding-tp2-ep4.json --model samples/models/mixtral-8x7b.json --world-size 8 --layers 0-1 -o "$out"
echo
# A plan snapshot taken while the folding sample said ZeRO stage 2: check shows what stage 1 changes
# (exit 1 is the answer here, not a failure of the demo).
echo "\$ ds-plan check samples/plans/folding-tp2-ep4-zero2.plan.json"
"$bin" check samples/plans/folding-tp2-ep4-zero2.plan.json || echo "(exit $?: the plan changed)"
echo
if [ -x build/release/ds-plan-exec ]; then
  echo "\$ scripts/torchrun --nproc_per_node 4 --monitor_interval 0.2 --no_python ds-plan run samples/configs/run/folding-tp2-ep4.json --model samples/models/tiny-moe.json --steps 2"
  scripts/torchrun --nproc_per_node 4 --monitor_interval 0.2 --no_python "$bin" run \
      samples/configs/run/folding-tp2-ep4.json --model samples/models/tiny-moe.json --steps 2 2>/dev/null
else
  echo "(ds-plan run skipped: built without LibTorch; see docs/exec.md)"
fi
