#include "core/util/file_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

namespace dsp {

Result<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return Error{"cannot read " + path + ": no such file"};
  if (std::filesystem::is_directory(status)) return Error{"cannot read " + path + ": is a directory"};
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot read " + path + ": " + std::strerror(errno)};
  in.seekg(0, std::ios::end);
  auto size = in.tellg();
  if (size > 0 && static_cast<size_t>(size) > max_bytes) {
    return Error{"cannot read " + path + ": larger than " + std::to_string(max_bytes >> 20) + " MiB"};
  }
  in.seekg(0, std::ios::beg);
  std::string text;
  if (size > 0) text.reserve(static_cast<size_t>(size));
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return Error{"cannot read " + path + ": read error"};
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
