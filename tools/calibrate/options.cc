#include "tools/calibrate/options.h"

#include <fmt/core.h>

#include <cstdio>
#include <iterator>

#include "sim/parse_units.h"

namespace parasim::calibrate {
namespace {

// --shapes or --attention (`flag`): comma-separated AxBxC with positive sizes up to 2^24.
Status ParseShapes(const std::string& flag, const std::string& list,
                   std::vector<std::array<int64_t, 3>>* into) {
  size_t pos = 0;
  while (pos < list.size()) {
    size_t end = list.find(',', pos);
    std::string item = list.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    long long x = 0, y = 0, z = 0;
    char extra = 0;
    if (std::sscanf(item.c_str(), "%lldx%lldx%lld%c", &x, &y, &z, &extra) != 3 || x <= 0 ||
        y <= 0 || z <= 0 || x > (1 << 24) || y > (1 << 24) || z > (1 << 24)) {
      return InvalidArgument(
          fmt::format("{}: '{}' is not {} with positive sizes up to 2^24", flag, item,
                      flag == "--shapes" ? "MxNxK (e.g. 4096x4096x12288)"
                                         : "BATCHxSEQxHEAD_DIM (e.g. 32x2048x128)"));
    }
    into->push_back({x, y, z});
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return Status::Ok();
}

// --only: comma-separated parts of kParts.
Status ParseParts(const std::string& list, std::vector<std::string>* into) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = std::min(list.find(',', pos), list.size());
    std::string part = list.substr(pos, end - pos);
    if (std::find(std::begin(kParts), std::end(kParts), part) == std::end(kParts)) {
      return InvalidArgument(
          fmt::format("--only: '{}' is not a part; parts are gemm, memory, attention, "
                      "host, collectives, contention, sustained (comma-separated)",
                      part));
    }
    into->push_back(part);
    pos = end + 1;
  }
  return Status::Ok();
}

Status ParseMaxBytes(const char* arg, size_t* out) {
  StatusOr<Bytes> b = ParseBytes(arg);
  if (!b.ok() || b->bytes() < 1024 || b->bytes() > 64.0 * (1ull << 30)) {
    return InvalidArgument(
        fmt::format("--max-bytes: '{}' is not a size between 1KiB and 64GiB (e.g. 4GiB)", arg));
  }
  *out = static_cast<size_t>(b->bytes());
  return Status::Ok();
}

}  // namespace

StatusOr<Options> ParseOptions(int argc, const char* const* argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      o.out = argv[++i];
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--fp8-shapes") {
      o.fp8_shapes = true;
    } else if ((a == "--shapes" || a == "--attention") && i + 1 < argc) {
      PARASIM_RETURN_IF_ERROR(
          ParseShapes(a, argv[++i], a == "--shapes" ? &o.shapes : &o.attention));
    } else if (a == "--only" && i + 1 < argc) {
      PARASIM_RETURN_IF_ERROR(ParseParts(argv[++i], &o.only));
    } else if (a == "--max-bytes" && i + 1 < argc) {
      PARASIM_RETURN_IF_ERROR(ParseMaxBytes(argv[++i], &o.max_bytes));
    } else {
      return InvalidArgument(
          fmt::format("unknown argument '{}'; usage: parasim-calibrate --out FILE "
                      "[--shapes MxNxK,...] [--fp8-shapes] [--attention BxSxD,...] "
                      "[--max-bytes SIZE] [--only PART,...] [--quick]",
                      a));
    }
  }
  return o;
}

}  // namespace parasim::calibrate
