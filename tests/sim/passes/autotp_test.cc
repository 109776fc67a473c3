// SPDX-License-Identifier: Apache-2.0
// AutoTP: text-in/text-out on tiny-llama, tp=1, layer_specs (first match wins, model_types,
// preset merge), every rejection, and one copy_to_tp / reduce_from_tp per attention and MLP.
#include "sim/passes/autotp.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/graph/builder.h"
#include "sim/graph/text_format.h"
#include "sim/graph/verifier.h"
#include "tests/sim/passes/pass_test_util.h"

namespace dsp::sim::passes {
namespace {

using testing::BuildPreset;
using testing::CountOp;
using testing::ModuleLines;

AutoTpOptions Options(const std::string& file, int64_t tp) {
  return AutoTpOptions::ForModel(dsp::testing::ParsePresetOrDie(file), tp);
}

graph::Graph RunOk(const std::string& file, AutoTpOptions options) {
  graph::Graph g = BuildPreset(file);
  AutoTpPass pass(std::move(options));
  Result<bool> r = pass.Run(g);
  EXPECT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.ok() && *r);
  EXPECT_TRUE(graph::VerifyGraph(g).ok());
  return g;
}

TEST(AutoTpTest, TinyLlamaLayerPrintsAsExpected) {
  graph::Graph g = RunOk("tiny-llama.json", Options("tiny-llama.json", 2));
  const std::string expected = R"(%layers_0_input_layernorm = rms_norm(%embed_tokens) {module="model.layers.0.input_layernorm", param="model.layers.0.input_layernorm.weight", param_shape=[H], shape=[B, S, H], group=""}
%layers_0_self_attn_q_proj_copy_to_tp = copy_to_tp(%layers_0_input_layernorm) {module="model.layers.0.self_attn", param="", shape=[B, S, H], group="tp"}
%layers_0_self_attn_q_proj = linear(%layers_0_self_attn_q_proj_copy_to_tp) {module="model.layers.0.self_attn.q_proj", param="model.layers.0.self_attn.q_proj.weight", param_shape=[N*D/T, H], shape=[B, S, N*D/T], group=""}
%layers_0_self_attn_k_proj = linear(%layers_0_self_attn_q_proj_copy_to_tp) {module="model.layers.0.self_attn.k_proj", param="model.layers.0.self_attn.k_proj.weight", param_shape=[G*D/T, H], shape=[B, S, G*D/T], group=""}
%layers_0_self_attn_v_proj = linear(%layers_0_self_attn_q_proj_copy_to_tp) {module="model.layers.0.self_attn.v_proj", param="model.layers.0.self_attn.v_proj.weight", param_shape=[G*D/T, H], shape=[B, S, G*D/T], group=""}
%layers_0_self_attn_rotary_q = rotary(%layers_0_self_attn_q_proj, %position_ids) {module="model.layers.0.self_attn", param="", shape=[B, N/T, S, D], group=""}
%layers_0_self_attn_rotary_k = rotary(%layers_0_self_attn_k_proj, %position_ids) {module="model.layers.0.self_attn", param="", shape=[B, G/T, S, D], group=""}
%layers_0_self_attn_sdpa = sdpa(%layers_0_self_attn_rotary_q, %layers_0_self_attn_rotary_k, %layers_0_self_attn_v_proj, %attention_mask) {module="model.layers.0.self_attn", param="", shape=[B, N/T, S, D], group=""}
%layers_0_self_attn_o_proj = linear(%layers_0_self_attn_sdpa) {module="model.layers.0.self_attn.o_proj", param="model.layers.0.self_attn.o_proj.weight", param_shape=[H, N*D/T], shape=[B, S, H], group=""}
%layers_0_self_attn_o_proj_reduce_from_tp = reduce_from_tp(%layers_0_self_attn_o_proj) {module="model.layers.0.self_attn", param="", shape=[B, S, H], group="tp"}
%layers_0_residual_attn = add(%embed_tokens, %layers_0_self_attn_o_proj_reduce_from_tp) {module="model.layers.0", param="", shape=[B, S, H], group=""}
%layers_0_post_attention_layernorm = rms_norm(%layers_0_residual_attn) {module="model.layers.0.post_attention_layernorm", param="model.layers.0.post_attention_layernorm.weight", param_shape=[H], shape=[B, S, H], group=""}
%layers_0_mlp_gate_proj_copy_to_tp = copy_to_tp(%layers_0_post_attention_layernorm) {module="model.layers.0.mlp", param="", shape=[B, S, H], group="tp"}
%layers_0_mlp_gate_proj = linear(%layers_0_mlp_gate_proj_copy_to_tp) {module="model.layers.0.mlp.gate_proj", param="model.layers.0.mlp.gate_proj.weight", param_shape=[F/T, H], shape=[B, S, F/T], group=""}
%layers_0_mlp_up_proj = linear(%layers_0_mlp_gate_proj_copy_to_tp) {module="model.layers.0.mlp.up_proj", param="model.layers.0.mlp.up_proj.weight", param_shape=[F/T, H], shape=[B, S, F/T], group=""}
%layers_0_mlp_act_fn = silu(%layers_0_mlp_gate_proj) {module="model.layers.0.mlp", param="", shape=[B, S, F/T], group=""}
%layers_0_mlp_mul = mul(%layers_0_mlp_act_fn, %layers_0_mlp_up_proj) {module="model.layers.0.mlp", param="", shape=[B, S, F/T], group=""}
%layers_0_mlp_down_proj = linear(%layers_0_mlp_mul) {module="model.layers.0.mlp.down_proj", param="model.layers.0.mlp.down_proj.weight", param_shape=[H, F/T], shape=[B, S, H], group=""}
%layers_0_mlp_down_proj_reduce_from_tp = reduce_from_tp(%layers_0_mlp_down_proj) {module="model.layers.0.mlp", param="", shape=[B, S, H], group="tp"}
%layers_0_residual_mlp = add(%layers_0_residual_attn, %layers_0_mlp_down_proj_reduce_from_tp) {module="model.layers.0", param="", shape=[B, S, H], group=""}
)";
  EXPECT_EQ(ModuleLines(g, "model.layers.0"), expected);
  // lm_head stays whole: it is excluded from the default plan.
  EXPECT_EQ(PrintNode(*g.Find("lm_head")),
            R"(%lm_head = linear(%norm) {module="lm_head", param="lm_head.weight", param_shape=[V, H], shape=[B, S, V], group=""})");
}

