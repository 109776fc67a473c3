#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The device check of docs/validation.md "One GPU, measured": one call on a lent GPU machine (PyTorch
# and transformers installed, no network), from the repository root. Writes steps.tsv,
# environment.json, the traces and the log under $OUT (default ./gpu-ground-truth-out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-ground-truth-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 scripts/gpu-ground-truth.py --out "$OUT" "$@" 2>&1 | tee "$OUT/log.txt"
