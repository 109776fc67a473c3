// SPDX-License-Identifier: Apache-2.0
// Which passes a config implies (parallel sections and compile.passes), --passes forcing in
// registry order, pass-list parsing, and the options the passes receive (group sizes from the
// plan, folding, per-rank heads for AutoSP after AutoTP).
#include "sim/passes/from_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/graph/builder.h"
#include "sim/graph/text_format.h"
#include "tests/core/rules/rule_test_util.h"
#include "tests/sim/passes/pass_test_util.h"

namespace dsp::sim::passes {
namespace {

using testing::CountOp;

std::vector<std::string> Names(const Pipeline& p) {
  std::vector<std::string> out;
  for (const auto& pass : p.passes()) out.emplace_back(pass->name());
  return out;
}

std::vector<std::string> Chosen(const std::string& config_text,
                                std::optional<std::vector<std::string>> forced = std::nullopt) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("tiny-moe.json");
  const Json config = Json::parse(config_text);
  PipelineRequest r{.model = &model, .config = &config, .forced = std::move(forced)};
  auto p = PipelineForConfig(r);
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() ? Names(*p) : std::vector<std::string>{};
}

using V = std::vector<std::string>;

// The zero pass runs at every stage: ZeRO-0's engine all-reduces gradients too (engine.py
// allreduce_gradients), and a data-parallel plan without that all-reduce is a wrong answer.
TEST(PipelineForConfigTest, ParallelSectionsPickThePasses) {
  EXPECT_EQ(Chosen(R"({})"), V{"zero"});
  EXPECT_EQ(Chosen(R"({"zero_optimization": {"stage": 0}})"), V{"zero"});
  EXPECT_EQ(Chosen(R"({"zero_optimization": {"stage": 2}})"), V{"zero"});
  EXPECT_EQ(Chosen(R"({"tensor_parallel": {"autotp_size": 2}})"), (V{"autotp", "zero"}));
  EXPECT_EQ(Chosen(R"({"tensor_parallel": {"autotp_size": 1}})"), V{"zero"});
  EXPECT_EQ(Chosen(R"({"sequence_parallel_size": 2, "zero_optimization": {"stage": 1}})"),
            (V{"autosp", "zero"}));
  EXPECT_EQ(Chosen(R"({"expert_parallel": {"enabled": true, "autoep_size": 2},
                       "tensor_parallel": {"autotp_size": 2}, "zero_optimization": {"stage": 1}})"),
            (V{"autoep", "autotp", "zero"}));
  EXPECT_EQ(Chosen(R"({"expert_parallel": {"enabled": false, "autoep_size": 2}})"), V{"zero"});
}

TEST(PipelineForConfigTest, CompilePassesAddTheirPasses) {
  EXPECT_EQ(Chosen(R"({"compile": {"deepcompile": true, "passes": ["z3"]}})"), V{"zero"});
  EXPECT_EQ(Chosen(R"({"compile": {"deepcompile": true, "passes": ["z1"]}})"), V{"zero"});
  EXPECT_EQ(Chosen(R"({"compile": {"deepcompile": true, "passes": ["autosp"]}})"), (V{"autosp", "zero"}));
  EXPECT_EQ(Chosen(R"({"compile": {"deepcompile": true, "passes": ["autotp"]}})"), (V{"autotp", "zero"}));
}

TEST(PipelineForConfigTest, ForcedPassesRunInRegistryOrder) {
  EXPECT_EQ(Chosen(R"({"zero_optimization": {"stage": 3}})", V{"zero", "autoep", "zero"}),
            (V{"autoep", "zero"}));
  EXPECT_EQ(Chosen(R"({"tensor_parallel": {"autotp_size": 2}})", V{"autosp"}), V{"autosp"});
}

TEST(PipelineForConfigTest, ParsePassList) {
  auto ok = ParsePassList(" zero, autotp ,zero");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, (V{"zero", "autotp"}));
  auto unknown = ParsePassList("autotp,z3");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "unknown pass 'z3' (known: autoep, autotp, autosp, zero, selective_gather, prefetch)");
  auto empty = ParsePassList(" , ");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message, "the pass list is empty (known passes: see `ds-plan passes`)");
}

