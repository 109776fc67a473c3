// SPDX-License-Identifier: Apache-2.0
// ds-plan visualize graph CONFIG --model M -o OUT.svg|OUT.dot|OUT.json: the forward graph of one
// training step after the parallelism passes the config implies, as a picture (Graphviz, laid out
// in-process) or as JSON. The config is validated first, like simulate: the passes trust it.
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/ds-plan/data_files.h"
#include "apps/ds-plan/command.h"
#include "core/schema/schema_check.h"
#include "apps/ds-plan/terminal_color.h"
#include "apps/ds-plan/model_input.h"
#include "apps/ds-plan/sim_setup.h"
#include "apps/ds-plan/world_options.h"
#include "core/json/hjson_parser.h"
#include "core/plan/plan.h"
#include "core/report/validate_report.h"
#include "core/util/file_io.h"
#include "core/validate/validator.h"
#include "sim/graph/builder.h"
#include "sim/graph/text_diff.h"
#include "sim/graph/text_format.h"
#include "sim/passes/deepcompile_budget.h"
#include "sim/passes/from_config.h"
#include "sim/cost/sim_input.h"
#include "sim/passes/pipeline.h"
#include "sim/render/graph_json.h"
#include "sim/render/graphviz.h"

namespace dsp::app {
namespace {

// The most decoder layers one SVG lays out in full (Graphviz dot; see RunVisualizeGraph).
constexpr int64_t kMaxLaidOutLayers = 8;

struct VisualizeGraphArgs {
  std::string config;
  std::string model_path;
  WorldOptions world;
  std::string layers;  // "" = every layer
  bool before = false;
  bool diff = false;           // --diff: mark what the passes changed
  std::string direction;       // --direction forward|backward|both
  std::string cluster;         // --cluster: memory and links for DeepCompile's ZeRO-3 passes
  int64_t seq_len = 0;         // --seq-len, with --cluster
  std::string passes;      // --passes a,b: forced pipeline
  std::string attn_impl;   // --attn-impl
  std::string dump_after;  // --dump-after PASS|all
  bool force = false;
  std::string output;
  std::string format;  // --format svg|dot|json: overrides the extension; needed for -o -
};

enum class OutputKind { kSvg, kDot, kJson };

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Names the pipeline runs, "a, b", for messages.
std::string PassNames(const sim::passes::Pipeline& pipeline) {
  std::string names;
  for (const auto& pass : pipeline.passes()) names += (names.empty() ? "" : ", ") + std::string(pass->name());
  return names;
}

int RunVisualizeGraph(const VisualizeGraphArgs& args) {
  if (args.output.empty() && args.dump_after.empty()) {
    return UsageError("-o OUT.svg|OUT.dot|OUT.json is required (or --dump-after PASS to print the graph)");
  }
  if (args.before && (!args.passes.empty() || !args.dump_after.empty())) {
    return UsageError("--before draws the graph without passes; it cannot be combined with --passes or --dump-after");
  }
  if (args.before && args.diff) {
    return UsageError("--diff draws the graph after the passes marked against the graph before them; drop --before");
  }
  OutputKind kind = OutputKind::kSvg;
  if (!args.format.empty()) {
    kind = args.format == "json" ? OutputKind::kJson : args.format == "dot" ? OutputKind::kDot : OutputKind::kSvg;
  } else if (args.output.empty()) {
    // --dump-after only: nothing written.
  } else if (args.output == "-") {
    return UsageError("-o -: pass --format svg|dot|json (there is no extension to pick it from)");
  } else if (EndsWith(args.output, ".svg")) {
    kind = OutputKind::kSvg;
  } else if (EndsWith(args.output, ".dot") || EndsWith(args.output, ".gv")) {
    kind = OutputKind::kDot;
  } else if (EndsWith(args.output, ".json")) {
    kind = OutputKind::kJson;
  } else {
    return UsageError("-o " + args.output + ": the extension picks the format: .svg, .dot (or .gv) or .json "
                      "(or pass --format)");
  }
  if (args.output == "-" && !args.dump_after.empty()) {
    return UsageError("-o - and --dump-after both write to standard output: write the picture to a file");
  }
  // Checked before any work so a long render never ends in a refusal.
  if (Status out = CheckOutputPath("-o", args.output, args.force); !args.output.empty() && !out.ok()) {
    return UsageError(out.error().message);
  }
  std::optional<std::vector<std::string>> forced;
  if (!args.passes.empty()) {
    auto names = sim::passes::ParsePassList(args.passes);
    if (!names.ok()) return UsageError("--passes: " + names.error().message);
    forced = *names;
  }
  if (!args.dump_after.empty() && args.dump_after != "all" &&
      sim::passes::PassDescription(args.dump_after).empty()) {
    return UsageError("--dump-after " + args.dump_after + ": no such pass (see `ds-plan passes`; or 'all')");
  }
  if (args.diff && kind == OutputKind::kJson && !args.output.empty()) {
    return UsageError("--diff marks a picture (.svg or .dot); with --dump-after PASS it prints a text diff");
  }
  sim::render::RenderOptions render;
  if (!args.direction.empty()) {
    auto direction = sim::render::ParseDirection(args.direction);
    if (!direction.ok()) return UsageError("--direction: " + direction.error().message);
    render.direction = *direction;
  }
  // Graphviz lays a whole model out superlinearly (the Mixtral sample took over a minute at 12
  // layers): by default layer 0 is drawn in full and the rest collapse; `--layers all` asks for
  // every layer.
  const bool every_layer = args.layers == "all";
  if (!args.layers.empty() && !every_layer) {
    auto range = sim::render::ParseLayerRange(args.layers);
    if (!range.ok()) return UsageError("--layers: " + range.error().message);
    render.layers = *range;
  }
  auto world = args.world.Resolve();
  if (!world.ok()) return UsageError(world.error().message);
  auto model = LoadModel(args.model_path);
  if (!model.ok()) return UsageError("--model: " + model.error().message);
  if (render.layers && render.layers->last >= model->num_hidden_layers) {
    return UsageError("--layers " + args.layers + ": the model has layers 0-" +
                      std::to_string(model->num_hidden_layers - 1));
  }
  const bool picture = !args.output.empty() && (kind == OutputKind::kSvg || kind == OutputKind::kDot);
  // Graphviz's layout grows superlinearly with the nodes (12 Mixtral layers took over a minute,
  // Llama-3-8B's 32 more than two, a 1,000-layer model crashed inside it): an SVG draws at most
  // kMaxLaidOutLayers layers in full. DOT and JSON are written without a layout.
  if (kind == OutputKind::kSvg) {
    const int64_t drawn = every_layer ? model->num_hidden_layers
                          : render.layers ? render.layers->last - render.layers->first + 1
                                          : 1;
    if (drawn > kMaxLaidOutLayers) {
      return UsageError("--layers " + args.layers + ": " + std::to_string(drawn) + " layers drawn in full is more than the " +
                        std::to_string(kMaxLaidOutLayers) + " an SVG layout takes in reasonable time; draw a range " +
                        "(--layers 0-" + std::to_string(kMaxLaidOutLayers - 1) + ") or write .dot or .json");
    }
  }
  if (args.layers.empty() && picture && model->num_hidden_layers > 1) {
    render.layers = sim::render::LayerRange{0, 0};
    const int last = model->num_hidden_layers - 1;
    std::cerr << "ds-plan: note: layer 0 drawn in full, "
              << (last == 1 ? std::string("layer 1") : "layers 1-" + std::to_string(last))
              << " collapsed (--layers A-B draws a range, --layers all every layer: slow for large models)\n";
  }
  auto text = ReadFile(args.config);
  if (!text.ok()) return UsageError(text.error().message);

  ValidateOptions options;
  options.world_size = world->world_size;
  options.gpus_per_node = world->gpus_per_node;
  options.pp = world->pp;
  options.model = &*model;
  // The pipeline stages a tuned config records under _ds_plan (the graph is DeepSpeed's passes:
  // another engine's layout is named, not drawn).
  std::vector<std::string> noted_notes;
  const std::optional<NotedLayout> noted =
      ReadNotedLayout(args.config, ParseDeepSpeedConfig(args.config, text.value()).doc.root, args.world, &noted_notes);
  for (const std::string& n : noted_notes) std::cerr << "ds-plan: note: " << n << "\n";
  if (noted) {
    options.pp = noted->pp;
    if (noted->mpu_tp > 0) options.mpu_tp = noted->mpu_tp;
    if (noted->cp > 1) options.context_parallel = noted->cp;
    options.pipeline_allows_sharded_zero = noted->framework->pipeline_max_zero_stage >= 2;
    if (noted->framework->engine != sim::Engine::kDeepSpeed) {
      std::cerr << "ds-plan: note: the config was planned for --engine " << noted->framework->name
                << ": the graph shows DeepSpeed's compiler passes, not that engine's\n";
    }
  }
  if (!args.attn_impl.empty()) options.attn_implementation = args.attn_impl;
  FileReport report = ValidateText(args.config, text.value(), options);
  if (!report.valid()) {
    std::cerr << RenderText({report}, StyleFor(stderr));
    return kExitFindings;
  }
  PrintWarnings(report);
  // Validation passed, so the text parses; the passes read the same config.
  const Json config_json = PydanticLaxView(ParseDeepSpeedConfig(args.config, std::move(text).value()).doc.root);
  // With a world size the ZeRO pass knows which groups have peers (dp = 1: nothing to reduce).
  std::optional<Plan> plan;
  if (world->world_size) {
    PlanInputs inputs;
    inputs.world_size = *world->world_size;
    inputs.gpus_per_node = world->gpus_per_node;
    inputs.pp = noted ? noted->pp : world->pp;
    auto built = BuildPlan(config_json, inputs);
    if (!built.ok()) {
      std::cerr << args.config << ": error: " << built.error().message << "\n";
      return kExitFindings;
    }
    plan = std::move(built).value();
  }

  // DeepCompile's ZeRO-3 rewrites the graph again from step WARMUP on, from a profile of memory
  // and gather times (compile/init_z3.py): with --cluster ds-plan's estimate stands in for it.
  const sim::ZeroSettings zero = sim::ReadZeroSettings(config_json);
  const bool dc_zero3 = zero.deepcompile && zero.stage == 3;
  std::optional<sim::passes::DeepCompileBudget> budget;
  if (!args.cluster.empty() && dc_zero3 && !args.before) {
    SimArgs sim_args;
    sim_args.config = args.config;
    sim_args.model_path = args.model_path;
    sim_args.cluster_path = args.cluster;
    sim_args.world = args.world;
    sim_args.seq_len = args.seq_len;
    sim_args.attn_impl = args.attn_impl;
    int exit_code = 0;
    std::unique_ptr<SimSetup> setup = PrepareSimulation(sim_args, &exit_code);
    if (setup == nullptr) return exit_code;
    if (setup->eval->outcome != sim::Evaluation::Outcome::kNumbers) {
      return UsageError("--cluster: no memory estimate for this layout (" + setup->eval->message + ")");
    }
    budget = sim::passes::DeepCompileBudgetFor(setup->eval->input, setup->eval->memory);
  } else if (dc_zero3 && !args.before) {
    std::cerr << "ds-plan: note: DeepCompile ZeRO-3 is drawn at step 0; from step WARMUP prefetch and "
                 "selective_gather rewrite it from a run-time profile (give --cluster to draw that step)\n";
  } else if (!args.cluster.empty() && !args.before) {
    std::cerr << "ds-plan: note: --cluster changes the picture only for DeepCompile ZeRO-3 "
                 "(compile.deepcompile with stage 3)\n";
  }

  auto graph = sim::graph::BuildModelGraph(*model);
  if (!graph.ok()) return UsageError("--model: " + graph.error().message);
  // --diff: the graph as built, which the rewritten one is marked against.
  std::optional<sim::graph::Graph> built_graph;
  std::string built_text;
  if (args.diff) {
    auto again = sim::graph::BuildModelGraph(*model);
    if (!again.ok()) return UsageError("--model: " + again.error().message);
    built_graph.emplace(std::move(again).value());
    built_text = sim::graph::PrintGraph(*built_graph);
    render.before = &*built_graph;
  }
  if (!args.before) {
    auto pipeline = sim::passes::PipelineForConfig(
        {.model = &*model,
         .config = &config_json,
         .plan = plan ? &*plan : nullptr,
         .forced = forced,
         .deepcompile_budget = budget ? &*budget : nullptr});
    if (!pipeline.ok()) return UsageError(pipeline.error().message);
    if (!args.dump_after.empty()) {
      bool found = args.dump_after == "all";
      for (const auto& pass : pipeline->passes()) found = found || pass->name() == args.dump_after;
      if (!found) {
        const std::string names = PassNames(*pipeline);
        return UsageError("--dump-after " + args.dump_after + ": that pass is not in this pipeline (" +
                          (names.empty() ? std::string("no passes run") : "it runs " + names) + ")");
      }
      pipeline->SetDumpAfter([&args, &built_text](std::string_view pass, const std::string& dump) {
        if (args.dump_after != "all" && pass != args.dump_after) return;
        if (args.diff) {
          std::cout << sim::graph::UnifiedDiff(built_text, dump, "graph as built",
                                               "after pass '" + std::string(pass) + "'");
        } else {
          std::cout << "# after pass '" << pass << "'\n" << dump;
        }
      });
    }
    auto changed = pipeline->Run(*graph);
    if (!changed.ok()) {
      // A pass rejected the model under this config (for example heads that do not split over sp).
      std::cerr << args.config << ": error: " << changed.error().message << "\n";
      return kExitFindings;
    }
    PrintPassNotes(args.config, pipeline->Notes(), pipeline->Remarks());
  }
  if (args.output.empty()) return kExitOk;  // --dump-after only
  std::string contents;
  if (kind == OutputKind::kJson) {
    contents = sim::render::GraphToJson(*graph).dump(2) + "\n";
  } else {
    // Graphviz lays out in one call with no progress of its own; say what is happening meanwhile.
    StatusLine status("laying out " + std::to_string(graph->size()) + " nodes with Graphviz");
    auto out = sim::render::RenderGraph(
        *graph, render, kind == OutputKind::kSvg ? sim::render::Format::kSvg : sim::render::Format::kDot);
    if (!out.ok()) return UsageError(out.error().message);
    contents = std::move(out).value();
  }
  Status written = WriteOutput("-o", args.output, contents, args.force);
  if (!written.ok()) return UsageError(written.error().message);
  if (args.output != "-") std::cerr << "wrote " << args.output << " (" << graph->size() << " nodes)\n";
  return kExitOk;
}

}  // namespace

Command AddVisualizeCommand(CLI::App& root) {
  auto args = std::make_shared<VisualizeGraphArgs>();
  CLI::App* app = root.add_subcommand("visualize", "draw the training step: its graph (Graphviz SVG, DOT, JSON) or its schedule (SVG, Perfetto trace)");
  app->require_subcommand(1);
  Command schedule = AddVisualizeScheduleCommand(*app);
  CLI::App* graph = app->add_subcommand("graph", "the forward graph of one training step, as built from the model");
  graph->add_option("config", args->config, "DeepSpeed config file")->required();
  graph->add_option("--model", args->model_path, kModelHelp)->required()->transform(PresetFile("models"));
  args->world.AddTo(graph);
  graph->add_option("--layers", args->layers,
                    "decoder layers drawn in full, e.g. 0-1, or all; the rest collapse to one node (default: 0)");
  graph->add_flag("--before", args->before, "the graph before the parallelism passes");
  graph->add_flag("--diff", args->diff,
                  "mark what the passes changed: inserted nodes red (+), changed shapes orange with "
                  "what they were, erased nodes listed; with --dump-after PASS a unified diff of "
                  "the graph text against the graph as built");
  graph->add_option("--direction", args->direction,
                    "collectives of one half of the step: forward, backward (edges point the way "
                    "gradients flow) or both (default: both, each labelled fwd/bwd)")
      ->check(CLI::IsMember({"forward", "backward", "both"}));
  graph->add_option("--attn-impl", args->attn_impl,
                    "attention implementation transformers runs (sdpa, flash_attention_2, eager, ...; "
                    "default: the model config's _attn_implementation): the autosp pass needs sdpa");
  graph->add_option("--passes", args->passes,
                    "run exactly these passes (comma-separated; see `ds-plan passes`) instead of "
                    "the ones the config implies");
  graph->add_option("--dump-after", args->dump_after,
                    "print the graph's text form to stdout after this pass (or 'all')");
  graph->add_option("--cluster", args->cluster,
                    "cluster description: with DeepCompile ZeRO-3, draw the step after WARMUP, when "
                    "prefetch and selective_gather have rewritten the graph (ds-plan's memory and "
                    "gather-time estimates stand in for DeepSpeed's profile; a file or a preset name)")
      ->transform(PresetFile("clusters"));
  graph->add_option("--seq-len", args->seq_len, "sequence length for --cluster's memory estimate (default: the model's)");
  graph->add_flag("--force", args->force, "replace OUT if it exists");
  graph->add_option("-o,--output", args->output, "output file: .svg, .dot or .json (- for standard output, with --format)");
  graph->add_option("--format", args->format, "output format, instead of the extension's")
      ->check(CLI::IsMember({"svg", "dot", "json"}));
  return Command{app, [args, schedule] { return schedule.app->parsed() ? schedule.run() : RunVisualizeGraph(*args); }};
}

}  // namespace dsp::app
