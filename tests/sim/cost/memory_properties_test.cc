// SPDX-License-Identifier: Apache-2.0
// Properties of the memory model over a sweep of presets, sizes, stages and offload settings:
// more TP never raises per-rank parameter memory, a higher ZeRO stage never raises model-state
// memory, offload never raises GPU memory.
#include <gtest/gtest.h>

#include <string>

#include "tests/sim/cost/memory_test_util.h"

namespace dsp::sim {
namespace {

using testing::MemoryCase;
using testing::ModelStates;

std::string Config(int stage, int tp, const std::string& extra = "") {
  return R"({"zero_optimization": {"stage": )" + std::to_string(stage) + extra +
         R"(}, "tensor_parallel": {"autotp_size": )" + std::to_string(tp) + "}}";
}

constexpr const char* kPresets[] = {"llama-3-8b.json", "mixtral-8x7b.json", "qwen2-moe-a2.7b.json",
                                    "qwen3-30b-a3b.json", "tiny-llama.json"};
constexpr MemoryConvention kConventions[] = {MemoryConvention::kZeroPaper,
                                             MemoryConvention::kDeepSpeedEstimator};

// The one-layer templates EstimateMemory uses reproduce the exact per-family counts.
TEST(MemoryPropertiesTest, FamiliesMatchExactParameterCounts) {
  for (const char* preset : dsp::testing::kModelPresets) {
    MemoryCase c(Config(0, 1), 1, preset);
    MemoryReport r = c.Run();
    ParamCounts counts = CountParameters(c.model);
    for (ParamFamily f : kAllParamFamilies) {
      EXPECT_DOUBLE_EQ(r.by_family[f].parameters_bytes, 2.0 * static_cast<double>(counts.by_family[f]))
          << preset << " " << ParamFamilyName(f);
    }
  }
}

// At a fixed data-parallel size (world = tp x dp), every stage.
TEST(MemoryPropertiesTest, MoreTpNeverRaisesParameterMemory) {
  for (const char* preset : kPresets) {
    for (int dp : {1, 2, 4}) {
      for (int stage = 0; stage <= 3; ++stage) {
        double previous = 0;
        for (int tp : {1, 2, 4, 8}) {
          MemoryCase c(Config(stage, tp), int64_t{tp} * dp, preset);
          double params = c.Run().parameters_bytes;
          if (tp > 1) {
            EXPECT_LE(params, previous) << preset << " dp=" << dp << " stage=" << stage << " tp=" << tp;
          }
          previous = params;
        }
      }
    }
  }
}

// At a fixed world of 8, stages 0-2 (parameters are not partitioned there). At stage 3 with a fixed
// world, dp shrinks as tp grows and replicated norms/routers are partitioned over fewer ranks.
TEST(MemoryPropertiesTest, MoreTpNeverRaisesParameterMemoryAtFixedWorld) {
  for (const char* preset : kPresets) {
    for (int stage = 0; stage <= 2; ++stage) {
      double previous = 0;
      for (int tp : {1, 2, 4, 8}) {
        double params = MemoryCase(Config(stage, tp), 8, preset).Run().parameters_bytes;
        if (tp > 1) {
          EXPECT_LE(params, previous) << preset << " stage=" << stage << " tp=" << tp;
        }
        previous = params;
      }
    }
  }
}

TEST(MemoryPropertiesTest, HigherStageNeverRaisesModelStates) {
  for (const char* preset : kPresets) {
    for (MemoryConvention conv : kConventions) {
      for (int tp : {1, 2}) {
        for (int64_t world : {2, 8, 64}) {
          double previous = 0;
          for (int stage = 0; stage <= 3; ++stage) {
            MemoryCase c(Config(stage, tp), world, preset);
            c.workload.convention = conv;
            double states = ModelStates(c.Run());
            if (stage > 0) {
              EXPECT_LE(states, previous) << preset << " world=" << world << " stage=" << stage;
            }
            previous = states;
          }
        }
      }
    }
  }
}

TEST(MemoryPropertiesTest, OffloadNeverRaisesGpuMemory) {
  const std::string offloads[] = {
      R"(, "offload_optimizer": {"device": "cpu"})",
      R"(, "offload_optimizer": {"device": "cpu", "ratio": 0.3})",
      R"(, "offload_param": {"device": "cpu"})",
      R"(, "offload_optimizer": {"device": "nvme"}, "offload_param": {"device": "cpu"})"};
  for (const char* preset : kPresets) {
    for (MemoryConvention conv : kConventions) {
      for (int stage = 1; stage <= 3; ++stage) {
        MemoryCase base(Config(stage, 1), 8, preset);
        base.workload.convention = conv;
        MemoryReport without = base.Run();
        for (const std::string& offload : offloads) {
          if (offload.find("ratio") != std::string::npos && stage != 3) continue;
          MemoryCase c(Config(stage, 1, offload), 8, preset);
          c.workload.convention = conv;
          MemoryReport with = c.Run();
          EXPECT_LE(with.peak_bytes, without.peak_bytes) << preset << " stage=" << stage << offload;
          EXPECT_LE(ModelStates(with), ModelStates(without)) << preset << " stage=" << stage << offload;
          EXPECT_GE(with.cpu_bytes, without.cpu_bytes);
        }
      }
    }
  }
}

TEST(MemoryPropertiesTest, RecomputeOrdersActivations) {
  auto saved_by_layers = [](const MemoryReport& r) {
    double sum = 0;
    for (double b : r.layer_activations_bytes) sum += b;
    return sum;
  };
  for (const char* preset : kPresets) {
    MemoryCase c(Config(1, 1), 8, preset);
    c.workload.seq_len = 2048;
    // Materialized attention keeps the scores, which selective recompute drops.
    c.engine.attention = AttentionKernel::kMaterialized;
    c.workload.recompute = Recompute::kNone;
    MemoryReport none = c.Run();
    c.workload.recompute = Recompute::kSelective;
    MemoryReport selective = c.Run();
    c.workload.recompute = Recompute::kFull;
    MemoryReport full = c.Run();
    EXPECT_LT(saved_by_layers(selective), saved_by_layers(none)) << preset;
    EXPECT_LT(saved_by_layers(full), saved_by_layers(selective)) << preset;
    // At the peak, full recompute also holds one rematerialised layer, which outweighs the
    // savings only for very shallow models.
    if (c.model.num_hidden_layers >= 16) {
      EXPECT_LT(full.activations_bytes, selective.activations_bytes) << preset;
    }
  }
}

}  // namespace
}  // namespace dsp::sim
