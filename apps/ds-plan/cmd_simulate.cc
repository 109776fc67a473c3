// SPDX-License-Identifier: Apache-2.0
// ds-plan simulate CONFIG --model M --cluster C: memory per rank and step time of one training
// step, before any GPU is booked. The config is validated first (a config DeepSpeed would reject
// has no step time), then the plan, workload and ZeRO settings feed sim::EstimateMemory and
// sim::EstimateStepTime. Not fitting in HBM is an answer (exit 0), not a failure.
#include <iostream>
#include <memory>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/sim_setup.h"
#include "sim/cost/memory_model.h"
#include "sim/report/simulate_report.h"
#include "sim/cost/step_time.h"

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
  result.cluster = &s->eval->cluster;
  result.world_size = s->eval->world_size;
  result.gpus_per_node = s->eval->gpus_per_node;
  result.layout = s->eval->report.layout;
  result.workload = s->eval->input.workload;
  result.zero = s->eval->input.zero;
  result.engine = s->eval->input.engine;
  result.samples_per_step = s->eval->samples_per_step();
  result.params = CountParameters(s->model);
  result.memory = s->eval->memory;
  result.time = s->eval->time;
  result.notes = s->notes;

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
