#include "hardware/readers/test_files.h"

#include <fmt/core.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace parasim::testing {
namespace {

// One complete gzip member holding `text`.
std::string GzipMember(std::string_view text) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

std::string TempFile(std::string_view name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return fmt::format("{}/{}", dir ? dir : "/tmp", name);
}

void WriteText(const std::string& path, std::string_view text) {
  std::ofstream f(path, std::ios::binary);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

void WriteGzip(const std::string& path, std::string_view text) {
  WriteText(path, GzipMember(text));
}

void WriteGzipBomb(const std::string& path, std::string_view prefix, int64_t inflated_bytes) {
  std::ofstream f(path, std::ios::binary);
  const std::string head = GzipMember(prefix);
  f.write(head.data(), static_cast<std::streamsize>(head.size()));
  const int64_t mib = int64_t{1} << 20;
  const std::string member = GzipMember(std::string(static_cast<size_t>(mib), ' '));
  for (int64_t done = static_cast<int64_t>(prefix.size()); done < inflated_bytes; done += mib) {
    f.write(member.data(), static_cast<std::streamsize>(member.size()));
  }
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string Fixture(std::string_view relative) {
  return fmt::format("tests/fixtures/{}", relative);
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace parasim::testing
