#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One short check for a GPU machine (1 GPU, CUDA + NCCL under /usr/local/cuda, no network), run from
# the repository root: build with NCCL, run the NCCL unit test and the NCCL parity runs, and write
# everything under $OUT (default ./gpu-check-out). Every step is time-limited and logged; a failed
# step is recorded and the script goes on, so one run answers as much as it can.
#
# What can run on one GPU: NCCL refuses two ranks of one communicator on the same device
# ("Duplicate GPU detected"), so the parity runs use world=1 (every process group is then a
# one-rank NCCL communicator: init, all-reduce, all-gather, all-to-all and the device copies all
# run for real). A world=2 attempt is included to record what NCCL says.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT"
JOBS=${JOBS:-$(nproc)}
summary="$OUT/summary.txt"
: > "$summary"

step() {  # step NAME SECONDS COMMAND...: runs, logs to $OUT/NAME.log, records the outcome
  local name=$1 secs=$2
  shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  printf '%-28s rc=%-3s %4ss  %s\n' "$name" "$rc" "$((SECONDS - t0))" "$*" | tee -a "$summary"
  return $rc
}

{ date -u; uname -a; nproc; } > "$OUT/machine.txt"
step nvidia-smi 30 nvidia-smi
step packages 30 dpkg-query -W libtorch-dev libgloo-dev python3-torch cmake ninja-build
ls /usr/local/cuda/include/nccl.h /usr/local/cuda/lib/libnccl.so* >> "$OUT/machine.txt" 2>&1

# Pre-flight: nothing can be downloaded here. LibTorch, the Gloo headers and torchrun must be
# installed (libtorch-dev libgloo-dev python3-torch), and valijson must be in .deps/ (scripts/setup.sh
# on a networked machine puts it there; carry .deps along) or installed system-wide.
missing=""
[ -f /usr/lib/x86_64-linux-gnu/cmake/Torch/TorchConfig.cmake ] || missing="$missing libtorch-dev"
[ -f /usr/include/gloo/rendezvous/store.h ] || missing="$missing libgloo-dev"
[ -x /usr/bin/torchrun ] || missing="$missing python3-torch"
[ -f .deps/valijson/usr/share/cmake/valijson/valijsonConfig.cmake ] ||
  [ -f /usr/share/cmake/valijson/valijsonConfig.cmake ] || missing="$missing valijson(.deps)"
[ -f /usr/local/cuda/include/nccl.h ] || missing="$missing nccl.h"
echo "missing: ${missing:-nothing}" | tee -a "$summary"

# Configure and build (no downloads: everything must already be installed; setup.sh would need apt).
if [ ! -f build/release/build.ninja ]; then
  step configure 300 cmake --preset release
fi
grep -a "ds-plan run:" "$OUT/configure.log" 2>/dev/null | tee -a "$summary"
step build 1200 cmake --build build/release -j "$JOBS" --target ds-plan ds-plan-exec dsp_exec_tests

# The NCCL communicator test: on a GPU it runs a one-rank communicator (all-reduce, all-gather).
step nccl-unit-test 120 build/release/tests/dsp_exec_tests --gtest_filter='NcclCommTest.*:GlooCommTest.*'

export MASTER_ADDR=127.0.0.1 WORLD_SIZE=1 RANK=0 LOCAL_RANK=0
port=29611
run1() {  # run1 NAME ARGS...: world=1 NCCL run with a JSON report
  local name=$1
  shift
  port=$((port + 1))
  MASTER_PORT=$port step "$name" 300 build/release/ds-plan run "$@" --backend nccl --timeout 60 \
      --report "$OUT/$name.json"
}
run1 nccl-dp1-dense samples/configs/run/dp1.json --steps 3
run1 nccl-dp1-moe samples/configs/run/dp1.json --model samples/models/tiny-moe.json --steps 3
# The same runs on Gloo for comparison (identical numbers expected: world=1).
port=$((port + 1))
MASTER_PORT=$port step gloo-dp1-dense 300 build/release/ds-plan run samples/configs/run/dp1.json --steps 3 \
    --report "$OUT/gloo-dp1-dense.json"
if [ -x build/release/ds-plan ] && build/release/ds-plan run --help 2>/dev/null | grep -q -- --bench; then
  port=$((port + 1))
  MASTER_PORT=$port step nccl-bench 300 build/release/ds-plan run samples/configs/run/dp1.json --backend nccl \
      --bench --bench-out "$OUT/bench.json"
fi

# Two ranks on one GPU through torchrun: expected to fail inside NCCL; the log records how.
unset WORLD_SIZE RANK LOCAL_RANK MASTER_PORT
step nccl-world2-one-gpu 180 scripts/torchrun --nproc_per_node 2 --monitor_interval 0.2 --master_port 29650 \
    --no_python build/release/ds-plan run samples/configs/run/dp2-zero2.json --backend nccl --timeout 30
echo "results in $OUT (summary.txt first)"
