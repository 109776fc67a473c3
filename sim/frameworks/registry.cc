// SPDX-License-Identifier: Apache-2.0
// The frameworks ds-plan models, by --engine value.
#include <array>

#include "sim/frameworks/framework.h"

namespace dsp::sim {
namespace {

const std::array<const FrameworkProfile*, 4>& Profiles() {
  static const std::array<const FrameworkProfile*, 4> all = {
      &DeepSpeedProfile(), &MegatronDeepSpeedProfile(), &MegatronLmProfile(), &Fsdp2Profile()};
  return all;
}

}  // namespace

const FrameworkProfile& FrameworkOf(Engine engine) {
  for (const FrameworkProfile* p : Profiles()) {
    if (p->engine == engine) return *p;
  }
  return DeepSpeedProfile();
}

std::string_view EngineName(Engine engine) { return FrameworkOf(engine).name; }

std::optional<Engine> ParseEngineName(std::string_view name) {
  for (const FrameworkProfile* p : Profiles()) {
    if (p->name == name) return p->engine;
  }
  return std::nullopt;
}

bool Fp32GradientBuffer(Engine engine, bool bf16, int zero_stage) {
  return bf16 && zero_stage <= FrameworkOf(engine).fp32_grad_buffer_max_zero_stage;
}

}  // namespace dsp::sim