TEST(AutoTpTest, TpOneChangesNothing) {
  for (int64_t tp : {0, 1}) {
    graph::Graph g = BuildPreset("tiny-llama.json");
    const std::string before = graph::PrintGraph(g);
    AutoTpPass pass(Options("tiny-llama.json", tp));
    Result<bool> r = pass.Run(g);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(*r);
    EXPECT_EQ(graph::PrintGraph(g), before);
  }
}

TEST(AutoTpTest, OneCopyAndOneReducePerAttentionAndMlp) {
  for (const char* file : {"tiny-llama.json", "llama-3-8b.json", "mixtral-8x7b.json",
                           "tiny-moe.json", "qwen3-30b-a3b.json"}) {
    SCOPED_TRACE(file);
    const ModelSpec spec = dsp::testing::ParsePresetOrDie(file);
    graph::Graph g = RunOk(file, Options(file, 2));
    for (int64_t l = 0; l < spec.num_hidden_layers; ++l) {
      const std::string layer = "model.layers." + std::to_string(l) + ".";
      EXPECT_EQ(CountOp(g, graph::ops::kCopyToTp, layer + "self_attn"), 1) << layer;
      EXPECT_EQ(CountOp(g, graph::ops::kReduceFromTp, layer + "self_attn"), 1) << layer;
      EXPECT_EQ(CountOp(g, graph::ops::kCopyToTp, layer), 2) << layer;
      EXPECT_EQ(CountOp(g, graph::ops::kReduceFromTp, layer), 2) << layer;
    }
  }
}

