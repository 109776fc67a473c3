#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the SVG pictures of docs/passes.md from docs/images/cases.txt with the built
# ds-plan; tests/apps/doc_images_test.cc fails when a picture is out of date.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DSP_BINARY:-build/release/ds-plan}
[ -x "$bin" ] || { echo "build first (scripts/setup.sh)"; exit 2; }
n=0
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  name=$(echo "${line%%|*}" | xargs)
  args=$(echo "${line#*|}" | xargs)
  # shellcheck disable=SC2086
  "$bin" visualize graph $args --force -o "docs/images/$name.svg" 2>/dev/null
  n=$((n + 1))
done < docs/images/cases.txt
echo "updated $n pictures in docs/images"
