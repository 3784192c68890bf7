#include "sim/io.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace parasim {
namespace {

// The regular files this process has read (by device and inode, however their paths were
// spelled), with the path each was read by; and those of them it may write again.
struct ReadFiles {
  std::mutex mu;
  std::map<std::pair<dev_t, ino_t>, std::string> read;
  std::set<std::pair<dev_t, ino_t>> rewritable;
};
// Per thread: a command runs on the thread that called it (the Python module runs calls of
// several threads at once), and reads its inputs there.
ReadFiles& Reads() {
  thread_local ReadFiles r;
  return r;
}

// What a path names when it is not a regular file, for the refusal.
std::string_view KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "is a character device";
  if (S_ISBLK(mode)) return "is a block device";
  if (S_ISSOCK(mode)) return "is a socket";
  return "is not a regular file";
}

Status NotRegular(const std::string& path, mode_t mode) {
  return InvalidArgument(fmt::format(
      "{}:1:1: error: {}, not a regular file; give the path of a file", path, KindOf(mode)));
}

// Writes all of `content` to `fd`, retrying short writes; the errno of a failure, else 0.
int WriteAll(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    content.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

Status WriteFailed(const std::string& path, int err) {
  return Internal(
      fmt::format("{}:1:1: error: cannot write the file: {}", path, std::strerror(err)));
}

// A device, FIFO or other special file, written in place.
Status WriteInPlace(const std::string& path, std::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return InvalidArgument(
        fmt::format("{}:1:1: error: cannot open for writing: {}", path, std::strerror(errno)));
  }
  int err = WriteAll(fd, content);
  if (::close(fd) != 0 && err == 0) err = errno;
  return err == 0 ? Status::Ok() : WriteFailed(path, err);
}

}  // namespace

Status CheckRegularFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return InvalidArgument(
        fmt::format("{}:1:1: error: cannot open the file: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
  return Status::Ok();
}

StatusOr<std::string> ReadFile(const std::string& path, int64_t max_bytes) {
  // Checked by path first: opening a FIFO for reading blocks until a writer comes.
  PARASIM_RETURN_IF_ERROR(CheckRegularFile(path));
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return InvalidArgument(
        fmt::format("{}:1:1: error: cannot open the file: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {  // swapped since the check
    ::close(fd);
    return NotRegular(path, st.st_mode);
  }
  std::string text;
  if (st.st_size > 0 && st.st_size <= max_bytes) text.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      // Reading a directory fails with EISDIR where stat said otherwise (a race).
      return InvalidArgument(
          fmt::format("{}:1:1: error: cannot read the file: {}", path, std::strerror(err)));
    }
    if (n == 0) break;
    if (static_cast<int64_t>(text.size()) + n > max_bytes) {
      ::close(fd);
      return InvalidArgument(fmt::format(
          "{}:1:1: error: the file is over {} MiB, the most this input may be; is it the "
          "right file?",
          path, max_bytes >> 20));
    }
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  {
    ReadFiles& r = Reads();
    std::lock_guard<std::mutex> lock(r.mu);
    r.read.emplace(std::make_pair(st.st_dev, st.st_ino), path);
  }
  return text;
}

Status RefuseRewritingInput(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return Status::Ok();
  ReadFiles& r = Reads();
  std::lock_guard<std::mutex> lock(r.mu);
  const auto id = std::make_pair(st.st_dev, st.st_ino);
  const auto it = r.read.find(id);
  if (it == r.read.end() || r.rewritable.count(id)) return Status::Ok();
  return InvalidArgument(fmt::format(
      "{}:1:1: error: would overwrite {}, which this command read as an input (a file its "
      "scenario names counts); write the output to another file",
      path, it->second));
}

void ForgetReads() {
  ReadFiles& r = Reads();
  std::lock_guard<std::mutex> lock(r.mu);
  r.read.clear();
  r.rewritable.clear();
}

void AllowRewrite(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  ReadFiles& r = Reads();
  std::lock_guard<std::mutex> lock(r.mu);
  r.rewritable.insert(std::make_pair(st.st_dev, st.st_ino));
}

Status WriteFileAtomic(const std::string& path, std::string_view content) {
  PARASIM_RETURN_IF_ERROR(RefuseRewritingInput(path));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) {
      return InvalidArgument(
          fmt::format("{}:1:1: error: is a directory; give the path of a file to write", path));
    }
    return WriteInPlace(path, content);
  }
  const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    return InvalidArgument(
        fmt::format("{}:1:1: error: cannot write the file: {}", path, std::strerror(errno)));
  }
  int err = WriteAll(fd, content);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    std::remove(tmp.c_str());
    return WriteFailed(path, err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    return InvalidArgument(
        fmt::format("{}:1:1: error: cannot rename into place: {}", path, std::strerror(err)));
  }
  return Status::Ok();
}

Status RefuseOverwrite(const std::string& out, std::string_view flag,
                       const std::vector<std::string>& inputs) {
  if (out.empty()) return Status::Ok();
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path o = fs::weakly_canonical(out, ec);
  for (const std::string& in : inputs) {
    if (in.empty()) continue;
    std::error_code e1;
    const bool same =
        fs::equivalent(out, in, e1) || (!ec && fs::weakly_canonical(in, e1) == o && !e1);
    if (same) {
      return InvalidArgument(fmt::format(
          "{}:1:1: error: {} would overwrite {}, an input of this command; write the output to "
          "another file",
          out, flag, in));
    }
  }
  return Status::Ok();
}

}  // namespace parasim
