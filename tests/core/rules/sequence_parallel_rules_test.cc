// SPDX-License-Identifier: Apache-2.0
#include "tests/core/model/model_test_util.h"
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::MessageHas;
using testing::FindAt;

using testing::Validate;
using testing::World;

ValidateOptions WithModel(int64_t world, const ModelSpec* model, std::optional<int64_t> seq = {}) {
  ValidateOptions o = World(world);
  o.model = model;
  o.seq_len = seq;
  return o;
}

// compile.sp_size / compile.dp_size are errors: DeepSpeedConfig builds
// CompileConfig(**param_dict.get("compile", {})) (deepspeed/runtime/config.py, 0.19.6) and
// DeepSpeedConfigModel has extra="forbid" (runtime/config_utils.py), so initialize fails.
// sequence_parallel.autosp_size is silently ignored: a warning.
TEST(SequenceParallelRulesTest, ProposedFormsWarnWithReplacement) {
  auto compile = Validate(R"({"compile": {"deepcompile": true, "passes": ["autosp"], "sp_size": 4, "dp_size": 2}})", World(8));
  const Diagnostic* d = FindAt(compile, "sp-compile-key-rejected", "/compile/sp_size");
  ASSERT_NE(d, nullptr) << testing::Dump(compile);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_NE(d->message.find("rejects it as an unknown key and refuses to start"), std::string::npos);
  EXPECT_EQ(d->hint, "write \"sequence_parallel_size\": 4 at the top level and remove compile.sp_size");
  EXPECT_NO_DIAG(Validate(R"({"compile": {"sp_size": 4}})", World(8)), "unknown-key");  // one finding, not two
  d = FindAt(compile, "sp-compile-key-rejected", "/compile/dp_size");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->hint.find("(here 2)"), std::string::npos) << d->hint;
  // dp_size 2 = 8 / 4 agrees with the derived value.
  EXPECT_NO_DIAG(compile, "sp-dp-mismatch");

  auto section = Validate(R"({"sequence_parallel": {"autosp_size": 2}})", World(8));
  EXPECT_DIAG(section, "sp-proposed-form", "/sequence_parallel/autosp_size");
  EXPECT_EQ(FindAt(section, "sp-proposed-form", "/sequence_parallel/autosp_size")->severity, Severity::kWarning);
  EXPECT_TRUE(MessageHas(section, "sp-proposed-form", "silently ignores it"));

  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 2})", World(8)), "sp-proposed-form");
}

TEST(SequenceParallelRulesTest, FormsDisagree) {
  auto r = Validate(R"({"sequence_parallel_size": 4, "compile": {"sp_size": 2}})", World(8));
  EXPECT_DIAG(r, "sp-forms-disagree", "/compile/sp_size");
  EXPECT_TRUE(MessageHas(r, "sp-forms-disagree", "DeepSpeed uses only sequence_parallel_size"));
  EXPECT_DIAG(Validate(R"({"sequence_parallel": {"autosp_size": 4}, "compile": {"sp_size": 2}})"),
              "sp-forms-disagree", "/compile/sp_size");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 4, "sequence_parallel": {"autosp_size": 4}})"),
                 "sp-forms-disagree");
}

TEST(SequenceParallelRulesTest, SizeBelowOne) {
  EXPECT_DIAG(Validate(R"({"sequence_parallel_size": 0})"), "sp-invalid", "/sequence_parallel_size");
  EXPECT_DIAG(Validate(R"({"compile": {"sp_size": -2}})"), "sp-invalid", "/compile/sp_size");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 1})"), "sp-invalid");
}

TEST(SequenceParallelRulesTest, WorldSize) {
  auto big = Validate(R"({"sequence_parallel_size": 16})", World(8));
  EXPECT_DIAG(big, "sp-exceeds-world", "/sequence_parallel_size");
  EXPECT_TRUE(MessageHas(big, "sp-exceeds-world", "world_size (8) is less than sequence_parallel_size 16"));

  auto odd = Validate(R"({"sequence_parallel_size": 3})", World(8));
  EXPECT_DIAG(odd, "sp-world-divisible", "/sequence_parallel_size");
  EXPECT_TRUE(MessageHas(odd, "sp-world-divisible", "World mesh-size should be divisible by SP_SIZE"));
  ValidateOptions piped = World(8);
  piped.pp = 3;
  EXPECT_DIAG(Validate(R"({"sequence_parallel_size": 2})", piped), "sp-world-divisible", "/sequence_parallel_size");

  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 4})", World(8)), "sp-world-divisible");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 4})", World(8)), "sp-exceeds-world");
  // Without a world size there is nothing to divide.
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 3})"), "sp-world-divisible");
}

