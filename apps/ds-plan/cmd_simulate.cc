// SPDX-License-Identifier: Apache-2.0
// ds-plan simulate CONFIG --model M --cluster C: memory per rank and step time of one training
// step, before any GPU is booked. The config is validated first (a config DeepSpeed would reject
// has no step time), then the plan, workload and ZeRO settings feed sim::EstimateMemory and
// sim::EstimateStepTime. Not fitting in HBM is an answer (exit 0), not a failure.
#include <iostream>
#include <memory>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/sim_setup.h"
#include "sim/memory_model.h"
#include "sim/simulate_report.h"
#include "sim/step_time.h"

namespace dsp::app {
namespace {

struct SimulateArgs {
  SimArgs sim;
  std::string format = "text";
};

int RunSimulate(const SimulateArgs& args) {
  int code = kExitOk;
  std::unique_ptr<SimSetup> s = PrepareSimulation(args.sim, &code);
  if (!s) return code;

  sim::SimulateResult result;
  result.config_path = args.sim.config;
  result.model_path = args.sim.model_path;
  result.model_type = s->model.model_type;
  result.model_left_out = s->model.left_out;
  result.cluster = &s->cluster;
  result.world_size = s->world_size;
  result.gpus_per_node = s->gpus_per_node;
  result.layout = s->report.layout;
  result.workload = s->input.workload;
  result.zero = s->input.zero;
  result.engine = s->input.engine;
  result.samples_per_step = s->micro_batch * s->grad_accum * s->plan.derived.dp;
  result.params = CountParameters(s->model);
  result.memory = sim::EstimateMemory(s->input);
  result.time = sim::EstimateStepTime(s->input);
  result.notes = s->notes;
  if (Status finite = EstimatesAreFinite(result.memory, result.time); !finite.ok()) {
    return UsageError(finite.error().message);
  }

  if (args.format == "json") {
    std::cout << sim::SimulateToJson(result).dump(2) << "\n";
  } else {
    std::cout << sim::RenderSimulateText(result);
  }
  return kExitOk;
}

}  // namespace

Command AddSimulateCommand(CLI::App& root) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* app = root.add_subcommand("simulate", "estimate memory per rank and step time of a config on a cluster");
  args->sim.AddTo(app);
  app->add_option("--format", args->format, "output format")->check(CLI::IsMember({"text", "json"}));
  return Command{app, [args] { return RunSimulate(*args); }};
}

}  // namespace dsp::app
