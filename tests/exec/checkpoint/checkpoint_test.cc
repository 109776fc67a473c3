// SPDX-License-Identifier: Apache-2.0
// `run --load` reads nothing it has not checked (issue 36): a valid checkpoint of the tiny model
// loads, and each edited field -- an offset before or past the file, a size past the parameter, a
// shard count that does not divide, a step no run writes, a file name leaving the directory, a
// link in place of a file -- is a clear error naming the file and the field, never a crash or a
// silent load of other memory.
#ifdef DSP_HAVE_TORCH
#include "exec/checkpoint/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/util/file_io.h"
#include "exec/model/tiny_config.h"

namespace dsp::exec {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  fs::path dir;
  TinyConfig config;
  Json identity = Json{{"model", "tiny"}, {"seed", 7}};
  std::unique_ptr<TinyModel> model;

  Fixture() {
    dir = fs::temp_directory_path() / ("dsp-ckpt-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    ParallelSizes sizes;
    sizes.world = 1;
    config = *MakeTinyConfig(DefaultTinyModel(false), sizes, 1);
    model = std::make_unique<TinyModel>(config, 7, ShardLayout{});
    // One file with every parameter whole, as a one-rank run saves it.
    std::vector<CheckpointPiece> pieces;
    for (const Param& p : model->params()) pieces.push_back({p.name, Shard{}, 0, p.ref.detach().reshape({-1})});
    EXPECT_TRUE(WriteCheckpointFile(dir.string(), "mp_rank_00_model_states.bin", pieces).ok());
    EXPECT_TRUE(WriteCheckpointManifest(dir.string(), Manifest()).ok());
  }
  ~Fixture() { fs::remove_all(dir); }

  Json Manifest() const {
    return Json{{"format", "ds-plan run checkpoint 1"},
                {"identity", identity},
                {"step", 2},
                {"layout", Json::object()},
                {"files", Json::array({"mp_rank_00_model_states.bin"})}};
  }
  Json Pieces() const {
    return Json::parse(*ReadFile((dir / "mp_rank_00_model_states.bin.json").string()));
  }
  void WritePieces(const Json& list) const {
    ASSERT_TRUE(WriteFileAtomic((dir / "mp_rank_00_model_states.bin.json").string(), list.dump()).ok());
  }
  void WriteManifest(const Json& manifest) const {
    ASSERT_TRUE(WriteFileAtomic((dir / "manifest.json").string(), manifest.dump()).ok());
  }
  Result<LoadedCheckpoint> Load() { return LoadCheckpoint(dir.string(), *model, identity, at::kFloat); }
};

// The error of a load after `edit` changed the first piece, or "" when it loaded.
std::string AfterPieceEdit(const std::function<void(Json&)>& edit) {
  Fixture f;
  Json list = f.Pieces();
  edit(list["pieces"][0]);
  f.WritePieces(list);
  auto loaded = f.Load();
  return loaded.ok() ? "" : loaded.error().message;
}

std::string AfterManifestEdit(const std::function<void(Json&)>& edit) {
  Fixture f;
  Json manifest = f.Manifest();
  edit(manifest);
  f.WriteManifest(manifest);
  auto loaded = f.Load();
  return loaded.ok() ? "" : loaded.error().message;
}

TEST(CheckpointTest, AValidCheckpointLoadsEveryParameter) {
  Fixture f;
  auto loaded = f.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->step, 2);
  for (const Param& p : f.model->params()) EXPECT_TRUE(loaded->full.at(p.name).equal(p.ref.detach())) << p.name;
}

