#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GitHub action's install step (action.yml): puts ds-plan on PATH for the steps after it.
#   DEB_URL set:   downloads that ds-plan_<version>_amd64.deb (a release asset) and installs it with
#                  apt-get, which pulls in its shared libraries;
#   DEB_URL empty: builds the planner alone from this checkout (scripts/setup.sh --planner-only)
#                  and adds build/planner to GITHUB_PATH.
# A ds-plan already on PATH (a container image that has it) is kept when DEB_URL is empty.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
sudo=()
[ "$(id -u)" = 0 ] || sudo=(sudo)

if [ -n "${DEB_URL:-}" ]; then
  if ! command -v curl >/dev/null; then
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends curl ca-certificates
  fi
  tmp="$(mktemp -d)"
  curl -fsSL --retry 3 -o "$tmp/ds-plan.deb" "$DEB_URL"
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$tmp/ds-plan.deb"
elif command -v ds-plan >/dev/null; then
  echo "ds-plan is already on PATH: $(command -v ds-plan)"
else
  "${sudo[@]}" "$here/scripts/setup.sh" --planner-only
  echo "$here/build/planner" >> "${GITHUB_PATH:?GITHUB_PATH is not set: run this as a GitHub Actions step}"
  export PATH="$here/build/planner:$PATH"
fi
ds-plan --version