TEST(AutoTpTest, MixtralExpertsArePairedAsOneUnit) {
  graph::Graph g = RunOk("mixtral-8x7b.json", Options("mixtral-8x7b.json", 2));
  const std::string expected = R"(%layers_0_block_sparse_moe_gate = router(%layers_0_post_attention_layernorm) {module="model.layers.0.block_sparse_moe.gate", param="model.layers.0.block_sparse_moe.gate.weight", param_shape=[E, H], shape=[B*S, E], group=""}
%layers_0_block_sparse_moe_top_k = top_k(%layers_0_block_sparse_moe_gate) {module="model.layers.0.block_sparse_moe", param="", shape=[B*S, K], group=""}
%layers_0_block_sparse_moe_experts_copy_to_tp = copy_to_tp(%layers_0_post_attention_layernorm) {module="model.layers.0.block_sparse_moe", param="", shape=[B, S, H], group="tp"}
%layers_0_block_sparse_moe_experts = experts(%layers_0_block_sparse_moe_experts_copy_to_tp, %layers_0_block_sparse_moe_top_k) {module="model.layers.0.block_sparse_moe.experts", param="model.layers.0.block_sparse_moe.experts.*", param_shape=[E, 3, FE/T, H], shape=[B, S, H], group=""}
%layers_0_block_sparse_moe_experts_reduce_from_tp = reduce_from_tp(%layers_0_block_sparse_moe_experts) {module="model.layers.0.block_sparse_moe", param="", shape=[B, S, H], group="tp"}
)";
  EXPECT_EQ(ModuleLines(g, "model.layers.0.block_sparse_moe"), expected);
}

TEST(AutoTpTest, LayerSpecsFirstMatchWinsAndModelTypesFilter) {
  AutoTpOptions o = Options("tiny-llama.json", 2);
  // The first spec would make every projection replicated, but only for mistral.
  o.layer_specs = {
      {TpPartition::kSkip, {".*"}, std::vector<std::string>{"mistral"}},
      {TpPartition::kRow, {R"(.*\.(o_proj|down_proj)\.weight$)"}, std::nullopt},
      {TpPartition::kColumn, {R"(.*\.(q|k|v|gate|up)_proj\.weight$)"}, std::nullopt},
  };
  graph::Graph with_specs = RunOk("tiny-llama.json", o);
  graph::Graph with_default = RunOk("tiny-llama.json", Options("tiny-llama.json", 2));
  EXPECT_EQ(graph::PrintGraph(with_specs), graph::PrintGraph(with_default));
}

TEST(AutoTpTest, PresetMergedWhenUseDefaultSpecs) {
  AutoTpOptions o = Options("tiny-llama.json", 2);
  o.layer_specs = {{TpPartition::kSkip, {R"(lm_head)"}, std::nullopt}};
  o.use_default_specs = true;
  o.preset = "llama";
  graph::Graph g = RunOk("tiny-llama.json", o);
  EXPECT_EQ(graph::PrintGraph(g), graph::PrintGraph(RunOk("tiny-llama.json",
                                                          Options("tiny-llama.json", 2))));
}

void ExpectRejected(AutoTpOptions o, const std::string& fragment,
                    const std::string& file = "tiny-llama.json") {
  graph::Graph g = BuildPreset(file);
  const std::string before = graph::PrintGraph(g);
  AutoTpPass pass(std::move(o));
  Result<bool> r = pass.Run(g);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(fragment), std::string::npos) << r.error().message;
  EXPECT_EQ(graph::PrintGraph(g), before) << "a rejected pass must not rewrite partially";
}

// Only DeepSpeed's own refusals stop the pass: a negative size, a transformers plan
// TPPlanConverter rejects, and under the compile pass the layers tp_compile.py cannot rewrite.
TEST(AutoTpTest, Rejections) {
  ExpectRejected(Options("tiny-llama.json", -1), "must be >= 0");

  AutoTpOptions refused = Options("tiny-llama.json", 2);
  refused.refusal = "DeepSpeed rejects this plan";
  ExpectRejected(refused, "DeepSpeed rejects this plan");

  // tp_compile.py: UNSUPPORTED_LAYERS = (LmHeadLinearAllreduce,), and
  // defer_collectives_to_compiler raises for it and for tp_overlap_comm, before any rewrite.
  AutoTpOptions compiled_head = Options("tiny-llama.json", 2);
  compiled_head.layer_specs = {{TpPartition::kRow, {"lm_head"}, std::nullopt},
                               {TpPartition::kColumn, {R"(.*\.(q|k|v)_proj\.)"}, std::nullopt},
                               {TpPartition::kRow, {R"(.*\.o_proj\.)"}, std::nullopt}};
  compiled_head.compiled = true;
  ExpectRejected(compiled_head, "cannot rewrite 'lm_head' (LmHeadLinearAllreduce");
  AutoTpOptions overlap = Options("tiny-llama.json", 2);
  overlap.compiled = true;
  overlap.tp_overlap_comm = true;
  ExpectRejected(overlap, "does not support tp_overlap_comm");
  overlap.compiled = false;  // eager AutoTP overlaps its own all-reduces: nothing to refuse
  RunOk("tiny-llama.json", overlap);
}