TEST(SequenceParallelRulesTest, DeclaredDpMustMatchDerived) {
  auto top = Validate(R"({"sequence_parallel_size": 2, "data_parallel_size": 2})", World(8));
  EXPECT_DIAG(top, "sp-dp-mismatch", "/data_parallel_size");
  EXPECT_TRUE(MessageHas(top, "sp-dp-mismatch", "world / (tp x sp x pp) = 8 / (1 x 2 x 1) = 4"));
  auto compile = Validate(R"({"compile": {"passes": ["autosp"], "sp_size": 2, "dp_size": 8}})", World(8));
  EXPECT_DIAG(compile, "sp-dp-mismatch", "/compile/dp_size");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 2, "data_parallel_size": 4})", World(8)), "sp-dp-mismatch");
  ValidateOptions piped = World(16);
  piped.pp = 2;
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 2, "data_parallel_size": 4})", piped), "sp-dp-mismatch");
}

TEST(SequenceParallelRulesTest, AttentionHeads) {
  ModelSpec llama = testing::ParsePresetOrDie("llama-3-8b.json");  // 32 heads, 8 kv heads
  auto r = Validate(R"({"sequence_parallel_size": 3})", WithModel(24, &llama));
  EXPECT_DIAG(r, "sp-heads-divisible", "/sequence_parallel_size");
  EXPECT_TRUE(MessageHas(r, "sp-heads-divisible", "Attention head count 32 is not divisible by SP size 3"));
  // sp 16 > kv 8: kv heads are replicated (16 % 8 == 0).
  auto ok = Validate(R"({"sequence_parallel_size": 16})", WithModel(16, &llama));
  EXPECT_NO_DIAG(ok, "sp-heads-divisible");
  EXPECT_NO_DIAG(ok, "sp-kv-heads");

  ModelSpec odd = llama;
  odd.num_attention_heads = 12;
  odd.num_key_value_heads = 8;
  auto kv = Validate(R"({"sequence_parallel_size": 6})", WithModel(12, &odd));
  EXPECT_DIAG(kv, "sp-kv-heads", "/sequence_parallel_size");
  EXPECT_NO_DIAG(kv, "sp-heads-divisible");
  EXPECT_TRUE(MessageHas(kv, "sp-kv-heads", "KV attention head count 8 is not divisible by SP size 6 or vice versa"));
}

// sp_compile.py / custom_ops/all_to_all.py (0.19.6): the compile pass reshapes the K/V heads SDPA
// receives; eager Ulysses repeats them.
TEST(SequenceParallelRulesTest, AutoSpCompilePassWithFewerKvHeadsNeedsTheMask) {
  ModelSpec llama = testing::ParsePresetOrDie("llama-3-8b.json");  // 32 heads, 8 KV heads
  auto compiled = Validate(R"({"sequence_parallel_size": 16, "zero_optimization": {"stage": 1},
                               "compile": {"deepcompile": true, "passes": ["autosp"]}})",
                           WithModel(16, &llama));
  EXPECT_DIAG(compiled, "sp-autosp-kv-heads", "/sequence_parallel_size");
  EXPECT_TRUE(MessageHas(compiled, "sp-autosp-kv-heads", "moves 32 heads"));
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 16})", WithModel(16, &llama)), "sp-autosp-kv-heads");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 8, "zero_optimization": {"stage": 1},
                              "compile": {"deepcompile": true, "passes": ["autosp"]}})",
                          WithModel(8, &llama)),
                 "sp-autosp-kv-heads");
}

// sp_compile.py pass_insert_attention_all_to_all (0.19.6): "AutoSP currently supports
// torch.nn.functional.scaled_dot_product_attention as the attention backend. No SDPA attention
// operations were found in the compiled graph."
TEST(SequenceParallelRulesTest, AutoSpNeedsSdpaAttention) {
  ModelSpec llama = testing::ParsePresetOrDie("llama-3-8b.json");
  const std::string compiled = R"({"sequence_parallel_size": 8, "zero_optimization": {"stage": 1},
                                   "compile": {"deepcompile": true, "passes": ["autosp"]}})";
  ValidateOptions o = WithModel(8, &llama);
  EXPECT_NO_DIAG(Validate(compiled, o), "sp-autosp-attention-impl");  // unknown: transformers' sdpa
  o.attn_implementation = "flash_attention_2";
  auto fa = Validate(compiled, o);
  EXPECT_DIAG(fa, "sp-autosp-attention-impl", "/compile/passes");
  EXPECT_TRUE(MessageHas(fa, "sp-autosp-attention-impl", "No SDPA attention operations were found"));
  EXPECT_FALSE(fa.valid());
  // Eager Ulysses wraps any attention; at ZeRO-2 AutoSP falls back before looking.
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 8})", o), "sp-autosp-attention-impl");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 8, "zero_optimization": {"stage": 2},
                              "compile": {"deepcompile": true, "passes": ["autosp"]}})", o),
                 "sp-autosp-attention-impl");
  o.attn_implementation = "sdpa";
  EXPECT_NO_DIAG(Validate(compiled, o), "sp-autosp-attention-impl");
  // From the model config when no flag is given.
  ModelSpec eager = llama;
  eager.attn_implementation = "eager";
  auto from_model = Validate(compiled, WithModel(8, &eager));
  EXPECT_TRUE(MessageHas(from_model, "sp-autosp-attention-impl", "the model config's _attn_implementation"));
}

