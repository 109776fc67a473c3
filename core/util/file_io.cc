// SPDX-License-Identifier: Apache-2.0
#include "core/util/file_io.h"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dsp {

// Reads in chunks and stops at the cap, so a device or a pipe that never ends (/dev/zero, an
// endless stdin) is refused instead of read until memory runs out.
Result<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  const bool stdin_path = path == "-";
  int fd = stdin_path ? STDIN_FILENO : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return Error{"cannot read " + path + ": no such file"};
    return Error{"cannot read " + path + ": " + std::strerror(errno)};
  }
  struct FdCloser {
    int fd;
    bool owned;
    ~FdCloser() {
      if (owned) close(fd);
    }
  } closer{fd, !stdin_path};
  struct stat st {};
  if (fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Error{"cannot read " + path + ": is a directory"};
    if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) {
      return Error{"cannot read " + path + ": larger than " + std::to_string(max_bytes >> 20) + " MiB"};
    }
  }
  std::string text;
  if (S_ISREG(st.st_mode) && st.st_size > 0) text.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EISDIR) return Error{"cannot read " + path + ": is a directory"};
      return Error{"cannot read " + path + ": " + std::strerror(errno)};
    }
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > max_bytes) {
      return Error{"cannot read " + path + ": more than " + std::to_string(max_bytes >> 20) +
                   " MiB (stopped reading)"};
    }
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

namespace {

// Follows a chain of symbolic links to the file it ends in (which may not exist yet), as open()
// would; a loop or a chain longer than the kernel's limit is an error.
Result<std::filesystem::path> FollowLinks(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (ec && ec.value() != ENOENT && ec.value() != ENOTDIR) return Error{"cannot write " + path.string() + ": " + ec.message()};
    if (!fs::is_symlink(st)) return p;
    fs::path next = fs::read_symlink(p, ec);
    if (ec) return Error{"cannot write " + path.string() + ": " + ec.message()};
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  return Error{"cannot write " + path.string() + ": too many levels of symbolic links"};
}

std::string DirectoryOf(const std::filesystem::path& p) {
  return p.parent_path().empty() ? std::string(".") : p.parent_path().string();
}

}  // namespace

namespace {

// The temporary being written and the actions the handler replaced, for the signal handler: fixed
// storage and a flag, the only state it may read (unlink, sigaction and raise are async-signal-safe).
char g_temporary[4096];
volatile std::sig_atomic_t g_has_temporary = 0;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];
bool g_installed[3] = {false, false, false};

void RemoveTemporaryAndRaise(int signal_number) {
  if (g_has_temporary) unlink(g_temporary);
  for (int i = 0; i < 3; ++i) {
    if (kSignals[i] == signal_number) sigaction(signal_number, &g_previous[i], nullptr);
  }
  raise(signal_number);
}

// Moves `from` to `to` unless `to` exists (a file, a link, anything): renameat2's
// RENAME_NOREPLACE (Linux 3.15), or where the file system lacks it, link() then unlink(), which
// fail the same way on an existing name. Never a check-then-rename race.
int RenameNoReplace(const char* from, const char* to) {
  if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  if (link(from, to) != 0) return -1;
  unlink(from);
  return 0;
}

}  // namespace

namespace file_io_internal {

ScopedTemporary::ScopedTemporary(const std::string& path) {
  g_has_temporary = 0;
  if (path.empty() || path.size() >= sizeof g_temporary) return;
  std::memcpy(g_temporary, path.c_str(), path.size() + 1);
  g_has_temporary = 1;
  struct sigaction action {};
  action.sa_handler = RemoveTemporaryAndRaise;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 3; ++i) {
    g_installed[i] = sigaction(kSignals[i], &action, &g_previous[i]) == 0;
    // An ignored signal (nohup) stays ignored.
    if (g_installed[i] && g_previous[i].sa_handler == SIG_IGN) {
      sigaction(kSignals[i], &g_previous[i], nullptr);
      g_installed[i] = false;
    }
  }
}

ScopedTemporary::~ScopedTemporary() {
  for (int i = 0; i < 3; ++i) {
    if (g_installed[i]) sigaction(kSignals[i], &g_previous[i], nullptr);
    g_installed[i] = false;
  }
  g_has_temporary = 0;
}

}  // namespace file_io_internal

