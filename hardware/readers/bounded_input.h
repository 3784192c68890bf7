// Reading a user's measurement file with bounds: only regular files (a FIFO, /dev/zero or a
// directory is refused before it is opened), plain or gzipped (zlib tells them apart), and no more
// than a stated number of bytes once inflated, nor more than a stated ratio of inflated to
// compressed bytes (a gzip bomb: 4 MB that inflate to 4 GiB is refused after its first 64 MiB).
//
//   PARASIM_ASSIGN_OR_RETURN(std::unique_ptr<BoundedInput> in, BoundedInput::Open(path, {}));
//   std::vector<char> buf(1 << 20);
//   for (;;) {
//     PARASIM_ASSIGN_OR_RETURN(size_t n, in->Read(buf.data(), buf.size()));
//     if (n == 0) break;  // end of file
//   }
//
//   LineReader lines(in.get(), /*max_line_bytes=*/65536);
//   while (lines.Next()) { ... lines.line() ... lines.number() ... lines.too_long() ... }
//   PARASIM_RETURN_IF_ERROR(lines.status());
//
// Errors read "file:line:col: error: what, where", as every parasim input error does (1:1 when
// the whole file is at fault: "trace.json.gz:1:1: error: inflates past 4096 MiB, at compressed
// byte 4194304; ..."); InputError writes that form for the readers built on this one.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/status.h"

namespace parasim {

struct InputLimits {
  // Bytes read once inflated (the plain file's size when it is not compressed).
  int64_t max_bytes = int64_t{4} << 30;
  // Inflated over compressed bytes, checked once `ratio_after_bytes` have been inflated. Profiler
  // traces deflate 10-25x (HolisticTraceAnalysis df_index_resolver: 53.7 MB in 3.0 MB, 18x);
  // deflate's own limit is 1032x, which a file of one repeated byte reaches.
  double max_ratio = 200;
  int64_t ratio_after_bytes = int64_t{64} << 20;
  Status Validate() const;
};

// One file opened for reading; not copyable (it owns the zlib handle).
class BoundedInput {
 public:
  static StatusOr<std::unique_ptr<BoundedInput>> Open(const std::string& path,
                                                      const InputLimits& limits);
  ~BoundedInput();
  BoundedInput(const BoundedInput&) = delete;
  BoundedInput& operator=(const BoundedInput&) = delete;

  // Up to `size` bytes into `buf`; 0 at the end of the file. An error once a limit is passed or
  // the gzip stream is corrupt; the same error on every later call.
  StatusOr<size_t> Read(char* buf, size_t size);

  const std::string& path() const { return path_; }
  int64_t bytes_read() const { return bytes_read_; }  // inflated bytes handed out so far
  bool compressed() const { return compressed_; }
  int64_t file_bytes() const { return file_bytes_; }  // the file's size on disk

 private:
  BoundedInput(std::string path, gzFile f, const InputLimits& limits, int64_t file_bytes);
  std::string path_;
  gzFile file_;
  InputLimits limits_;
  int64_t file_bytes_ = 0;
  int64_t bytes_read_ = 0;
  bool compressed_ = false;
  Status error_;
};

// "file:line:col: error: what": the form of every error about a user's file (line and column
// 1-based; 1 and 1 when the file as a whole is at fault).
std::string InputError(std::string_view file, int64_t line, int64_t col, std::string_view what);

// The 1-based line and column of byte `offset` (0-based) of a file's text, inflated when it is
// gzipped, found by reading the file again up to there (for error messages only); 1:1 when the
// file cannot be read again.
std::pair<int64_t, int64_t> LineColumnAt(const std::string& path, int64_t offset,
                                         const InputLimits& limits);

// A whole (small) file read within `limits`: a user's YAML, a log.
StatusOr<std::string> ReadBoundedFile(const std::string& path, const InputLimits& limits);

// The lines of a BoundedInput ('\n' or "\r\n" ends a line). A line longer than `max_line_bytes`
// is not kept whole: line() holds its first max_line_bytes bytes, too_long() is set and
// line_bytes() tells its full length, so junk of any length costs no more memory than that.
class LineReader {
 public:
  LineReader(BoundedInput* in, size_t max_line_bytes);
  // The next line; false at the end of the input or on an error (then status() says which).
  bool Next();
  std::string_view line() const { return line_; }
  int64_t number() const { return number_; }  // 1-based
  bool too_long() const { return line_bytes_ > static_cast<int64_t>(max_line_bytes_); }
  int64_t line_bytes() const { return line_bytes_; }
  const Status& status() const { return status_; }

 private:
  bool Fill();
  BoundedInput* in_;
  size_t max_line_bytes_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  std::string line_;
  int64_t line_bytes_ = 0;
  int64_t number_ = 0;
  Status status_;
};

}  // namespace parasim
