#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates tests/golden/*.out from tests/golden/cases.txt with the built ds-plan.
# Review `git diff tests/golden` before committing: a changed golden file is a changed behaviour.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DSP_BINARY:-build/release/ds-plan}
[ -x "$bin" ] || { echo "build first (scripts/setup.sh)"; exit 2; }
rm -f tests/golden/*.out
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  name=$(echo "${line%%|*}" | xargs)
  args=$(echo "${line#*|}" | xargs)
  set +e
  # shellcheck disable=SC2086
  out=$("$bin" $args 2>&1)
  code=$?
  set -e
  printf '%s\n[exit %d]\n' "$out" "$code" > "tests/golden/$name.out"
done < tests/golden/cases.txt
echo "updated $(ls tests/golden/*.out | wc -l) golden files"
