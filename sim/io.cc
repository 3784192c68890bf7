#include "sim/io.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace parasim {

Status WriteFileAtomic(const std::string& path, std::string_view content) {
  std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return InvalidArgument(fmt::format("{}:1:1: error: cannot write the file", path));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Internal(fmt::format("{}: write failed", path));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return InvalidArgument(
        fmt::format("{}:1:1: error: cannot rename into place: {}", path, ec.message()));
  }
  return Status::Ok();
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(fmt::format("{}:1:1: error: cannot open the file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace parasim
