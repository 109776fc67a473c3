// SPDX-License-Identifier: Apache-2.0
// File reading and atomic writing: outputs go to a temporary file in the same directory and are
// renamed over the target, so an interrupted run never leaves a half-written file.
#pragma once

#include <string>

#include "core/util/result.h"

namespace dsp {

// Reads a file, device or pipe (or "-" for standard input) whole. Refuses directories and
// anything longer than `max_bytes`, stopping the read there.
Result<std::string> ReadFile(const std::string& path, size_t max_bytes = size_t{256} << 20);

// Writes `contents` to a temporary file next to the final one and renames it over, so an
// interrupted run never leaves a half-written file. A symbolic link is written through (the link
// stays, the file it names is replaced); replacing a file keeps its permission bits, a new file
// gets 0666 less the umask, as open() would. With `replace` false the rename never replaces
// anything: a file or link that appeared at `path` while the output was being made (after
// CheckOutputPath passed) is kept and the write fails, naming it.
Status WriteFileAtomic(const std::string& path, const std::string& contents, bool replace = true);

// The one policy for every file ds-plan writes (plan -o, tune --emit-config, visualize -o, run
// --report and --cluster-out, calibrate -o), checked before any work is done so a long run never
// ends in a refusal:
//   - "-" is standard output;
//   - the directory must exist and be a writable directory (named in the message if not);
//   - an existing path (a file, or a symbolic link even when it dangles) is replaced only with
//     --force; a directory or a symbolic-link loop is never replaced.
// `flag` names the option in the message ("-o", "--emit-config").
Status CheckOutputPath(const std::string& flag, const std::string& path, bool force);

namespace file_io_internal {
// While one is alive, `path` is the temporary a write in progress owns, and SIGINT, SIGTERM and
// SIGHUP (those not ignored) delete it, then take the action they had before (the default ends
// the process by that signal; the explore TUI's curses handler restores the terminal). Installed
// only for the write, so nothing else sees ds-plan's handlers. WriteFileAtomic holds one around
// its temporary; exposed for tests. One at a time (ds-plan writes one file at a time).
class ScopedTemporary {
 public:
  explicit ScopedTemporary(const std::string& path);
  ~ScopedTemporary();
  ScopedTemporary(const ScopedTemporary&) = delete;
  ScopedTemporary& operator=(const ScopedTemporary&) = delete;
};
}  // namespace file_io_internal

// WriteFileAtomic, or standard output for "-"; errors name `flag` like CheckOutputPath's. `force`
// is the command's --force: without it nothing that appeared at `path` since CheckOutputPath is
// replaced (the check is made again, atomically, at the rename).
Status WriteOutput(const std::string& flag, const std::string& path, const std::string& contents, bool force);

}  // namespace dsp
