#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what ds-plan needs on Debian 12 (as root), then configures and builds it.
# Idempotent: packages already present are not touched, and an unchanged tree rebuilds in seconds.
# Arguments go to `cmake --build`: scripts/setup.sh --target ds-plan builds only the tool (and
# ds-plan-exec, which it runs), not the test suite and benchmarks; with none, everything.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config libcli11-dev nlohmann-json3-dev help2man zsh
          libgtest-dev libgmock-dev libbenchmark-dev libgraphviz-dev libpcre2-dev)
# dtl (header-only) for `visualize graph --diff --dump-after`'s unified diff of the graph text.
packages+=(libdtl-dev)
# zlib for `ds-plan compare`'s gzip-compressed PyTorch profiler traces.
packages+=(zlib1g-dev)
# `ds-plan explore`: ncurses for the full-screen UI, libedit (BSD) for the line mode's editing,
# history and completion; tmux drives the full-screen UI in the tests.
packages+=(libncurses-dev libedit-dev tmux)
# help2man generates the man page from --help; zsh checks the generated zsh completion in the tests.
# `ds-plan run` (the LibTorch executor, optional at build time): LibTorch 1.13 with c10d, the Gloo
# headers that ProcessGroupGloo.hpp includes (libtorch-dev does not ship them), and torchrun.
packages+=(libtorch-dev libgloo-dev python3-torch)
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

if [ ! -f build/release/build.ninja ]; then
  cmake --preset release >/dev/null
fi
cmake --build --preset release "$@"
