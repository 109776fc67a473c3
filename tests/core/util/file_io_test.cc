// SPDX-License-Identifier: Apache-2.0
#include "core/util/file_io.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
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

// Issue 36 item 8: CheckOutputPath passes before a long run; a file (or a link) created at the
// path while it ran is kept without --force. The check is the rename itself (RENAME_NOREPLACE),
// so no window remains between a check and the rename.
TEST_F(FileIoTest, AFileThatAppearedDuringTheRunIsKeptWithoutForce) {
  const std::string path = (dir_ / "plan.json").string();
  ASSERT_TRUE(CheckOutputPath("-o", path, /*force=*/false).ok());
  ASSERT_TRUE(WriteFileAtomic(path, "someone else's\n").ok());  // appears during the run
  Status kept = WriteOutput("-o", path, "ours\n", /*force=*/false);
  ASSERT_FALSE(kept.ok());
  EXPECT_EQ(kept.error().message,
            "-o: cannot write " + path + ": it appeared while ds-plan was working and was kept; pass --force to replace it");
  EXPECT_EQ(ReadFile(path).value(), "someone else's\n");
  // A link that appeared is kept too, and nothing is written where it points.
  const std::string link = (dir_ / "link.json").string();
  fs::create_symlink(dir_ / "elsewhere.json", link);
  EXPECT_FALSE(WriteOutput("-o", link, "ours\n", false).ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_FALSE(fs::exists(dir_ / "elsewhere.json"));
  // No temporary is left behind by the refusals.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 2);
  // With --force the file is replaced, and a new path is written either way.
  ASSERT_TRUE(WriteOutput("-o", path, "ours\n", /*force=*/true).ok());
  EXPECT_EQ(ReadFile(path).value(), "ours\n");
  ASSERT_TRUE(WriteOutput("-o", (dir_ / "new.json").string(), "new\n", false).ok());
  EXPECT_EQ(ReadFile((dir_ / "new.json").string()).value(), "new\n");
}

// Issue 36 item 8: Ctrl-C or SIGTERM during a write left the hidden temporary (14-23 MB for a big
// SVG). While a write holds its temporary, the signals delete it and the process still ends by
// the signal; a handler that was there before (curses') still runs; before and after the write
// ds-plan's handlers are not installed at all.
TEST_F(FileIoTest, ASignalDuringAWriteRemovesItsTemporary) {
  auto run = [&](int signal_number, bool previous_handler) {
    const fs::path temporary = dir_ / (".out.json." + std::to_string(signal_number));
    const fs::path marker = dir_ / ("previous-ran." + std::to_string(signal_number));
    const pid_t child = fork();
    if (child == 0) {
      static std::string marker_path;
      marker_path = marker.string();
      if (previous_handler) {
        std::signal(signal_number, [](int s) {
          std::fclose(std::fopen(marker_path.c_str(), "w"));
          std::signal(s, SIG_DFL);
          raise(s);
        });
      }
      std::FILE* f = std::fopen(temporary.c_str(), "w");
      std::fputs("half a file", f);
      std::fclose(f);
      const file_io_internal::ScopedTemporary held(temporary.string());  // as WriteFileAtomic holds its own
      raise(signal_number);
      _exit(0);  // not reached
    }
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status)) << signal_number;
    if (WIFSIGNALED(status)) {
      EXPECT_EQ(WTERMSIG(status), signal_number);
    }
    EXPECT_FALSE(fs::exists(temporary)) << signal_number;
    EXPECT_EQ(fs::exists(marker), previous_handler) << signal_number;
  };
  for (int signal_number : {SIGTERM, SIGINT, SIGHUP}) run(signal_number, false);
  run(SIGTERM, true);
  // After a write its handler is gone: what was there before is back.
  std::signal(SIGHUP, SIG_IGN);
  ASSERT_TRUE(WriteFileAtomic((dir_ / "kept.json").string(), "kept\n").ok());
  struct sigaction now {};
  sigaction(SIGHUP, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
  sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
  std::signal(SIGHUP, SIG_DFL);
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

// One output policy for every writer (issue 16): checked before any work, --force to replace,
// symbolic links written through, the old mode kept, the directory named when it is missing.
TEST_F(FileIoTest, OutputPolicyRefusesWhatItWouldReplaceWithoutForce) {
  const std::string file = (dir_ / "plan.json").string();
  EXPECT_TRUE(CheckOutputPath("-o", file, false).ok());  // new file
  EXPECT_TRUE(CheckOutputPath("-o", "-", false).ok());   // standard output
  ASSERT_TRUE(WriteFileAtomic(file, "mine\n").ok());
  Status exists = CheckOutputPath("-o", file, false);
  ASSERT_FALSE(exists.ok());
  EXPECT_EQ(exists.error().message, "-o " + file + ": exists: pass --force to replace it");
  EXPECT_TRUE(CheckOutputPath("-o", file, true).ok());

  // A dangling symlink is something the user made: refused without --force, written through with it.
  const fs::path link = dir_ / "link.json";
  fs::create_symlink("target.json", link);
  Status dangling = CheckOutputPath("--emit-config", link.string(), false);
  ASSERT_FALSE(dangling.ok());
  EXPECT_NE(dangling.error().message.find("a symbolic link to " + (dir_ / "target.json").string() + ", which does not exist"),
            std::string::npos)
      << dangling.error().message;
  ASSERT_TRUE(CheckOutputPath("--emit-config", link.string(), true).ok());
  ASSERT_TRUE(WriteFileAtomic(link.string(), "through\n").ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(ReadFile((dir_ / "target.json").string()).value(), "through\n");

  // Never replaced, --force or not: a directory, a symlink loop.
  EXPECT_NE(CheckOutputPath("-o", dir_.string(), true).error().message.find("is a directory"), std::string::npos);
  fs::create_symlink("loop-b", dir_ / "loop-a");
  fs::create_symlink("loop-a", dir_ / "loop-b");
  Status loop = CheckOutputPath("-o", (dir_ / "loop-a").string(), true);
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.error().message.find("too many levels of symbolic links"), std::string::npos);
  EXPECT_FALSE(WriteFileAtomic((dir_ / "loop-a").string(), "x").ok());

  // A missing directory is named, before any work.
  const std::string nested = (dir_ / "no" / "such" / "out.svg").string();
  Status missing = CheckOutputPath("-o", nested, false);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "-o " + nested + ": directory " + (dir_ / "no" / "such").string() + " does not exist");
  EXPECT_NE(CheckOutputPath("-o", (dir_ / "plan.json" / "x").string(), false).error().message.find("is not a directory"),
            std::string::npos);
  EXPECT_NE(CheckOutputPath("-o", std::string(300, 'a') + ".json", false).error().message.find("too long"),
            std::string::npos);
}

TEST_F(FileIoTest, ReplacingAFileKeepsItsMode) {
  const std::string file = (dir_ / "run.sh").string();
  ASSERT_TRUE(WriteFileAtomic(file, "old\n").ok());
  ASSERT_EQ(chmod(file.c_str(), 0750), 0);
  ASSERT_TRUE(WriteFileAtomic(file, "new\n").ok());
  struct stat st {};
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750);
  EXPECT_EQ(ReadFile(file).value(), "new\n");
}

}  // namespace
}  // namespace dsp