// What DeepSpeed does not check is drawn as built, with notes (validate's tp-missing-*-partner
// errors say it before a launch): a column without a row partner stays split where it is read.
TEST(AutoTpTest, PairingMismatchesAreDrawnWithNotes) {
  auto notes_of = [](AutoTpOptions o) {
    graph::Graph g = BuildPreset("tiny-llama.json");
    AutoTpPass pass(std::move(o));
    Result<bool> r = pass.Run(g);
    EXPECT_TRUE(r.ok()) << r.error().message;
    std::string all;
    for (const std::string& n : pass.notes()) all += n + "\n";
    return all;
  };
  AutoTpOptions no_row = Options("tiny-llama.json", 2);
  no_row.layer_specs = {{TpPartition::kColumn, {R"(.*\.q_proj\.weight)"}, std::nullopt}};
  EXPECT_NE(notes_of(no_row).find("column-parallel outputs read by something other than a "
                                  "row-parallel linear (they stay split there): "
                                  "%layers_0_self_attn_q_proj, %layers_1_self_attn_q_proj"),
            std::string::npos);
  AutoTpOptions no_column = Options("tiny-llama.json", 2);
  no_column.layer_specs = {{TpPartition::kRow, {R"(.*\.down_proj\.weight)"}, std::nullopt}};
  EXPECT_NE(notes_of(no_column).find("row-parallel linears without a column-parallel input"),
            std::string::npos);
  AutoTpOptions half_mlp = Options("tiny-llama.json", 2);
  half_mlp.layer_specs = {{TpPartition::kColumn, {R"(.*\.gate_proj\.)"}, std::nullopt},
                          {TpPartition::kRow, {R"(.*\.down_proj\.)"}, std::nullopt}};
  EXPECT_NE(notes_of(half_mlp).find("elementwise ops mixing split and whole tensors: %layers_0_mlp_mul"),
            std::string::npos);
  AutoTpOptions mixed_experts = Options("mixtral-8x7b.json", 2);
  mixed_experts.layer_specs = {{TpPartition::kColumn, {R"(.*\.w[123]\.)"}, std::nullopt}};
  graph::Graph g = BuildPreset("mixtral-8x7b.json");
  AutoTpPass pass(mixed_experts);
  ASSERT_TRUE(pass.Run(g).ok());
  ASSERT_FALSE(pass.notes().empty());
  EXPECT_NE(pass.notes().back().find("experts with mixed specs, left replicated: "
                                     "%layers_0_block_sparse_moe_experts"),
            std::string::npos);
  // A well-paired plan has no notes.
  EXPECT_EQ(notes_of(Options("tiny-llama.json", 2)), "");
}

// Uneven key-value heads: module_inject/tp_shard.py get_shard_size gives tp rank r
// G//T + (r < G%T) key-value heads, each with its N/G query heads. The graph is rank 0's, the
// busiest: Llama-3-8B (32 heads, 8 kv heads) on tp=3 gives rank 0 3 kv heads and 12 query heads.
TEST(AutoTpTest, UnevenHeadsDrawTheBusiestRank) {
  const ModelSpec llama = dsp::testing::ParsePresetOrDie("llama-3-8b.json");
  graph::Graph g = RunOk("llama-3-8b.json", Options("llama-3-8b.json", 3));
  EXPECT_EQ(graph::ShapeToString(*g.Find("layers_0_self_attn_q_proj")->param_shape), "[N0*D, H]");
  EXPECT_EQ(graph::ShapeToString(*g.Find("layers_0_self_attn_k_proj")->param_shape), "[G0*D, H]");
  EXPECT_EQ(graph::ShapeToString(*g.Find("layers_0_self_attn_o_proj")->param_shape), "[H, N0*D]");
  EXPECT_EQ(graph::ShapeToString(*g.Find("layers_0_self_attn_sdpa")->shape), "[B, N0, S, D]");
  // MLP widths split near-evenly by get_shard_size's grain path: F/T.
  EXPECT_EQ(graph::ShapeToString(*g.Find("layers_0_mlp_down_proj")->param_shape), "[H, F/T]");
  graph::SymbolValues values = graph::ModelSymbolValues(llama, 1, 8);
  graph::BindTensorParallelHeads(llama, 3, values);
  EXPECT_EQ(values["G0"], 3);
  EXPECT_EQ(values["N0"], 12);
  EXPECT_EQ(*g.Find("layers_0_self_attn_q_proj")->param_shape->front().Evaluate(values), 12 * 128);
  // tp above the kv heads (tp-exceeds-kv-heads): rank 0 holds one kv head and its query group.
  graph::SymbolValues wide;
  graph::BindTensorParallelHeads(llama, 16, wide);
  EXPECT_EQ(wide["G0"], 1);
  EXPECT_EQ(wide["N0"], 4);
  // Even heads keep the N/T form.
  graph::Graph even = RunOk("llama-3-8b.json", Options("llama-3-8b.json", 4));
  EXPECT_EQ(graph::ShapeToString(*even.Find("layers_0_self_attn_q_proj")->param_shape), "[N*D/T, H]");
}