TEST(PipelineForConfigTest, GroupSizesComeFromThePlan) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  const Json config = Json::parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": 2},
                                      "tensor_parallel": {"autotp_size": 2}})");
  auto run = [&](int64_t world) {
    PlanInputs inputs;
    inputs.world_size = world;
    auto plan = BuildPlan(config, inputs);
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    PipelineRequest r{.model = &model, .config = &config, .plan = &*plan};
    auto pipeline = PipelineForConfig(r);
    EXPECT_TRUE(pipeline.ok());
    auto g = graph::BuildModelGraph(model);
    EXPECT_TRUE(pipeline->Run(*g).ok());
    return std::move(g).value();
  };
  // World 2 = one tp group: dp is 1, nothing to reduce over dp; tp collectives stay.
  graph::Graph alone = run(2);
  EXPECT_EQ(CountOp(alone, graph::ops::kReduceScatter, ""), 0);
  // Two per layer, and lm_head's: without a preset it is transformers' colwise_gather_output.
  EXPECT_EQ(CountOp(alone, graph::ops::kCopyToTp, ""), 5);
  graph::Graph four = run(4);
  EXPECT_EQ(CountOp(four, graph::ops::kReduceScatter, ""), 21);
  EXPECT_EQ(four.Find("reduce_grad_layers_0_self_attn_q_proj_weight")->group, "dp");
  EXPECT_EQ(graph::ShapeToString(*four.Find("reduce_grad_layers_0_self_attn_q_proj_weight")->shape),
            "[N*D*H/T/DP]");
}

// transformers' LlamaForCausalLM._tp_plan = {"lm_head": "colwise_gather_output"}: without a
// preset or partition_config DeepSpeed 0.19.6 converts it (tp_plan_converter.py, PR #8146), so
// lm_head is a column LinearLayer holding V/T rows whose logits gather_from_tp_region all-gathers;
// with the llama preset lm_head stays whole.
TEST(PipelineForConfigTest, WithoutAPresetLmHeadGathersTheLogits) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  for (const bool preset : {false, true}) {
    Json config = Json::parse(R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 2}})");
    if (preset) config["tensor_parallel"]["preset_model"] = "llama";
    auto pipeline = PipelineForConfig({.model = &model, .config = &config});
    ASSERT_TRUE(pipeline.ok()) << pipeline.error().message;
    auto g = graph::BuildModelGraph(model);
    ASSERT_TRUE(pipeline->Run(*g).ok());
    const graph::Node* head = g->Find("lm_head");
    ASSERT_NE(head, nullptr);
    EXPECT_EQ(graph::ShapeToString(*head->param_shape), preset ? "[V, H]" : "[V/T, H]") << preset;
    EXPECT_EQ(CountOp(*g, graph::ops::kGatherFromTp, ""), preset ? 0 : 1) << preset;
    if (!preset) {
      // The head computes V/T logit columns; gather_from_tp restores all V (ZeRO's gradient
      // reduction is its other reader).
      EXPECT_EQ(graph::ShapeToString(*head->shape), "[B, S, V/T]");
      const graph::Node* gather = g->Find("lm_head_gather_from_tp");
      ASSERT_NE(gather, nullptr);
      EXPECT_EQ(gather->args.front(), head);
      EXPECT_EQ(graph::ShapeToString(*gather->shape), "[B, S, V]");
    }
  }
}

// engine.py get_autosp_backend (0.19.6): at ZeRO stage 2/3 "Currently AutoSP does not compose
// with ZeRO stage 2 and 3. Falling back to the torch compiler." and returns None: no rewrite.
TEST(PipelineForConfigTest, AutoSpFallsBackAtZeroTwoAndThree) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  for (int stage : {0, 1, 2, 3}) {
    Json config = Json::parse(R"({"sequence_parallel_size": 2, "compile": {"deepcompile": true, "passes": ["autosp"]}})");
    config["zero_optimization"] = {{"stage", stage}};
    auto pipeline = PipelineForConfig({.model = &model, .config = &config});
    ASSERT_TRUE(pipeline.ok()) << pipeline.error().message;
    auto g = graph::BuildModelGraph(model);
    ASSERT_TRUE(pipeline->Run(*g).ok());
    EXPECT_EQ(CountOp(*g, graph::ops::kAllToAll, ""), stage >= 2 ? 0 : 4 * 2) << "stage " << stage;
  }
  // Eager Ulysses (no DeepCompile) composes with ZeRO-3.
  const Json eager = Json::parse(R"({"sequence_parallel_size": 2, "zero_optimization": {"stage": 3}})");
  auto pipeline = PipelineForConfig({.model = &model, .config = &eager});
  ASSERT_TRUE(pipeline.ok());
  auto g = graph::BuildModelGraph(model);
  ASSERT_TRUE(pipeline->Run(*g).ok());
  EXPECT_EQ(CountOp(*g, graph::ops::kAllToAll, ""), 8);
}

