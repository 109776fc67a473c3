#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GitHub action's validate step (action.yml). Inputs come as environment variables:
#   FILES       bash globs separated by spaces (globstar on), e.g. "configs/**/*.json ds_config.json"
#   ARGS        more validate flags, split on spaces
#   FORMAT      github (annotations on the diff) or sarif (written to SARIF_FILE for upload)
#   SARIF_FILE  where format sarif writes (default ds-plan.sarif)
# Writes exit-code=<validate's exit code> to GITHUB_OUTPUT and exits 0, so the SARIF upload step
# still runs; the action's last step fails the job on a non-zero code.
set -uo pipefail
shopt -s globstar nullglob
output="${GITHUB_OUTPUT:-/dev/null}"
finish() {
  echo "exit-code=$1" >> "$output"
  exit 0
}

# Patterns and flags may span lines (a YAML block): split on any whitespace, without globbing yet.
set -f
patterns=(${FILES:-})
extra=(${ARGS:-})
set +f
files=()
for pattern in "${patterns[@]}"; do
  for f in $pattern; do files+=("$f"); done
done
if ((${#files[@]} == 0)); then
  echo "::error title=ds-plan::no file matches files: '${FILES:-}'"
  finish 2
fi

case "${FORMAT:-github}" in
  github)
    ds-plan validate --format github "${extra[@]}" "${files[@]}"
    finish $?
    ;;
  sarif)
    sarif="${SARIF_FILE:-ds-plan.sarif}"
    if ! : > "$sarif.tmp"; then
      echo "::error title=ds-plan::cannot write $sarif"
      finish 2
    fi
    # Written beside its final name and moved into place, so a partly written file is never uploaded.
    ds-plan validate --format sarif "${extra[@]}" "${files[@]}" > "$sarif.tmp"
    rc=$?
    mv -f "$sarif.tmp" "$sarif"
    # The same findings as text in the job log.
    ds-plan validate "${extra[@]}" "${files[@]}"
    finish $rc
    ;;
  *)
    echo "::error title=ds-plan::format must be github or sarif, not '${FORMAT}'"
    finish 2
    ;;
esac
