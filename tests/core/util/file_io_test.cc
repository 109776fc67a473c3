#include "core/util/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

namespace dsp {
namespace {

namespace fs = std::filesystem;

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ds-plan-io-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FileIoTest, WriteIsAtomicAndKeepsUsualPermissions) {
  const std::string path = (dir_ / "out.json").string();
  ASSERT_TRUE(WriteFileAtomic(path, "first\n").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "second\n").ok());
  EXPECT_EQ(ReadFile(path).value(), "second\n");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
  // No temporary file is left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST_F(FileIoTest, ErrorsAreValues) {
  EXPECT_FALSE(WriteFileAtomic((dir_ / "missing" / "out.json").string(), "x").ok());
  EXPECT_FALSE(ReadFile((dir_ / "missing.json").string()).ok());
  auto d = ReadFile(dir_.string());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("is a directory"), std::string::npos);
}

// Devices and pipes that never end are cut at the cap instead of read until memory runs out.
TEST_F(FileIoTest, EndlessInputsStopAtTheCap) {
  auto zero = ReadFile("/dev/zero", size_t{1} << 20);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("more than 1 MiB (stopped reading)"), std::string::npos) << zero.error().message;
  const std::string path = (dir_ / "big.json").string();
  ASSERT_TRUE(WriteFileAtomic(path, std::string((size_t{1} << 20) + 1, ' ')).ok());
  auto big = ReadFile(path, size_t{1} << 20);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("larger than 1 MiB"), std::string::npos);
  EXPECT_TRUE(ReadFile(path, size_t{2} << 20).ok());
  // A pipe is read whole when it ends.
  const std::string fifo = (dir_ / "pipe").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    FILE* f = std::fopen(fifo.c_str(), "w");
    if (f != nullptr) {
      std::fputs("{\"a\": 1}", f);
      std::fclose(f);
    }
  });
  auto piped = ReadFile(fifo);
  writer.join();
  ASSERT_TRUE(piped.ok()) << piped.error().message;
  EXPECT_EQ(piped.value(), "{\"a\": 1}");
}

}  // namespace
}  // namespace dsp