TEST(PipelineForConfigTest, UlyssesReducesOverTheSequenceDataParallelGroup) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  const Json config = Json::parse(R"({"sequence_parallel_size": 2, "zero_optimization": {"stage": 1}})");
  PipelineRequest r{.model = &model, .config = &config};
  auto pipeline = PipelineForConfig(r);
  ASSERT_TRUE(pipeline.ok());
  auto g = graph::BuildModelGraph(model);
  ASSERT_TRUE(pipeline->Run(*g).ok());
  EXPECT_EQ(CountOp(*g, graph::ops::kAllToAll, "model.layers.1"), 4);
  EXPECT_EQ(g->Find("reduce_grad_norm_weight")->group, "sp_dp");
}

// With neither preset_model nor partition_config the pass shards what transformers' tp_plan
// says, converted as DeepSpeed 0.19.6 converts it (TPPlanConverter): Qwen3's q_norm/k_norm are
// replicated_with_grad_allreduce (skip), its projections colwise/rowwise.
Result<graph::Graph> RunFromConfig(const std::string& model_file, const std::string& config_text,
                                   std::vector<std::string>* notes = nullptr) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie(model_file);
  const Json config = Json::parse(config_text);
  PipelineRequest r{.model = &model, .config = &config, .forced = std::vector<std::string>{"autotp"}};
  auto pipeline = PipelineForConfig(r);
  if (!pipeline.ok()) return pipeline.error();
  auto g = graph::BuildModelGraph(model);
  if (!g.ok()) return g.error();
  auto ran = pipeline->Run(*g);
  if (!ran.ok()) return ran.error();
  if (notes != nullptr) *notes = pipeline->Notes();
  return std::move(g).value();
}

TEST(PipelineForConfigTest, WithoutAPresetTheTransformersPlanShards) {
  auto g = RunFromConfig("qwen3-8b.json", R"({"tensor_parallel": {"autotp_size": 2}})");
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(graph::ShapeToString(*g->Find("layers_0_self_attn_q_proj")->param_shape), "[N*D/T, H]");
  EXPECT_EQ(graph::ShapeToString(*g->Find("layers_0_mlp_down_proj")->param_shape), "[H, F/T]");
  EXPECT_EQ(CountOp(*g, graph::ops::kReduceFromTp, "model.layers.0"), 2);
  // The preset path is unchanged: mixtral's preset shards its experts.
  auto preset = RunFromConfig("mixtral-8x7b.json",
                              R"({"tensor_parallel": {"autotp_size": 2, "preset_model": "mixtral"}})");
  ASSERT_TRUE(preset.ok()) << preset.error().message;
  // transformers' mixtral plan has packed_colwise / moe_tp_experts: DeepSpeed raises ValueError.
  auto refused = RunFromConfig("mixtral-8x7b.json", R"({"tensor_parallel": {"autotp_size": 2}})");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("'moe_tp_experts', 'packed_colwise'"), std::string::npos)
      << refused.error().message;
}

// compile.deepcompile with "autotp" in compile.passes is tp_compile.py, which refuses what
// eager AutoTP runs: tp_overlap_comm (defer_collectives_to_compiler raises).
TEST(PipelineForConfigTest, TheAutoTpCompilePassRefusesWhatEagerAutoTpRuns) {
  const std::string overlap = R"({"tensor_parallel": {"autotp_size": 2, "tp_overlap_comm": true}})";
  EXPECT_TRUE(RunFromConfig("qwen3-8b.json", overlap).ok());
  const std::string compiled = R"({"tensor_parallel": {"autotp_size": 2, "tp_overlap_comm": true},
                                   "compile": {"deepcompile": true, "passes": ["autotp"]}})";
  auto refused = RunFromConfig("qwen3-8b.json", compiled);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("does not support tp_overlap_comm"), std::string::npos)
      << refused.error().message;
}

