#include "core/util/file_io.h"

#include <cerrno>
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

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  std::filesystem::path target(path);
  std::filesystem::path dir = target.parent_path().empty() ? "." : target.parent_path();
  std::string tmpl = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) return Error{"cannot write " + path + ": " + std::strerror(errno)};
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
  // mkstemp creates the file 0600; give the output the permissions a plain open() would (0666
  // less the umask), so replacing a file does not make it private.
  mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, 0666 & ~mask) != 0 || fsync(fd) != 0 || close(fd) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmpl.c_str());
    return Error{"cannot write " + path + ": " + err};
  }
  if (std::rename(tmpl.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmpl.c_str());
    return Error{"cannot write " + path + ": " + err};
  }
  return Status::Ok();
}

}  // namespace dsp
