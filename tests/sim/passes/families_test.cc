// SPDX-License-Identifier: Apache-2.0
// The passes on the 2026 families' graphs: AutoTP with DeepSpeed's deepseek_v2, phi3 and bloom
// presets (module_inject/autotp_config.py AutoTPPresets), AutoSP on MLA and on the hybrid
// Gated DeltaNet models (sp_compile.py rewrites sdpa only), AutoEP's detection (auto_ep.py
// looks for `mlp` with a `gate` router), and the ZeRO pass over the fused and MLA parameters.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/graph/text_format.h"
#include "sim/graph/verifier.h"
#include "sim/passes/autoep.h"
#include "sim/passes/autosp.h"
#include "sim/passes/autotp.h"
#include "sim/passes/zero.h"
#include "tests/sim/passes/pass_test_util.h"

namespace dsp::sim::passes {
namespace {

using testing::BuildPreset;
using testing::CountOp;

ModelSpec Spec(const std::string& file) { return dsp::testing::ParsePresetOrDie(file); }

std::string ShapeOf(const graph::Graph& g, const std::string& name) {
  const graph::Node* n = g.Find(name);
  EXPECT_NE(n, nullptr) << name;
  return n != nullptr && n->shape ? graph::ShapeToString(*n->shape) : "";
}

std::string ParamShapeOf(const graph::Graph& g, const std::string& name) {
  const graph::Node* n = g.Find(name);
  EXPECT_NE(n, nullptr) << name;
  return n != nullptr && n->param_shape ? graph::ShapeToString(*n->param_shape) : "";
}

Result<bool> RunTp(graph::Graph& g, const std::string& file, const std::string& preset, int64_t tp,
                   std::string* notes = nullptr) {
  AutoTpOptions o = AutoTpOptions::ForModel(Spec(file), tp);
  o.use_default_specs = true;
  o.preset = preset;
  AutoTpPass pass(std::move(o));
  Result<bool> r = pass.Run(g);
  if (notes != nullptr) {
    for (const std::string& n : pass.notes()) *notes += n + "\n";
  }
  return r;
}

// Runs the pass and returns its notes, one per line (the pass must succeed).
std::string NotesOfRun(graph::Graph& g, AutoTpOptions o) {
  AutoTpPass pass(std::move(o));
  Result<bool> r = pass.Run(g);
  EXPECT_TRUE(r.ok()) << r.error().message;
  std::string notes;
  for (const std::string& n : pass.notes()) notes += n + "\n";
  return notes;
}

// AutoTPPresets.deepseek_v2: q_b_proj and kv_b_proj column, o_proj row, the down projections
// q_a_proj and kv_a_proj_with_mqa skipped. The latent path stays whole; the per-head up
// projections, their splits, the concatenated q/k and sdpa are N/T; k_pe keeps its single head.
TEST(PassesOnFamiliesTest, AutoTpDeepSeekV3PresetSplitsHeadsAfterTheLatent) {
  graph::Graph g = BuildPreset("deepseek-v3.json");
  Result<bool> r = RunTp(g, "deepseek-v3.json", "deepseek_v2", 8);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(*r);
  ASSERT_TRUE(graph::VerifyGraph(g).ok());
  EXPECT_EQ(ParamShapeOf(g, "layers_3_self_attn_q_a_proj"), "[QL, H]");
  EXPECT_EQ(ParamShapeOf(g, "layers_3_self_attn_kv_a_proj_with_mqa"), "[KLR, H]");
  EXPECT_EQ(ParamShapeOf(g, "layers_3_self_attn_q_b_proj"), "[N*DQ/T, QL]");
  EXPECT_EQ(ParamShapeOf(g, "layers_3_self_attn_kv_b_proj"), "[N*DKV/T, KL]");
  EXPECT_EQ(ShapeOf(g, "layers_3_self_attn_k_pe"), "[B, 1, S, DR]");
  EXPECT_EQ(ShapeOf(g, "layers_3_self_attn_k_cat"), "[B, N/T, S, DQ]");
  EXPECT_EQ(ShapeOf(g, "layers_3_self_attn_sdpa"), "[B, N/T, S, DV]");
  EXPECT_EQ(ParamShapeOf(g, "layers_3_self_attn_o_proj"), "[H, N*DV/T]");
  // copy_to_tp before q_b_proj and before kv_b_proj (their inputs are the two latents), one
  // reduce_from_tp after o_proj.
  EXPECT_EQ(CountOp(g, graph::ops::kCopyToTp, "model.layers.3.self_attn"), 2);
  EXPECT_EQ(CountOp(g, graph::ops::kReduceFromTp, "model.layers.3.self_attn"), 1);
  // The preset's expert and shared-expert rows split every expert's width.
  EXPECT_EQ(ParamShapeOf(g, "layers_3_mlp_experts"), "[E, 3, FE/T, H]");
  EXPECT_EQ(ParamShapeOf(g, "layers_3_mlp_shared_experts_down_proj"), "[H, FS/T]");
}

// DeepSeek-V2-Lite has no q_lora_rank: its plain q_proj is not in the deepseek_v2 preset, so q
// keeps all N heads while kv_b_proj splits k and v to N/T. DeepSpeed does not check this
// (tp_compile.py and auto_tp.py wrap each matched linear on its own); the pass draws it as built
// and says what will fail.
TEST(PassesOnFamiliesTest, AutoTpDeepSeekV2PresetOnV2LiteMismatchesHeads) {
  graph::Graph g = BuildPreset("deepseek-v2-lite.json");
  std::string notes;
  Result<bool> r = RunTp(g, "deepseek-v2-lite.json", "deepseek_v2", 2, &notes);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NE(notes.find("attention reading split and whole heads"), std::string::npos) << notes;
  EXPECT_NE(notes.find("%layers_0_self_attn_sdpa"), std::string::npos);
}

// AutoTPPresets.phi3: qkv_proj and gate_up_proj column (with the (3, -1) and (2, -1) sub-param
// shapes), o_proj and down_proj row. Every slice of the fused outputs is split by T.
TEST(PassesOnFamiliesTest, AutoTpPhi3PresetSplitsEveryFusedSlice) {
  graph::Graph g = BuildPreset("phi-3-mini-4k.json");
  Result<bool> r = RunTp(g, "phi-3-mini-4k.json", "phi3", 4);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(ParamShapeOf(g, "layers_0_self_attn_qkv_proj"), "[3*N*D/T, H]");
  EXPECT_EQ(ShapeOf(g, "layers_0_self_attn_v"), "[B, S, G*D/T]");
  EXPECT_EQ(ShapeOf(g, "layers_0_self_attn_rotary_q"), "[B, N/T, S, D]");
  EXPECT_EQ(ParamShapeOf(g, "layers_0_mlp_gate_up_proj"), "[2*F/T, H]");
  EXPECT_EQ(ShapeOf(g, "layers_0_mlp_up"), "[B, S, F/T]");
  EXPECT_EQ(ParamShapeOf(g, "layers_0_mlp_down_proj"), "[H, F/T]");
  EXPECT_EQ(CountOp(g, graph::ops::kReduceFromTp, "model.layers.0."), 2);
}

// AutoTPPresets.bloom: query_key_value and dense_h_to_4h column, dense and dense_4h_to_h row.
TEST(PassesOnFamiliesTest, AutoTpBloomPreset) {
  graph::Graph g = BuildPreset("bloom-176b.json");
  Result<bool> r = RunTp(g, "bloom-176b.json", "bloom", 8);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(ShapeOf(g, "h_0_self_attention_q"), "[B, N/T, S, D]");
  EXPECT_EQ(ParamShapeOf(g, "h_0_self_attention_dense"), "[H, N*D/T]");
  EXPECT_EQ(ShapeOf(g, "h_0_mlp_act_fn"), "[B, S, F/T]");
  EXPECT_EQ(CountOp(g, graph::ops::kCopyToTp, "transformer.h.0."), 2);
}

// Without a preset, transformers' default plan names no fused projection: AutoTP has nothing to
// pair with phi3's o_proj / down_proj rows. DeepSpeed wraps them anyway; the pass draws them and
// notes the mismatch (validate's tp-missing-column-partner is the error).
TEST(PassesOnFamiliesTest, AutoTpDefaultPlanOnPhi3IsRefused) {
  graph::Graph g = BuildPreset("phi-3-mini-4k.json");
  const std::string notes = NotesOfRun(g, AutoTpOptions::ForModel(Spec("phi-3-mini-4k.json"), 2));
  EXPECT_NE(notes.find("row-parallel linears without a column-parallel input"), std::string::npos)
      << notes;
}

// gpt_oss's sinks are a raw [N] parameter: AutoTP (which replaces 2-D weights only) leaves it
// whole while q/k/v split, and eager_attention_forward's cat of [B, N/T, S, S] scores with
// [B, N, S, 1] sinks fails. Specs for q/k/v/o: the pass draws it and its note names the sdpa.
TEST(PassesOnFamiliesTest, AutoTpOnGptOssKeepsTheSinksWholeAndIsRefused) {
  graph::Graph g = BuildPreset("gpt-oss-20b.json");
  AutoTpOptions o = AutoTpOptions::ForModel(Spec("gpt-oss-20b.json"), 2);
  o.layer_specs = {{.partition = TpPartition::kColumn,
                    .patterns = {R"(.*\.self_attn\.(q|k|v)_proj\.weight$)"},
                    .model_types = std::nullopt},
                   {.partition = TpPartition::kRow,
                    .patterns = {R"(.*\.self_attn\.o_proj\.weight$)"},
                    .model_types = std::nullopt}};
  const std::string notes = NotesOfRun(g, std::move(o));
  EXPECT_NE(notes.find("per-head parameters AutoTP does not shard"), std::string::npos) << notes;
  EXPECT_NE(notes.find("%layers_0_self_attn_sdpa"), std::string::npos);
}

// Training AutoTP asserts on gpt2 (AutoTP.supported) and cannot split Conv1D.
TEST(PassesOnFamiliesTest, AutoTpRefusesGpt2) {
  graph::Graph g = BuildPreset("gpt2.json");
  Result<bool> r = AutoTpPass(AutoTpOptions::ForModel(Spec("gpt2.json"), 2)).Run(g);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("AutoTP does not support gpt2"), std::string::npos);
}

// Ulysses under MLA scatters the N expanded heads (after kv_b_proj), q/k of DQ and v of DV.
TEST(PassesOnFamiliesTest, AutoSpOnMlaScattersTheExpandedHeads) {
  graph::Graph g = BuildPreset("deepseek-v3.json");
  Result<bool> r = AutoSpPass(AutoSpOptions::ForModel(Spec("deepseek-v3.json"), 4)).Run(g);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(graph::VerifyGraph(g).ok());
  EXPECT_EQ(ShapeOf(g, "a2a_q_0"), "[B, N/P, S, DQ]");
  EXPECT_EQ(ShapeOf(g, "a2a_k_0"), "[B, N/P, S, DQ]");
  EXPECT_EQ(ShapeOf(g, "a2a_v_0"), "[B, N/P, S, DV]");
  EXPECT_EQ(ShapeOf(g, "a2a_o_0"), "[B, N, S/P, DV]");
  EXPECT_EQ(ShapeOf(g, "layers_0_self_attn_kv_latent"), "[B, S/P, KL]");
  EXPECT_EQ(CountOp(g, graph::ops::kAllToAll, ""), 4 * 61);
}

// sp_compile.py finds sdpa calls only: on Qwen3-Next the 12 gated-attention layers get their
// all-to-alls and the 36 Gated DeltaNet layers run the recurrence on S/P tokens, each rank its
// own slice with no state handed across (validate: sp-linear-attention).
TEST(PassesOnFamiliesTest, AutoSpLeavesGatedDeltaNetOnItsSlice) {
  graph::Graph g = BuildPreset("qwen3-next-80b-a3b-thinking.json");
  Result<bool> r =
      AutoSpPass(AutoSpOptions::ForModel(Spec("qwen3-next-80b-a3b-thinking.json"), 2)).Run(g);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(CountOp(g, graph::ops::kAllToAll, ""), 4 * 12);
  EXPECT_EQ(CountOp(g, graph::ops::kAllToAll, "model.layers.0."), 0);
  EXPECT_EQ(ShapeOf(g, "layers_0_linear_attn_delta_rule"), "[B, S/P, LV*LVD]");
}

// gpt_oss routes with `mlp.router`, llama4 keeps its MoE at `feed_forward` and Qwen3-VL-MoE under
// model.language_model.: AutoEP detects no MoE block, DeepSpeed trains without expert
// parallelism, and the pass changes nothing.
TEST(PassesOnFamiliesTest, AutoEpDetectsNothingOnGptOssLlama4AndQwen3VlMoe) {
  for (const char* file : {"gpt-oss-20b.json", "llama-4-scout-17b-16e.json", "qwen3-vl-30b-a3b.json"}) {
    SCOPED_TRACE(file);
    graph::Graph g = BuildPreset(file);
    const std::string before = graph::PrintGraph(g);
    Result<bool> r = AutoEpPass(AutoEpOptions::ForModel(Spec(file), 4, 1)).Run(g);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_FALSE(*r);
    EXPECT_EQ(graph::PrintGraph(g), before);
  }
  // With a preset_model and a router_pattern naming `router` the blocks are found and dispatched.
  graph::Graph g = BuildPreset("gpt-oss-20b.json");
  AutoEpOptions o =
      AutoEpOptions::ForModel(Spec("gpt-oss-20b.json"), 4, 1, {.preset_model = true, .router_pattern = true});
  ASSERT_TRUE(AutoEpPass(o).Run(g).ok());
  EXPECT_EQ(ShapeOf(g, "layers_0_mlp_dispatch"), "[E/EP, B*S*K*EP/E, H]");
  // A preset_model that matches nothing is DeepSpeed's ValueError.
  graph::Graph scout = BuildPreset("llama-4-scout-17b-16e.json");
  Result<bool> raised =
      AutoEpPass(AutoEpOptions::ForModel(Spec("llama-4-scout-17b-16e.json"), 4, 1, {.preset_model = true}))
          .Run(scout);
  ASSERT_FALSE(raised.ok());
  EXPECT_NE(raised.error().message.find("no MoE layers detected"), std::string::npos);
}

// GLM-4.5 and Qwen3-Next are in no preset's hf_model_types and every preset matches their blocks:
// without preset_model DeepSpeed raises (auto_ep.py _raise_if_duplicate_moe_specs), so does the
// pass; with one the experts are dispatched.
TEST(PassesOnFamiliesTest, AutoEpIsAmbiguousOnGlm45AndQwen3Next) {
  for (const char* file : {"glm-4.5-air.json", "qwen3-next-80b-a3b-thinking.json"}) {
    SCOPED_TRACE(file);
    graph::Graph g = BuildPreset(file);
    Result<bool> r = AutoEpPass(AutoEpOptions::ForModel(Spec(file), 4, 1)).Run(g);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("ambiguous"), std::string::npos);
    Result<bool> preset =
        AutoEpPass(AutoEpOptions::ForModel(Spec(file), 4, 1, {.preset_model = true})).Run(g);
    ASSERT_TRUE(preset.ok()) << preset.error().message;
    EXPECT_TRUE(*preset);
  }
}

