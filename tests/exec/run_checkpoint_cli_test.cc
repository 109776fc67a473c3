// SPDX-License-Identifier: Apache-2.0
// `ds-plan run --save` / `--load` end to end under the real torchrun (exec/checkpoint/): checkpoints
// written on one layout and resumed on another, and the ones that must be refused.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "tests/exec/run_cli_test_util.h"

namespace dsp {
namespace {

using namespace run_test;  // NOLINT: the shared torchrun helpers

// Checkpoints (exec/checkpoint/): saved on tp2 x dp2 with ZeRO-3 (every rank its chunks, DeepSpeed's
// zero_pp_rank_D_mp_rank_XX names), resumed on dp4 with ZeRO-2: every parameter consolidated
// across its tp slices and ZeRO chunks (what DeepSpeed PR #8168 fixed), checked against the
// reference replayed to the saved step, and the next steps keep parity (at ZeRO-2 and ZeRO-1).
TEST(RunCliTest, SaveOnTp2Dp2Zero3AndResumeOnDp4) {
  SKIP_WITHOUT_TORCH();
  const std::filesystem::path dir = FreshDir("dsp-ckpt");
  auto saved = Torchrun(4, "samples/configs/run/tp2-dp2-zero3.json --steps 2 --save " + dir.string());
  ASSERT_EQ(saved.r.exit_code, 0) << saved.r.output;
  for (const char* f : {"zero_pp_rank_0_mp_rank_00_optim_states.bin", "zero_pp_rank_1_mp_rank_01_optim_states.bin.json",
                        "manifest.json"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  }
  std::ifstream in(dir / "manifest.json");
  const Json manifest = Json::parse(in);
  EXPECT_EQ(manifest["step"], 2);
  EXPECT_EQ(manifest["layout"]["tp"], 2);
  EXPECT_EQ(manifest["layout"]["zero_stage"], 3);
  EXPECT_EQ(manifest["layout"]["groups"]["tp"], Json::parse("[[0, 1], [2, 3]]"));
  EXPECT_EQ(manifest["files"].size(), 4u);

  auto resumed = Torchrun(4, "samples/configs/run/dp4-zero2.json --steps 2 --load " + dir.string() + " --format json",
                          false);
  ASSERT_EQ(resumed.r.exit_code, 0) << resumed.r.output;
  Json doc = ParseReport(resumed.r.output);
  EXPECT_TRUE(doc["ok"].get<bool>());
  EXPECT_EQ(doc["resumed_from_step"], 2);
  EXPECT_EQ(doc["step_reports"][0]["step"], 3);
  EXPECT_EQ(doc["step_reports"][1]["step"], 4);
  // The same checkpoint resumed at ZeRO-1 on dp4.
  auto zero1 = Torchrun(4, "samples/configs/run/dp4-zero1.json --steps 1 --load " + dir.string());
  EXPECT_EQ(zero1.r.exit_code, 0) << zero1.r.output;
  EXPECT_TRUE(Has(zero1.r.output, "ds-plan run: dp4, zero-1 on 4 ranks")) << zero1.r.output;
  EXPECT_TRUE(Has(zero1.r.output, "resumed: from step 2 of a checkpoint")) << zero1.r.output;
  EXPECT_TRUE(Has(zero1.r.output, "parity: ok (1 steps")) << zero1.r.output;

  // Another model: refused naming what differs.
  auto other = Torchrun(4, "samples/configs/run/ep4-zero1.json --model samples/models/tiny-moe.json --steps 1 --load " +
                               dir.string());
  EXPECT_NE(other.r.exit_code, 0);
  EXPECT_TRUE(Has(other.r.output, "the checkpoint was saved by another model or run: expert_intermediate is 0 there"))
      << other.r.output;
  // A file gone: named.
  std::filesystem::remove(dir / "zero_pp_rank_1_mp_rank_00_optim_states.bin");
  auto missing = Torchrun(4, "samples/configs/run/dp4-zero2.json --steps 1 --load " + dir.string());
  EXPECT_NE(missing.r.exit_code, 0);
  EXPECT_TRUE(Has(missing.r.output, "zero_pp_rank_1_mp_rank_00_optim_states.bin is missing")) << missing.r.output;
  std::filesystem::remove_all(dir);
}

// Saves `save` with the fault into `dir`, loads it with `load`: refused, naming q_proj's slice 1/2.
void ExpectSkippedTpShardRefused(const std::filesystem::path& dir, const std::string& save, const std::string& load) {
  auto saved = Torchrun(4, save + " --steps 1 --save " + dir.string() + " --inject skip-tp-shard-on-save");
  ASSERT_EQ(saved.r.exit_code, 0) << saved.r.output;
  auto loaded = Torchrun(4, load + " --steps 1 --load " + dir.string());
  EXPECT_NE(loaded.r.exit_code, 0);
  EXPECT_TRUE(Has(loaded.r.output, "model.layers.0.self_attn.q_proj.weight: tp slice 1/2 (dim 0) is in no file"))
      << loaded.r.output;
  std::filesystem::remove_all(dir);
}

// The #8168 bug on purpose: the save keeps tp rank 0's shards only. The save itself passes (the
// run was fine); loading it is refused, naming the missing tp slice.
TEST(RunCliTest, SkipTpShardOnSaveIsRefusedOnLoad) {
  SKIP_WITHOUT_TORCH();
  ExpectSkippedTpShardRefused(FreshDir("dsp-ckpt-skip"), "samples/configs/run/tp2-dp2-zero3.json",
                              "samples/configs/run/dp4-zero2.json");
}

// A pipeline checkpoint is one file per PipelineModule layer and tp slice, written by each stage's
// first data-parallel rank (runtime/pipe/module.py save_state_dict, ckpt_layer_path); it resumes
// without stages, and a checkpoint saved without stages resumes on them. The reference is
// replayed on the saved run's batches, micro-batches per step included.
TEST(RunCliTest, PipelineCheckpointResumesOnAnotherLayout) {
  SKIP_WITHOUT_TORCH();
  const std::filesystem::path dir = FreshDir("dsp-ckpt-pp");
  auto saved = Torchrun(4, "samples/configs/run/pp2-tp2.json --pp 2 --steps 2 --save " + dir.string());
  ASSERT_EQ(saved.r.exit_code, 0) << saved.r.output;
  for (const char* f : {"layer_00-model_00-model_states.bin", "layer_01-model_01-model_states.bin.json",
                        "layer_04-model_01-model_states.bin", "manifest.json"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  }
  std::ifstream in(dir / "manifest.json");
  const Json manifest = Json::parse(in);
  EXPECT_EQ(manifest["layout"]["pp"], 2);
  EXPECT_EQ(manifest["layout"]["micro_batches"], 3);
  EXPECT_EQ(manifest["layout"]["groups"]["pp"], Json::parse("[[0, 2], [1, 3]]"));
  EXPECT_EQ(manifest["files"].size(), 10u);  // 5 layers (embedding, 2 decoder layers, norm, head) x 2 tp slices
  // Stage 1's first tp rank (rank 2) wrote lm_head's tp slice 0.
  EXPECT_EQ(manifest["writers"]["layer_04-model_00-model_states.bin"],
            Json::parse(R"({"rank": 2, "tp": 0, "dp": 0, "pp": 1, "ep": 0})"));
  auto resumed = Torchrun(4, "samples/configs/run/dp4-zero1.json --steps 2 --load " + dir.string());
  EXPECT_EQ(resumed.r.exit_code, 0) << resumed.r.output;
  EXPECT_TRUE(Has(resumed.r.output, "resumed: from step 2 of a checkpoint")) << resumed.r.output;
  EXPECT_TRUE(Has(resumed.r.output, "parity: ok (2 steps")) << resumed.r.output;
  std::filesystem::remove_all(dir);

  // Saves with `save`, resumes with `load` for one step with parity, and finds `expected` there.
  auto save_then_resume = [&](const std::string& save, const std::string& load, const std::string& expected) {
    auto saved_run = Torchrun(4, save + " --steps 1 --save " + dir.string());
    ASSERT_EQ(saved_run.r.exit_code, 0) << saved_run.r.output;
    auto loaded = Torchrun(4, load + " --steps 1 --load " + dir.string());
    EXPECT_EQ(loaded.r.exit_code, 0) << loaded.r.output;
    EXPECT_TRUE(Has(loaded.r.output, expected)) << loaded.r.output;
    EXPECT_TRUE(Has(loaded.r.output, "parity: ok (1 steps")) << loaded.r.output;
    std::filesystem::remove_all(dir);
  };
  save_then_resume("samples/configs/run/dp4-zero1.json", "samples/configs/run/pp2-dp2.json --pp 2",
                   "ds-plan run: dp2 x pp2, zero-1 on 4 ranks");
  // Four stages build four layers; their checkpoint resumes without stages with four layers, and
  // a two-layer checkpoint cannot be split over four stages.
  save_then_resume("samples/configs/run/pp4.json --pp 4", "samples/configs/run/dp4-zero1.json", "tiny model: 4 layers");
  ASSERT_EQ(Torchrun(4, "samples/configs/run/dp4-zero1.json --steps 1 --save " + dir.string()).r.exit_code, 0);
  auto split = Torchrun(4, "samples/configs/run/pp4.json --pp 4 --steps 1 --load " + dir.string());
  EXPECT_NE(split.r.exit_code, 0);
  EXPECT_TRUE(Has(split.r.output, "the checkpoint's tiny decoder has 2 layers, which 4 pipeline stages cannot split "
                                  "evenly: resume it with --pp dividing 2"))
      << split.r.output;
  std::filesystem::remove_all(dir);

  // The #8168 fault on a pipeline checkpoint: the tp rank 1 layer files hold nothing.
  ExpectSkippedTpShardRefused(dir, "samples/configs/run/pp2-tp2.json --pp 2", "samples/configs/run/dp4-zero1.json");
}

// A manifest's layer count decides the tiny decoder each rank builds before anything is loaded: a
// count no run writes is refused at once (before: 1e9 layers allocated until bad_alloc).
TEST(RunCliTest, AManifestLayerCountNoRunWritesIsRefusedBeforeBuildingTheModel) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dsp-run-manifest-layers";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "manifest.json")
      << R"({"format": "ds-plan run checkpoint 1", "identity": {"layers": 1000000000}, "step": 1, "files": []})";
  const std::string out = testing::RunShell(
      "WORLD_SIZE=4 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999 timeout 60 " + testing::ShellQuote(DSP_BINARY) +
      " run samples/configs/run/dp4-zero1.json --load " + dir.string() + " 2>&1; echo \"exit $?\"");
  EXPECT_NE(out.find("identity.layers is 1000000000, not a layer count ds-plan run saves (1 to 4096)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("exit 2"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

// Issue 36 item 8: --save into a directory of other files would replace any of them named like a
// checkpoint file; refused before anything runs unless --force.
TEST(RunCliTest, SaveIntoADirectoryOfOtherFilesNeedsForce) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dsp-run-save-into-files";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "mp_rank_00_model_states.bin") << "not ours";
  const std::string out = testing::RunShell(
      "WORLD_SIZE=4 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29998 timeout 60 " + testing::ShellQuote(DSP_BINARY) +
      " run samples/configs/run/dp4-zero1.json --steps 1 --save " + dir.string() + " 2>&1; echo \"exit $?\"");
  EXPECT_NE(out.find("holds files but no checkpoint; its files of the same names would be replaced"), std::string::npos)
      << out;
  EXPECT_NE(out.find("exit 2"), std::string::npos) << out;
  std::ifstream kept(dir / "mp_rank_00_model_states.bin");
  std::string text((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "not ours");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dsp
