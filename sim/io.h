// Files in and out, bounded and checked. Reading takes only a regular file (a directory, a FIFO
// or /dev/zero is refused before anything is read: a FIFO would block, /dev/zero never ends) and
// at most a stated number of bytes. Writing never leaves a half-written file: the text goes to a
// temporary file beside the target, every write and the close are checked, then it is renamed
// over the target. A target that exists and is not a regular file (/dev/stdout, /dev/null,
// /dev/full, a FIFO) is written in place, every write checked; a directory is refused.
//
//   PARASIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));          // at most 64 MiB
//   PARASIM_ASSIGN_OR_RETURN(std::string big, ReadFile(path, 256 << 20));
//   PARASIM_RETURN_IF_ERROR(WriteFileAtomic("report.html", html));
//   PARASIM_RETURN_IF_ERROR(RefuseOverwrite(out, {scenario_path}));      // never onto an input
//
// Errors are located at the file: "s.yaml:1:1: error: is a directory, not a regular file".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"

namespace parasim {

// What ReadFile reads by default: parasim's own inputs (scenarios, profiles, validation files,
// measurements) are kilobytes to a few megabytes.
inline constexpr int64_t kMaxInputBytes = int64_t{64} << 20;

// The whole of a regular file of at most `max_bytes`.
StatusOr<std::string> ReadFile(const std::string& path, int64_t max_bytes = kMaxInputBytes);
// Why `path` cannot be read as a regular file ("is a directory, not a regular file; ..."), or
// Ok: for readers that open the file themselves.
Status CheckRegularFile(const std::string& path);

Status WriteFileAtomic(const std::string& path, std::string_view content);

// Refuses to write `path` when it is a regular file this process has read (ReadFile) and not
// marked rewritable: an output never replaces an input, whether the command line or a scenario
// named it (a calibration profile). WriteFileAtomic checks it; writers that open files
// themselves call it.
Status RefuseRewritingInput(const std::string& path);
// Marks `path`, read by this process, as a file it may write again (sweep --resume appends to
// the results file it read).
void AllowRewrite(const std::string& path);
// Forgets what was read: each command (a CLI run, or one call of the Python module, whose
// process lives on) starts with none. What was read is kept per thread: a command reads its
// inputs on the thread that runs it.
void ForgetReads();

// Refuses `out` when it names the same file as one of `inputs` (however spelled: links and
// relative paths are followed), naming the flag that writes it.
Status RefuseOverwrite(const std::string& out, std::string_view flag,
                       const std::vector<std::string>& inputs);

}  // namespace parasim