// Under DeepCompile every ZeRO-3 parameter is non-persistent (compile/init_z3.py init_z3 sets
// p.ds_persist = False), so the norms below stage3_param_persistence_threshold are gathered too;
// eager ZeRO-3 keeps them whole on every rank.
TEST(PipelineForConfigTest, DeepCompileZero3GathersEveryParameter) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  auto gathers = [&](const std::string& text) {
    const Json config = Json::parse(text);
    auto pipeline = PipelineForConfig({.model = &model, .config = &config, .forced = std::vector<std::string>{"zero"}});
    EXPECT_TRUE(pipeline.ok());
    auto g = graph::BuildModelGraph(model);
    EXPECT_TRUE(pipeline->Run(*g).ok());
    return CountOp(*g, graph::ops::kAllGather, "");
  };
  const int eager = gathers(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100000}})");
  const int compiled = gathers(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100000},
                                   "compile": {"deepcompile": true}})");
  const int all = gathers(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}})");
  EXPECT_LT(eager, all);
  EXPECT_EQ(compiled, all);
}

// DeepCompile's ZeRO has one communicator over engine.data_parallel_group (compile/init_z1_and_2.py,
// init_z3.py: dc.init): AutoEP's routed experts reduce over dp with everything else, where eager
// ZeRO reduces them over edp.
TEST(PipelineForConfigTest, DeepCompileReducesRoutedExpertsOverTheOneDataParallelGroup) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("mixtral-8x7b.json");
  auto expert_group = [&](const std::string& text) {
    const Json config = Json::parse(text);
    auto pipeline = PipelineForConfig({.model = &model, .config = &config});
    EXPECT_TRUE(pipeline.ok());
    auto g = graph::BuildModelGraph(model);
    EXPECT_TRUE(pipeline->Run(*g).ok());
    const graph::Node* n = g->Find("reduce_grad_layers_0_block_sparse_moe_experts");
    return n == nullptr ? std::string("none") : n->group;
  };
  const std::string autoep = R"("expert_parallel": {"enabled": true, "autoep_size": 4}, "zero_optimization": {"stage": 1})";
  EXPECT_EQ(expert_group("{" + autoep + "}"), "edp");
  EXPECT_EQ(expert_group("{" + autoep + R"(, "compile": {"deepcompile": true}})"), "dp");
}

// One verdict: over every sample model, validate reports an AutoTP error exactly when the pass
// refuses the graph (DeepSpeed's own refusals: transformers' plans, gpt2) or draws it with notes
// (mismatches DeepSpeed does not check but that fail or mislead at run time: pairing, gpt_oss's
// sinks); the rules for silently wrong numbers (q/k norms without grad_allreduce, an equal split
// of a GQA qkv) are left out.
TEST(PipelineForConfigTest, ValidateAndTheAutoTpPassAgreeOnEverySample) {
  const std::vector<std::string> configs = {
      R"({"train_micro_batch_size_per_gpu": 1, "tensor_parallel": {"autotp_size": 2}})",
      R"({"train_micro_batch_size_per_gpu": 1, "tensor_parallel": {"autotp_size": 2, "preset_model": "deepseek_v2"}})",
      R"({"train_micro_batch_size_per_gpu": 1, "tensor_parallel": {"autotp_size": 2, "preset_model": "llama"}})",
      R"({"train_micro_batch_size_per_gpu": 1, "tensor_parallel": {"autotp_size": 2, "partition_config": {"layer_specs": [
          {"patterns": [".*\\.o_proj\\.weight$"], "partition_type": "row"},
          {"patterns": [".*\\.[qkv]_proj\\.weight$"], "partition_type": "column"}]}}})"};
  int agreed_refusals = 0;
  for (const char* file : {"llama-3-8b.json", "qwen3-8b.json", "mixtral-8x7b.json",
                           "qwen3-30b-a3b.json", "qwen2-moe-a2.7b.json", "deepseek-v3.json",
                           "deepseek-v2-lite.json", "phi-3-mini-4k.json", "gemma-2-9b-it.json",
                           "gpt-neox-20b.json", "pythia-160m.json", "bloom-176b.json", "gpt2.json",
                           "gpt-oss-20b.json", "qwen3-next-80b-a3b-thinking.json",
                           "llama-4-scout-17b-16e.json", "qwen3.5-27b.json", "tiny-llama.json"}) {
    const ModelSpec model = dsp::testing::ParsePresetOrDie(file);
    ASSERT_EQ(model.num_key_value_heads % 2, 0) << file;
    for (const std::string& text : configs) {
      ValidateOptions o = dsp::testing::World(4);
      o.model = &model;
      FileReport report = dsp::testing::Validate(text, o);
      bool tp_error = false;
      for (const auto& d : report.diagnostics) {
        // Errors for numbers DeepSpeed gets silently wrong, not for layouts it refuses or cannot
        // shard: the rewrite itself is drawable (visualize stops on validate's error first).
        if (d.rule_id == "tp-qk-norm-grad-allreduce" || d.rule_id == "tp-fused-qkv-unequal-split") continue;
        tp_error = tp_error || (d.severity == Severity::kError && d.rule_id.starts_with("tp-"));
      }
      std::vector<std::string> notes;
      auto g = RunFromConfig(file, text, &notes);
      const bool pass_objects = !g.ok() || !notes.empty();
      EXPECT_EQ(tp_error, pass_objects) << file << " with " << text << "\nvalidate:\n"
                                        << dsp::testing::Dump(report) << "pass: "
                                        << (g.ok() ? "ok" : g.error().message)
                                        << (notes.empty() ? "" : " notes: " + notes.front());
      if (tp_error && pass_objects) ++agreed_refusals;
    }
  }
  EXPECT_GT(agreed_refusals, 10);  // the comparison covers refusals, not only clean plans
}

