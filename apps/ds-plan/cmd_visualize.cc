// ds-plan visualize graph CONFIG --model M -o OUT.svg|OUT.dot|OUT.json: the forward graph of one
// training step as a picture (Graphviz, laid out in-process) or as JSON. The config is validated
// first, like simulate, because the graph will soon be the one the parallelism passes derive from
// it; until then the graph is drawn as the builder makes it (see GraphToShow).
#include <cctype>
#include <filesystem>
#include <optional>
#include <iostream>
#include <memory>
#include <string>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/model_input.h"
#include "apps/ds-plan/world_options.h"
#include "core/report/validate_report.h"
#include "core/util/file_io.h"
#include "core/validate/validator.h"
#include "core/config/parallel_config.h"
#include "sim/graph/builder.h"
#include "sim/passes/autosp.h"
#include "sim/passes/autotp.h"
#include "sim/passes/pipeline.h"
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

// tensor_parallel.partition_config as the AutoTP pass reads it (validate has checked the shapes).
sim::passes::AutoTpOptions TpOptions(const ModelSpec& model, const Json& config, int64_t tp) {
  sim::passes::AutoTpOptions o = sim::passes::AutoTpOptions::ForModel(model, tp);
  ConfigView v(config);
  o.use_default_specs = v.Bool("/tensor_parallel/partition_config/use_default_specs").or_default(true);
  auto preset = v.String("/tensor_parallel/preset_model");
  if (preset.present()) {
    o.preset = preset.value;
    for (char& c : o.preset) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  const Json* specs = v.Get("/tensor_parallel/partition_config/layer_specs");
  if (specs == nullptr || !specs->is_array()) return o;
  for (const Json& spec : *specs) {
    if (!spec.is_object()) continue;
    sim::passes::TpLayerSpec s;
    std::string type = spec.value("partition_type", std::string("column"));
    for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    s.partition = type == "row"    ? sim::passes::TpPartition::kRow
                  : type == "skip" ? sim::passes::TpPartition::kSkip
                                   : sim::passes::TpPartition::kColumn;
    for (const Json& p : spec.value("patterns", Json::array())) {
      if (p.is_string()) s.patterns.push_back(p.get<std::string>());
    }
    if (auto it = spec.find("model_types"); it != spec.end() && it->is_array()) {
      std::vector<std::string> types;
      for (const Json& t : *it) {
        if (!t.is_string()) continue;
        std::string lower = t.get<std::string>();
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        types.push_back(lower);
      }
      s.model_types = types;
    }
    o.layer_specs.push_back(std::move(s));
  }
  return o;
}

// The graph to draw: as built with --before, else after the parallelism passes the config asks
// for (AutoTP when autotp_size > 1, AutoSP when the sequence-parallel size is > 1; AutoEP and
// ZeRO passes are not written yet). AutoSP after AutoTP sees the per-rank head counts.
Result<sim::graph::Graph> GraphToShow(const ModelSpec& model, const Json& config, bool before,
                                      std::optional<int64_t> seq_len) {
  auto graph = sim::graph::BuildModelGraph(model);
  if (!graph.ok() || before) return graph;
  const ParallelConfig pc = ReadParallelConfig(ConfigView(config));
  if (pc.autoep_enabled) {
    // AutoTP skips AutoEP subtrees and folding replaces the experts' TP collectives with
    // dispatch/combine and the restore all-gather; without the autoep pass any rewrite of a
    // MoE layer would be wrong, so nothing is rewritten.
    std::cerr << "note: the AutoEP pass is not available yet; drawing the graph before the "
                 "parallelism passes\n";
    return graph;
  }
  sim::passes::Pipeline pipeline;
  if (pc.tp > 1) pipeline.Add(std::make_unique<sim::passes::AutoTpPass>(TpOptions(model, config, pc.tp)));
  if (pc.sp > 1) {
    sim::passes::AutoSpOptions o = sim::passes::AutoSpOptions::ForModel(model, pc.sp, seq_len);
    if (pc.tp > 1) {
      o.num_heads /= pc.tp;
      o.num_kv_heads /= pc.tp;
    }
    pipeline.Add(std::make_unique<sim::passes::AutoSpPass>(std::move(o)));
  }
  auto changed = pipeline.Run(*graph);
  if (!changed.ok()) return changed.error();
  return graph;
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
  FileReport report = ValidateText(args.config, text.value(), options);
  if (!report.valid()) {
    std::cerr << RenderText({report});
    return kExitFindings;
  }
  // Validation passed, so the text parses; the passes read the same config.
  const Json config_json = ParseJsonLenient(args.config, std::move(text).value()).doc.root;

  auto graph = GraphToShow(*model, config_json, args.before, std::nullopt);
  if (!graph.ok()) {
    // A pass rejected the model under this config (for example heads that do not split over sp).
    std::cerr << args.config << ": error: " << graph.error().message << "\n";
    return kExitFindings;
  }
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
  graph->add_flag("--before", args->before, "the graph before the parallelism passes");
  graph->add_flag("--force", args->force, "overwrite OUT if it exists");
  graph->add_option("-o,--output", args->output, "output file: .svg, .dot or .json")->required();
  return Command{app, [args] { return RunVisualizeGraph(*args); }};
}

}  // namespace dsp::app