TEST(CheckpointTest, OffsetsAndSizesMustLieInsideTheFileAndTheParameter) {
  // Before: -2^40 crashed every rank in memcpy, -65536 loaded heap memory into the weights.
  for (int64_t bad : {-(int64_t{1} << 40), int64_t{-65536}, int64_t{1} << 40}) {
    const std::string e = AfterPieceEdit([&](Json& p) { p["byte_offset"] = bad; });
    EXPECT_NE(e.find("mp_rank_00_model_states.bin"), std::string::npos) << e;
    EXPECT_NE(e.find("'byte_offset'"), std::string::npos) << e;
  }
  std::string e = AfterPieceEdit([](Json& p) { p["numel"] = -4; });
  EXPECT_NE(e.find("'numel' is -4"), std::string::npos) << e;
  e = AfterPieceEdit([](Json& p) { p["numel"] = int64_t{1} << 40; });
  EXPECT_NE(e.find("'numel'"), std::string::npos) << e;
  e = AfterPieceEdit([](Json& p) { p["chunk_offset"] = int64_t{1} << 50; });
  EXPECT_NE(e.find("'chunk_offset'"), std::string::npos) << e;
  e = AfterPieceEdit([](Json& p) { p["byte_offset"] = "0"; });
  EXPECT_NE(e.find("'byte_offset' is missing or not an integer"), std::string::npos) << e;
  // The last piece reaching past the end of the file.
  Fixture f;
  Json list = f.Pieces();
  Json& last = list["pieces"].back();
  last["byte_offset"] = last["byte_offset"].get<int64_t>() + 4;
  f.WritePieces(list);
  auto loaded = f.Load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find("past the end of the file"), std::string::npos) << loaded.error().message;
}

TEST(CheckpointTest, ShardsMustSplitTheParameter) {
  std::string e = AfterPieceEdit([](Json& p) { p["shard"]["parts"] = int64_t{1} << 40; });
  EXPECT_NE(e.find("'parts'"), std::string::npos) << e;
  e = AfterPieceEdit([](Json& p) { p["shard"] = {{"dim", 0}, {"index", 0}, {"parts", 7}}; });
  EXPECT_NE(e.find("7 parts do not divide dimension 0"), std::string::npos) << e;
  e = AfterPieceEdit([](Json& p) { p["shard"]["index"] = 3; });
  EXPECT_NE(e.find("'index' is 3"), std::string::npos) << e;
  e = AfterPieceEdit([](Json& p) { p["shard"]["dim"] = 9; });
  EXPECT_NE(e.find("'dim' is 9"), std::string::npos) << e;
  e = AfterPieceEdit([](Json& p) { p["param"] = "no.such.weight"; });
  EXPECT_NE(e.find("which this model does not have"), std::string::npos) << e;
}

TEST(CheckpointTest, TheManifestListsOnlyPlainFilesAndAStepARunWrites) {
  for (const char* name : {"/etc/passwd", "../../x", "..", "a/b.bin", ""}) {
    const std::string e = AfterManifestEdit([&](Json& m) { m["files"] = Json::array({name}); });
    EXPECT_NE(e.find("not a plain file name"), std::string::npos) << name << ": " << e;
  }
  std::string e = AfterManifestEdit([](Json& m) { m["step"] = 1000000000; });
  EXPECT_NE(e.find("'step' is 1000000000"), std::string::npos) << e;
  e = AfterManifestEdit([](Json& m) { m["step"] = -1; });
  EXPECT_NE(e.find("'step' is -1"), std::string::npos) << e;
  e = AfterManifestEdit([](Json& m) { m["files"] = "mp_rank_00_model_states.bin"; });
  EXPECT_NE(e.find("not a ds-plan run manifest"), std::string::npos) << e;
  e = AfterManifestEdit([](Json& m) { m["identity"]["seed"] = 8; });
  EXPECT_NE(e.find("seed is 8 there, 7 here"), std::string::npos) << e;
}

TEST(CheckpointTest, ALinkOrDeviceInPlaceOfAFileIsRefusedBeforeReading) {
  // Before: a link to /dev/zero was read, 2 GiB per rank.
  Fixture f;
  const fs::path blob = f.dir / "mp_rank_00_model_states.bin";
  fs::remove(blob);
  fs::create_symlink("/dev/zero", blob);
  auto loaded = f.Load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find("is not a regular file"), std::string::npos) << loaded.error().message;
  // The manifest too.
  fs::remove(f.dir / "manifest.json");
  fs::create_symlink("/dev/zero", f.dir / "manifest.json");
  loaded = f.Load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find("manifest.json is not a regular file"), std::string::npos)
      << loaded.error().message;
}

}  // namespace
}  // namespace dsp::exec
#endif  // DSP_HAVE_TORCH
