#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Quick start, command 2: install, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --preset release -j2