// A row spec on lm_head makes DeepSpeed build LmHeadLinearAllreduce (auto_tp.py
// _create_row_parallel_layer): its forward slices the rank's H/T of the hidden states itself and
// all-reduces the [B, S, V] logits (module_inject/layers.py LmHeadLinearAllreduce.forward).
TEST(AutoTpTest, RowLmHeadIsLmHeadLinearAllreduce) {
  AutoTpOptions o = Options("tiny-llama.json", 2);
  o.layer_specs = {{TpPartition::kRow, {"lm_head"}, std::nullopt},
                   {TpPartition::kColumn, {R"(.*\.(q|k|v|gate|up)_proj\.)"}, std::nullopt},
                   {TpPartition::kRow, {R"(.*\.(o|down)_proj\.)"}, std::nullopt}};
  graph::Graph g = RunOk("tiny-llama.json", o);
  const graph::Node* head = g.Find("lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(graph::ShapeToString(*head->param_shape), "[V, H/T]");
  EXPECT_EQ(head->args[0]->op, graph::ops::kSplit);
  EXPECT_EQ(graph::ShapeToString(*head->args[0]->shape), "[B, S, H/T]");
  ASSERT_EQ(head->users.size(), 1u);
  EXPECT_EQ(head->users.front()->op, graph::ops::kReduceFromTp);
  EXPECT_EQ(graph::ShapeToString(*head->users.front()->shape), "[B, S, V]");
}

// gather_output (LinearLayer(gather_output=True), module_inject/layers.py): the weight keeps
// out/T rows, the output is all-gathered over tp, and the readers see whole features, so no row
// partner is needed. A gathered lm_head is what transformers' plan asks for
// ("lm_head": "colwise_gather_output", DeepSpeed PR #8146).
TEST(AutoTpPassTest, GatherOutputShardsTheWeightAndGathersTheOutput) {
  graph::Graph g = BuildPreset("tiny-llama.json");
  AutoTpOptions o = Options("tiny-llama.json", 2);
  TpLayerSpec gathered{TpPartition::kColumn, {R"(.*\.mlp\.(gate|up|down)_proj\.weight$)", "lm_head"},
                       std::nullopt};
  gathered.gather_output = true;
  o.layer_specs = {gathered};
  Result<bool> r = AutoTpPass(o).Run(g);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(*r);
  ASSERT_TRUE(graph::VerifyGraph(g).ok());
  const graph::Node* up = g.Find("layers_0_mlp_up_proj");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(graph::ShapeToString(*up->param_shape), "[F/T, H]");
  // The column computes its F/T features (module_inject/layers.py LinearLayer.forward: the local
  // matmul, then gather_from_tp_region); the gather restores all F for the next reader.
  EXPECT_EQ(graph::ShapeToString(*up->shape), "[B, S, F/T]");
  ASSERT_EQ(up->users.size(), 1u);
  EXPECT_EQ(graph::ShapeToString(*up->users.front()->shape), "[B, S, F]");
  EXPECT_EQ(CountOp(g, graph::ops::kGatherFromTp, "model.layers.0.mlp"), 3);
  EXPECT_EQ(CountOp(g, graph::ops::kReduceFromTp, "model.layers.0"), 0);
  // One copy_to_tp for gate and up (they share their input), one for down.
  EXPECT_EQ(CountOp(g, graph::ops::kCopyToTp, "model.layers.0.mlp"), 2);
  const graph::Node* head = g.Find("lm_head_gather_from_tp");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(graph::ShapeToString(*head->shape), "[B, S, V]");
  EXPECT_EQ(graph::ShapeToString(*g.Find("lm_head")->param_shape), "[V/T, H]");
}

}  // namespace
}  // namespace dsp::sim::passes
