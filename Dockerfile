# syntax=docker/dockerfile:1
# SPDX-License-Identifier: Apache-2.0
# ds-plan's container image, two stages on Debian 12:
#   build    installs the planner's build dependencies, builds ds-plan alone (CMake preset
#            "planner": no LibTorch, tests or benchmarks) and packages it with CPack;
#   runtime  debian:12-slim with that .deb installed by apt-get, which pulls in exactly the shared
#            libraries ds-plan links (Graphviz, PCRE2, ncurses, libedit, zlib) and nothing else.
#
#   docker build -t ds-plan .
#   docker run --rm -v "$PWD:/work" -w /work ds-plan validate ds_config.json --world-size 8
FROM debian:12 AS build
COPY . /src
WORKDIR /src
RUN scripts/setup.sh --planner-only \
 && cpack --config build/planner/CPackConfig.cmake -B /packages

FROM debian:12-slim AS runtime
COPY --from=build /packages/ds-plan_*_amd64.deb /tmp/
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends /tmp/ds-plan_*_amd64.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/ds-plan_*_amd64.deb \
 && ds-plan --version
WORKDIR /work
ENTRYPOINT ["ds-plan"]
CMD ["--help"]