Status WriteFileAtomic(const std::string& path, const std::string& contents, bool replace) {
  auto resolved = FollowLinks(path);
  if (!resolved.ok()) return resolved.error();
  // Without replace nothing may stand at the path, so there is no link to follow either.
  const std::filesystem::path target = replace ? *resolved : std::filesystem::path(path);
  const std::string dir = DirectoryOf(target);
  std::string tmpl = (std::filesystem::path(dir) / ("." + target.filename().string() + ".XXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  const file_io_internal::ScopedTemporary temporary(fd >= 0 ? tmpl : std::string());
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return Error{"cannot write " + path + ": directory " + dir + " does not exist"};
    return Error{"cannot write " + path + ": " + std::strerror(errno)};
  }
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string err = std::strerror(errno);
      close(fd);
      std::remove(tmpl.c_str());
      return Error{"cannot write " + path + ": " + err};
    }
    done += static_cast<size_t>(n);
  }
  // mkstemp creates the file 0600. Replacing a file keeps its mode (an executable script stays
  // executable, a private file stays private); a new one gets what a plain open() would give.
  mode_t mode = 0;
  struct stat old {};
  if (stat(target.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
    mode = old.st_mode & 07777;
  } else {
    mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  if (fchmod(fd, mode) != 0 || fsync(fd) != 0 || close(fd) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmpl.c_str());
    return Error{"cannot write " + path + ": " + err};
  }
  if ((replace ? std::rename(tmpl.c_str(), target.c_str()) : RenameNoReplace(tmpl.c_str(), target.c_str())) != 0) {
    const int error = errno;
    std::remove(tmpl.c_str());
    if (!replace && error == EEXIST) {
      return Error{"cannot write " + path + ": it appeared while ds-plan was working and was kept; pass --force to replace it"};
    }
    return Error{"cannot write " + path + ": " + std::strerror(error)};
  }
  return Status::Ok();
}

Status CheckOutputPath(const std::string& flag, const std::string& path, bool force) {
  namespace fs = std::filesystem;
  if (path == "-") return Status::Ok();
  auto fail = [&](const std::string& why) { return Status(Error{flag + " " + path + ": " + why}); };
  if (path.empty()) return fail("no file name");
  std::error_code ec;
  const fs::file_status own = fs::symlink_status(path, ec);
  if (ec && ec.value() != ENOENT && ec.value() != ENOTDIR) return fail(ec.message());
  auto resolved = FollowLinks(path);
  if (!resolved.ok()) return fail("too many levels of symbolic links (a loop?)");
  const fs::file_status st = fs::status(*resolved, ec);
  if (fs::is_directory(st)) return fail("is a directory; name a file inside it");
  if (fs::exists(own) && !force) {
    if (fs::is_symlink(own) && !fs::exists(st)) {
      return fail("exists (a symbolic link to " + resolved->string() + ", which does not exist): pass --force to write through it");
    }
    return fail("exists: pass --force to replace it");
  }
  if (fs::exists(st) && !fs::is_regular_file(st)) return fail("exists and is not a regular file");
  const std::string dir = DirectoryOf(*resolved);
  const fs::file_status dst = fs::status(dir, ec);
  if (!fs::exists(dst)) return fail("directory " + dir + " does not exist");
  if (!fs::is_directory(dst)) return fail(dir + " is not a directory");
  if (access(dir.c_str(), W_OK) != 0) return fail("directory " + dir + " is not writable");
  if (resolved->filename().string().size() + 8 > 255) return fail("file name too long");
  return Status::Ok();
}

Status WriteOutput(const std::string& flag, const std::string& path, const std::string& contents, bool force) {
  if (path == "-") {
    std::cout << contents;
    std::cout.flush();
    if (!std::cout) return Error{flag + " -: cannot write to standard output"};
    return Status::Ok();
  }
  Status s = WriteFileAtomic(path, contents, /*replace=*/force);
  if (!s.ok()) return Error{flag + ": " + s.error().message};
  return s;
}

}  // namespace dsp
