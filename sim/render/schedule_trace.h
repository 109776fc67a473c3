// SPDX-License-Identifier: Apache-2.0
// A simulated schedule in the Chrome/Perfetto trace-event JSON format (ui.perfetto.dev,
// chrome://tracing): one process per shown rank, one thread per stream, one complete event ("X")
// per task, and the memory in use as a counter track. Times in microseconds.
#pragma once

#include <vector>

#include "core/json/document.h"
#include "sim/schedule/program.h"
#include "sim/schedule/simulator.h"

namespace dsp::sim::render {

Json ScheduleToTrace(const schedule::Program& program, const schedule::Schedule& schedule,
                     const std::vector<int>& ranks);

}  // namespace dsp::sim::render
