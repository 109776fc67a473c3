// SPDX-License-Identifier: Apache-2.0
// DeepSpeed's batch arithmetic (deepspeed/runtime/config.py _set_batch_related_parameters, _batch_assertion): the "world size" DeepSpeedConfig divides
// the batch by, and its fill-in table for the missing keys. Shared by the batch rules and by
// simulate, so both read a config the way DeepSpeed does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/config/config_view.h"

namespace dsp {

struct BatchWorld {
  double ws = 0;    // float: world / sequence_parallel_size is a float division in DeepSpeed
  std::string how;  // for messages: "world size 8 / sequence_parallel_size 2"
};

// config.py ~L703-727: data_parallel_size of the (dp, sp) mesh when both keys are present; the
// pipeline data-parallel size under PipelineModule (pp > 1); world / sequence_parallel_size when that
// key is present; else the world (also under AutoTP: its groups do not exist yet). nullopt when the
// world size is needed and unknown.
// `mpu_tp`: the tensor-model-parallel size of a Megatron mpu passed to deepspeed.initialize
// (Megatron-DeepSpeed); DeepSpeed then takes the data-parallel size from the mpu, world / (tp x pp).
// `cp`: the context-parallel size of an engine that takes it from the command line (Megatron-Core,
// torchtitan): its ranks share their samples, so the data-parallel world is world / cp before the
// rest applies (Megatron's get_data_parallel_world_size() without context parallelism).
std::optional<BatchWorld> BatchWorldSize(const ConfigView& view, std::optional<int64_t> world, int64_t pp,
                                         int64_t mpu_tp = 1, int64_t cp = 1);

struct BatchTriple {
  double batch = 0, micro = 0, gas = 0;
  std::string derived;  // which key was derived and how ("" when all three were given)
};

// _set_batch_related_parameters with Python floor division. At least one of batch or micro must
// be given; the results may be <= 0 (DeepSpeed's assertion catches that afterwards).
BatchTriple FillBatchTriple(std::optional<int64_t> batch, std::optional<int64_t> micro,
                            std::optional<int64_t> gas, double ws);

// "64", or "1.5" for fractional values.
std::string FormatBatchNumber(double x);

}  // namespace dsp
