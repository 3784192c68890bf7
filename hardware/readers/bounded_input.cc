#include "hardware/readers/bounded_input.h"

#include <fmt/core.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace parasim {
namespace {

// What a path names when it is not a regular file, for the refusal.
std::string_view FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

Status InputLimits::Validate() const {
  if (max_bytes <= 0) return InvalidArgument("InputLimits.max_bytes must be positive");
  if (!(max_ratio >= 1)) return InvalidArgument("InputLimits.max_ratio must be at least 1");
  if (ratio_after_bytes < 0) return InvalidArgument("InputLimits.ratio_after_bytes is negative");
  return Status::Ok();
}

StatusOr<std::unique_ptr<BoundedInput>> BoundedInput::Open(const std::string& path,
                                                           const InputLimits& limits) {
  PARASIM_RETURN_IF_ERROR(limits.Validate());
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return InvalidArgument(
        InputError(path, 1, 1, fmt::format("cannot open: {}", std::strerror(errno))));
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument(
        InputError(path, 1, 1,
                   fmt::format("is {}, not a regular file; give the path of a trace or log file",
                               FileKind(st.st_mode))));
  }
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return InvalidArgument(
        InputError(path, 1, 1, fmt::format("cannot open: {}", std::strerror(errno))));
  }
  gzbuffer(f, 1 << 18);
  return std::unique_ptr<BoundedInput>(
      new BoundedInput(path, f, limits, static_cast<int64_t>(st.st_size)));
}

BoundedInput::BoundedInput(std::string path, gzFile f, const InputLimits& limits,
                           int64_t file_bytes)
    : path_(std::move(path)), file_(f), limits_(limits), file_bytes_(file_bytes) {}

BoundedInput::~BoundedInput() { gzclose(file_); }

StatusOr<size_t> BoundedInput::Read(char* buf, size_t size) {
  if (!error_.ok()) return error_;
  const size_t want = std::min<size_t>(size, INT_MAX);
  const int n = gzread(file_, buf, static_cast<unsigned>(want));
  if (n < 0) {
    int code = 0;
    const char* what = gzerror(file_, &code);
    error_ = InvalidArgument(InputError(path_, 1, 1,
                                        fmt::format("the gzip stream is corrupt ({}), at byte {}",
                                                    what ? what : "?", bytes_read_)));
    return error_;
  }
  compressed_ = gzdirect(file_) == 0;
  if (n == 0 && compressed_) {
    // zlib hands out what it could inflate and reports a cut or damaged stream only here.
    int code = Z_OK;
    const char* what = gzerror(file_, &code);
    if (code == Z_BUF_ERROR) {
      error_ = InvalidArgument(InputError(
          path_, 1, 1,
          fmt::format("the gzip stream ends early, at byte {}: a truncated file?", bytes_read_)));
      return error_;
    }
    if (code != Z_OK) {
      error_ = InvalidArgument(InputError(path_, 1, 1,
                                          fmt::format("the gzip stream is corrupt ({}), at byte {}",
                                                      what ? what : "?", bytes_read_)));
      return error_;
    }
  }
  bytes_read_ += n;
  if (bytes_read_ > limits_.max_bytes) {
    error_ = InvalidArgument(InputError(
        path_, 1, 1,
        fmt::format("{} past {:.0f} MiB, at {} byte {}; profile fewer steps, or raise the limit "
                    "(InputLimits::max_bytes) if the file is meant to be this large",
                    compressed_ ? "inflates" : "runs", limits_.max_bytes / kMiB,
                    compressed_ ? "compressed" : "", compressed_ ? gzoffset(file_) : bytes_read_)));
    return error_;
  }
  if (compressed_ && bytes_read_ > limits_.ratio_after_bytes) {
    const int64_t raw = std::max<int64_t>(1, gzoffset(file_));
    const double ratio = static_cast<double>(bytes_read_) / static_cast<double>(raw);
    if (ratio > limits_.max_ratio) {
      error_ = InvalidArgument(InputError(
          path_, 1, 1,
          fmt::format(
              "inflates {:.0f}x ({:.0f} MiB from the first {:.1f} MiB), past the {:.0f}x that "
              "profiler output reaches: a gzip bomb? at compressed byte {}",
              ratio, bytes_read_ / kMiB, raw / kMiB, limits_.max_ratio, raw)));
      return error_;
    }
  }
  return static_cast<size_t>(n);
}

std::string InputError(std::string_view file, int64_t line, int64_t col, std::string_view what) {
  return fmt::format("{}:{}:{}: error: {}", file, line, col, what);
}

std::pair<int64_t, int64_t> LineColumnAt(const std::string& path, int64_t offset,
                                         const InputLimits& limits) {
  StatusOr<std::unique_ptr<BoundedInput>> in = BoundedInput::Open(path, limits);
  if (!in.ok()) return {1, 1};
  int64_t line = 1, line_start = 0, at = 0;
  std::vector<char> buf(1 << 16);
  while (at < offset) {
    StatusOr<size_t> n = (*in)->Read(buf.data(), buf.size());
    if (!n.ok() || *n == 0) break;
    const int64_t take = std::min<int64_t>(static_cast<int64_t>(*n), offset - at);
    for (int64_t i = 0; i < take; ++i) {
      if (buf[static_cast<size_t>(i)] == '\n') {
        ++line;
        line_start = at + i + 1;
      }
    }
    at += take;
  }
  return {line, offset - line_start + 1};
}

StatusOr<std::string> ReadBoundedFile(const std::string& path, const InputLimits& limits) {
  PARASIM_ASSIGN_OR_RETURN(std::unique_ptr<BoundedInput> in, BoundedInput::Open(path, limits));
  std::string text;
  std::vector<char> buf(1 << 16);
  for (;;) {
    PARASIM_ASSIGN_OR_RETURN(size_t n, in->Read(buf.data(), buf.size()));
    if (n == 0) return text;
    text.append(buf.data(), n);
  }
}

LineReader::LineReader(BoundedInput* in, size_t max_line_bytes)
    : in_(in), max_line_bytes_(max_line_bytes), buf_(1 << 16) {}

bool LineReader::Fill() {
  if (eof_ || !status_.ok()) return false;
  StatusOr<size_t> n = in_->Read(buf_.data(), buf_.size());
  if (!n.ok()) {
    status_ = n.status();
    return false;
  }
  pos_ = 0;
  end_ = *n;
  if (end_ == 0) eof_ = true;
  return end_ > 0;
}

bool LineReader::Next() {
  line_.clear();
  line_bytes_ = 0;
  bool any = false;
  for (;;) {
    if (pos_ == end_ && !Fill()) break;
    any = true;
    const char* start = buf_.data() + pos_;
    const void* nl = std::memchr(start, '\n', end_ - pos_);
    const size_t take = nl ? static_cast<const char*>(nl) - start : end_ - pos_;
    if (line_.size() < max_line_bytes_) {
      line_.append(start, std::min(take, max_line_bytes_ - line_.size()));
    }
    line_bytes_ += static_cast<int64_t>(take);
    pos_ += take;
    if (nl) {
      ++pos_;
      break;
    }
  }
  if (!status_.ok() || !any) return false;
  if (!line_.empty() && line_.back() == '\r') {
    line_.pop_back();
    --line_bytes_;
  }
  ++number_;
  return true;
}

}  // namespace parasim
