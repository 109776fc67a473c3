# SPDX-License-Identifier: Apache-2.0
# Debian packages with CPack (`cpack --config build/release/CPackConfig.cmake`, or
# `cmake --build --preset release --target package`):
#   ds-plan       bin/ds-plan, its man page, bash/zsh completions, schemas, cluster presets and sample
#                 models under /usr/share/ds-plan (the "planner" install component);
#   ds-plan-exec  bin/ds-plan-exec, the LibTorch half of `ds-plan run` (the "exec" component), built
#                 only when LibTorch and Gloo were found; depends on ds-plan of the same version.
# Run-time dependencies come from dpkg-shlibdeps (the libraries each binary links), so the packages
# install with `apt-get install ./ds-plan_<version>_amd64.deb` on any Debian 12.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ds-plan)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Plan, check and simulate DeepSpeed, FSDP2 and Megatron-Core training layouts")
set(CPACK_PACKAGE_CONTACT "ds-plan maintainers <maintainers@users.noreply.a-seed-d2aba66d.example>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL planner)
if(DSP_HAVE_TORCH)
  list(APPEND CPACK_COMPONENTS_ALL exec)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <name>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_PLANNER_PACKAGE_NAME ds-plan)
set(CPACK_COMPONENT_PLANNER_DESCRIPTION
    "validate DeepSpeed configs, derive process groups, simulate memory and step time, search layouts")
# graphviz's `dot` is not needed: ds-plan renders through libgvc, which shlibdeps finds.

set(CPACK_DEBIAN_EXEC_PACKAGE_NAME ds-plan-exec)
set(CPACK_COMPONENT_EXEC_DESCRIPTION
    "ds-plan run: execute a plan with LibTorch on Gloo or NCCL and check loss and gradient parity")
set(CPACK_DEBIAN_EXEC_PACKAGE_DEPENDS "ds-plan (= ${PROJECT_VERSION})")
# ds-plan run is launched under torchrun, which python3-torch provides.
set(CPACK_DEBIAN_EXEC_PACKAGE_RECOMMENDS "python3-torch")

include(CPack)
