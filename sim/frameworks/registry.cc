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

TpOverlapBlocker TpCommOverlapBlocker(const FrameworkProfile& fw, int tp, bool sequence_parallel,
                                      bool torch_compile, bool te_modules) {
  if (!fw.tp_comm_overlap) return TpOverlapBlocker::kNoOverlap;
  if (tp <= 1) return TpOverlapBlocker::kNoTensorParallel;
  // torchtitan's TP plan is always sequence-parallel; its async TP needs the compiled graph.
  if (fw.tp_always_sequence_parallel) {
    if (!torch_compile) return TpOverlapBlocker::kNeedsCompile;
    if (te_modules) return TpOverlapBlocker::kTeModules;
    return TpOverlapBlocker::kNone;
  }
  return sequence_parallel ? TpOverlapBlocker::kNone : TpOverlapBlocker::kNeedsSequenceParallel;
}

}  // namespace dsp::sim
