// ds-plan visualize graph CONFIG --model M -o OUT.svg|OUT.dot|OUT.json: the forward graph of one
// training step as a picture (Graphviz, laid out in-process) or as JSON. The config is validated
// first, like simulate, because the graph will soon be the one the parallelism passes derive from
// it; until then the graph is drawn as the builder makes it (see GraphToShow).
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/model_input.h"
#include "apps/ds-plan/world_options.h"
#include "core/report/validate_report.h"
#include "core/util/file_io.h"
#include "core/validate/validator.h"
#include "sim/graph/builder.h"
#include "sim/render/graph_json.h"
#include "sim/render/graphviz.h"

namespace dsp::app {
namespace {

struct VisualizeGraphArgs {
  std::string config;
  std::string model_path;
  WorldOptions world;
  std::string layers;  // "" = every layer
  bool before = false;
  bool force = false;
  std::string output;
};

enum class OutputKind { kSvg, kDot, kJson };

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The graph to draw. HOOK for sim/passes: once the parallelism passes exist, run them here on the
// built graph unless `before` is set (--before keeps the graph as built). Until then both paths
// return the builder's graph.
Result<sim::graph::Graph> GraphToShow(const ModelSpec& model, bool before) {
  // if (!before) run the passes on *graph here (sim/passes, not landed yet).
  static_cast<void>(before);
  return sim::graph::BuildModelGraph(model);
}

int RunVisualizeGraph(const VisualizeGraphArgs& args) {
  OutputKind kind;
  if (EndsWith(args.output, ".svg")) {
    kind = OutputKind::kSvg;
  } else if (EndsWith(args.output, ".dot") || EndsWith(args.output, ".gv")) {
    kind = OutputKind::kDot;
  } else if (EndsWith(args.output, ".json")) {
    kind = OutputKind::kJson;
  } else {
    return UsageError("-o " + args.output + ": the extension picks the format: .svg, .dot (or .gv) or .json");
  }
  sim::render::RenderOptions render;
  if (!args.layers.empty()) {
    auto range = sim::render::ParseLayerRange(args.layers);
    if (!range.ok()) return UsageError("--layers: " + range.error().message);
    render.layers = *range;
  }
  // Checked before any work so a long render never ends in a refusal.
  std::error_code ec;
  if (!args.force && std::filesystem::exists(args.output, ec)) {
    return UsageError(args.output + " exists (pass --force to overwrite it)");
  }
  auto world = args.world.Resolve();
  if (!world.ok()) return UsageError(world.error().message);
  auto model = LoadModel(args.model_path);
  if (!model.ok()) return UsageError("--model: " + model.error().message);
  auto text = ReadFile(args.config);
  if (!text.ok()) return UsageError(text.error().message);

  ValidateOptions options;
  options.world_size = world->world_size;
  options.gpus_per_node = world->gpus_per_node;
  options.pp = world->pp;
  options.model = &*model;
  FileReport report = ValidateText(args.config, std::move(text).value(), options);
  if (!report.valid()) {
    std::cerr << RenderText({report});
    return kExitFindings;
  }

  auto graph = GraphToShow(*model, args.before);
  if (!graph.ok()) return UsageError("--model: " + graph.error().message);
  std::string contents;
  if (kind == OutputKind::kJson) {
    contents = sim::render::GraphToJson(*graph).dump(2) + "\n";
  } else {
    auto out = sim::render::RenderGraph(
        *graph, render, kind == OutputKind::kSvg ? sim::render::Format::kSvg : sim::render::Format::kDot);
    if (!out.ok()) return UsageError(out.error().message);
    contents = std::move(out).value();
  }
  Status written = WriteFileAtomic(args.output, contents);
  if (!written.ok()) return UsageError(written.error().message);
  std::cerr << "wrote " << args.output << " (" << graph->size() << " nodes)\n";
  return kExitOk;
}

}  // namespace

Command AddVisualizeCommand(CLI::App& root) {
  auto args = std::make_shared<VisualizeGraphArgs>();
  CLI::App* app = root.add_subcommand("visualize", "draw the training step's graph (Graphviz SVG, DOT or JSON)");
  app->require_subcommand(1);
  CLI::App* graph = app->add_subcommand("graph", "the forward graph of one training step, as built from the model");
  graph->add_option("config", args->config, "DeepSpeed config file")->required();
  graph->add_option("--model", args->model_path, "Hugging Face config.json of the model")->required();
  args->world.AddTo(graph);
  graph->add_option("--layers", args->layers, "decoder layers drawn in full, e.g. 0-1; the rest collapse to one node");
  graph->add_flag("--before", args->before, "the graph before the parallelism passes (currently always)");
  graph->add_flag("--force", args->force, "overwrite OUT if it exists");
  graph->add_option("-o,--output", args->output, "output file: .svg, .dot or .json")->required();
  return Command{app, [args] { return RunVisualizeGraph(*args); }};
}

}  // namespace dsp::app
