#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what ds-plan needs on Debian 12 (as root), then configures and builds it.
# Idempotent: packages already present are not touched, and an unchanged tree rebuilds in seconds.
#
#   scripts/setup.sh                  everything: ds-plan, ds-plan-exec (LibTorch), tests, benchmarks
#   scripts/setup.sh --planner-only   ds-plan alone (preset "planner", build/planner/ds-plan): no
#                                     LibTorch, Gloo, python3-torch, GoogleTest or Google Benchmark
#
# Other arguments go to `cmake --build`: scripts/setup.sh --target ds-plan builds only the tool (and
# ds-plan-exec, which it runs), not the test suite and benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."

preset=release
if [ "${1:-}" = "--planner-only" ]; then
  preset=planner
  shift
fi

# What the planner (ds-plan) builds with: the compiler and CMake, CLI11, nlohmann/json, PCRE2 (the
# Python `re` patterns of AutoTP/AutoEP), Graphviz (visualize), help2man (the man page).
packages=(build-essential cmake ninja-build pkg-config libcli11-dev nlohmann-json3-dev help2man
          libgraphviz-dev libpcre2-dev)
# dtl (header-only) for `visualize graph --diff --dump-after`'s unified diff of the graph text.
packages+=(libdtl-dev)
# zlib for `ds-plan compare`'s gzip-compressed PyTorch profiler traces.
packages+=(zlib1g-dev)
# `ds-plan explore`: ncurses for the full-screen UI, libedit (BSD) for the line mode's editing,
# history and completion.
packages+=(libncurses-dev libedit-dev)
if [ "$preset" = release ]; then
  # The tests and benchmarks: GoogleTest, Google Benchmark; tmux drives explore's full-screen UI and
  # zsh checks the generated zsh completion.
  packages+=(libgtest-dev libgmock-dev libbenchmark-dev tmux zsh)
  # pre-commit runs the hooks of .pre-commit-hooks.yaml in the tests (offline: they are language:
  # system), in a scratch git repository.
  packages+=(pre-commit git)
  # `ds-plan run` (the LibTorch executor, optional at build time): LibTorch 1.13 with c10d, the Gloo
  # headers that ProcessGroupGloo.hpp includes (libtorch-dev does not ship them), and torchrun.
  packages+=(libtorch-dev libgloo-dev python3-torch)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# valijson is Debian's libvalijson-dev. `apt-get install` would pull in 46 adapter libraries
# (Qt, Poco, MariaDB...) that ds-plan never uses, so the package is downloaded from the archive and
# unpacked into .deps/ instead; CMake finds it there through its own valijsonConfig.cmake.
if [ ! -f .deps/valijson/usr/share/cmake/valijson/valijsonConfig.cmake ] &&
   [ ! -f /usr/share/cmake/valijson/valijsonConfig.cmake ]; then
  echo "setup: fetching libvalijson-dev into .deps/valijson"
  mkdir -p .deps/download
  (cd .deps/download && { apt-get download libvalijson-dev 2>/dev/null ||
     { apt-get update -q && apt-get download libvalijson-dev; }; })
  dpkg -x .deps/download/libvalijson-dev_*.deb .deps/valijson
fi

if [ ! -f "build/$preset/build.ninja" ]; then
  cmake --preset "$preset" >/dev/null
fi
cmake --build --preset "$preset" "$@"