// One verdict for AutoEP's detection (core/rules/autoep_detection.h): over every MoE sample,
// validate reports ep-preset-no-moe or ep-detection-ambiguous exactly when the pass refuses
// (DeepSpeed raises), and ep-moe-not-detected exactly when the pass leaves the experts local
// (DeepSpeed logs and trains without expert parallelism).
TEST(PipelineForConfigTest, ValidateAndTheAutoEpPassAgreeOnEverySample) {
  const std::string on = R"({"train_micro_batch_size_per_gpu": 1, "expert_parallel": {"enabled": true, "autoep_size": 2)";
  const std::vector<std::string> configs = {
      on + "}}", on + R"(, "preset_model": "qwen3_moe"}})", on + R"(, "preset_model": "deepseek_v3"}})",
      on + R"(, "router_pattern": "gate"}})", on + R"(, "moe_layer_pattern": "model\\.layers\\.\\d+\\.mlp"}})"};
  int refused = 0, local = 0, dispatched = 0;
  for (const char* file : {"mixtral-8x7b.json", "qwen3-30b-a3b.json", "qwen2-moe-a2.7b.json",
                           "deepseek-v2-lite.json", "gpt-oss-20b.json", "glm-4.5-air.json",
                           "qwen3-next-80b-a3b-thinking.json", "llama-4-scout-17b-16e.json",
                           "qwen3-vl-30b-a3b.json", "tiny-moe.json"}) {
    const ModelSpec model = dsp::testing::ParsePresetOrDie(file);
    for (const std::string& text : configs) {
      SCOPED_TRACE(std::string(file) + " with " + text);
      ValidateOptions o = dsp::testing::World(4);
      o.model = &model;
      const FileReport report = dsp::testing::Validate(text, o);
      const bool raises = dsp::testing::Find(report, "ep-preset-no-moe") != nullptr ||
                          dsp::testing::Find(report, "ep-detection-ambiguous") != nullptr;
      const bool warns = dsp::testing::Find(report, "ep-moe-not-detected") != nullptr;
      const Json config = Json::parse(text);
      PipelineRequest r{.model = &model, .config = &config, .forced = std::vector<std::string>{"autoep"}};
      auto pipeline = PipelineForConfig(r);
      ASSERT_TRUE(pipeline.ok()) << pipeline.error().message;
      auto g = graph::BuildModelGraph(model);
      ASSERT_TRUE(g.ok()) << g.error().message;
      auto ran = pipeline->Run(*g);
      const bool kept_local = ran.ok() && CountOp(*g, graph::ops::kDispatch, "") == 0;
      EXPECT_EQ(raises, !ran.ok()) << dsp::testing::Dump(report)
                                   << (ran.ok() ? "" : ran.error().message);
      EXPECT_EQ(warns, kept_local) << dsp::testing::Dump(report);
      refused += !ran.ok();
      local += kept_local;
      dispatched += ran.ok() && !kept_local;
    }
  }
  // Each verdict occurs: the comparison is not only over clean plans.
  EXPECT_GT(refused, 3);
  // gpt_oss, llama4 and Qwen3-VL-MoE without patterns or preset, and the last two with a
  // router_pattern, which names the router child, not the block.
  EXPECT_EQ(local, 5);
  EXPECT_GT(dispatched, 20);
}

}  // namespace
}  // namespace dsp::sim::passes