// ZeRO-3 with dense parameters partitioned over a dp group of 8.
Result<bool> RunZero3(graph::Graph& g) {
  ZeroOptions o;
  o.stage = 3;
  o.dense = {"dp", "DP", 8};
  return ZeroPass(o).Run(g);
}

// ZeRO-3 gathers what each node reads: MLA's latent projections, DeepSeek's score-correction
// bias on top_k, Gated DeltaNet's conv and A_log.
TEST(PassesOnFamiliesTest, ZeroThreeGathersTheNewParameters) {
  for (const char* file : {"deepseek-v3.json", "qwen3-next-80b-a3b-thinking.json"}) {
    SCOPED_TRACE(file);
    graph::Graph g = BuildPreset(file);
    ASSERT_TRUE(RunZero3(g).ok());
    ASSERT_TRUE(graph::VerifyGraph(g).ok());
  }
  graph::Graph g = BuildPreset("deepseek-v3.json");
  ASSERT_TRUE(RunZero3(g).ok());
  EXPECT_EQ(ParamShapeOf(g, "allgather_layers_3_self_attn_kv_a_proj_with_mqa_weight"), "[KLR*H/DP]");
  EXPECT_EQ(ParamShapeOf(g, "allgather_layers_3_mlp_gate_e_score_correction_bias"), "[E/DP]");
}

// Gathers are named as the builder names nodes (graph::NodeNameOfPath): the base-model prefix of
// GPT-style and multimodal checkpoints is dropped, so %allgather_h_0_... sits next to %h_0_....
TEST(PassesOnFamiliesTest, ZeroThreeGathersAreNamedLikeTheirNodes) {
  for (const auto& [file, gather] :
       std::vector<std::pair<const char*, const char*>>{
           {"pythia-160m.json", "allgather_layers_0_attention_query_key_value_weight"},
           {"bloom-176b.json", "allgather_h_0_self_attention_query_key_value_weight"},
           {"llama-4-scout-17b-16e.json", "allgather_layers_0_self_attn_q_proj_weight"}}) {
    SCOPED_TRACE(file);
    graph::Graph g = BuildPreset(file);
    ASSERT_TRUE(RunZero3(g).ok());
    EXPECT_NE(g.Find(gather), nullptr);
  }
}

}  // namespace
}  // namespace dsp::sim::passes