TEST(SequenceParallelRulesTest, LinearAttentionLayersAreNotResharded) {
  // AutoSP rewrites scaled_dot_product_attention nodes only (compile/passes/sp_compile.py) and
  // Ulysses replaces the attention function (ulysses_sp.py): Gated DeltaNet calls neither.
  ModelSpec next = testing::ParsePresetOrDie("qwen3-next-80b-a3b-thinking.json");  // 36 of 48
  auto r = Validate(R"({"sequence_parallel_size": 2})", WithModel(8, &next));
  EXPECT_DIAG(r, "sp-linear-attention", "/sequence_parallel_size");
  EXPECT_TRUE(MessageHas(r, "sp-linear-attention", "has 36 Gated DeltaNet"));
  ModelSpec llama = testing::ParsePresetOrDie("llama-3-8b.json");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 2})", WithModel(8, &llama)),
                 "sp-linear-attention");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 1})", WithModel(8, &next)),
                 "sp-linear-attention");
}

TEST(SequenceParallelRulesTest, SequenceLength) {
  ValidateOptions o = World(8);
  o.seq_len = 1020;
  auto r = Validate(R"({"sequence_parallel_size": 8})", o);
  EXPECT_DIAG(r, "sp-seq-len-divisible", "/sequence_parallel_size");
  EXPECT_TRUE(MessageHas(r, "sp-seq-len-divisible", "isn't divisible by sp-size=8"));
  o.seq_len = 1024;
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 8})", o), "sp-seq-len-divisible");

  ModelSpec tiny = testing::ParsePresetOrDie("tiny-llama.json");  // max_position_embeddings 256
  auto longer = Validate(R"({"sequence_parallel_size": 2})", WithModel(2, &tiny, 512));
  EXPECT_DIAG(longer, "sp-seq-len-exceeds-positions", "/sequence_parallel_size");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 2})", WithModel(2, &tiny, 256)),
                 "sp-seq-len-exceeds-positions");
}

TEST(SequenceParallelRulesTest, GroupsCrossingNodes) {
  ValidateOptions o = World(32);
  o.gpus_per_node = 8;
  auto wide = Validate(R"({"sequence_parallel_size": 16})", o);
  EXPECT_DIAG(wide, "sp-crosses-node", "/sequence_parallel_size");
  EXPECT_TRUE(MessageHas(wide, "sp-crosses-node", "spans 2 nodes"));
  o.world_size = 24;
  EXPECT_DIAG(Validate(R"({"sequence_parallel_size": 3})", o), "sp-crosses-node", "/sequence_parallel_size");
  o.world_size = 32;
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 4})", o), "sp-crosses-node");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 16})", World(32)), "sp-crosses-node");
}

TEST(SequenceParallelRulesTest, AutoTpWithUlysses) {
  auto r = Validate(R"({"sequence_parallel_size": 2, "tensor_parallel": {"autotp_size": 2}})", World(8));
  EXPECT_DIAG(r, "sp-with-autotp", "/sequence_parallel_size");
  // The compile pair is the compile rules' error, not a second finding here.
  auto passes = Validate(R"({"sequence_parallel_size": 2, "tensor_parallel": {"autotp_size": 2},
                             "compile": {"deepcompile": true, "passes": ["autotp", "autosp"]}})", World(8));
  EXPECT_NO_DIAG(passes, "sp-with-autotp");
  EXPECT_DIAG(passes, "compile-autotp-combined", "/compile/passes");
  // AutoEP folding rejects TP + SP itself.
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 2, "tensor_parallel": {"autotp_size": 2},
                              "expert_parallel": {"enabled": true, "autoep_size": 2}})", World(8)),
                 "sp-with-autotp");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 2})", World(8)), "sp-with-autotp");
}

TEST(SequenceParallelRulesTest, AutoSpWithoutSize) {
  EXPECT_DIAG(Validate(R"({"compile": {"deepcompile": true, "passes": ["autosp"]}})"),
              "sp-autosp-without-size", "/compile/passes");
  EXPECT_NO_DIAG(Validate(R"({"sequence_parallel_size": 2, "compile": {"deepcompile": true, "passes": ["autosp"]}})"),
                 "sp-autosp-without-size");
}

}  // namespace
}  // namespace dsp
