// The calibration program's command line (parasim-calibrate, calibrate.cc): what to measure,
// at which extra shapes, up to which size, and where to write it. Plain C++, tested without a
// GPU.
//
//   StatusOr<Options> o = ParseOptions(argc, argv);  // an error is the message to exit 2 with
//   if (o->Runs("gemm")) ...
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/status.h"

namespace parasim::calibrate {

struct Options {
  std::string out = "measurements.yaml";
  std::vector<std::array<int64_t, 3>> shapes;
  std::vector<std::array<int64_t, 3>> attention;  // batch x seq x head_dim
  bool fp8_shapes = false;
  size_t max_bytes = size_t{4} << 30;
  bool quick = false;
  // Parts to run (--only); all when empty.
  std::vector<std::string> only;
  bool Runs(const std::string& part) const {
    return only.empty() || std::find(only.begin(), only.end(), part) != only.end();
  }
};

// The parts --only names, in the order the program runs them.
inline constexpr const char* kParts[] = {"gemm",        "memory",     "attention", "host",
                                         "collectives", "contention", "sustained"};

// The options of `argv[1..argc)`: --out FILE, --quick, --fp8-shapes, --shapes MxNxK,...,
// --attention BxSxD,..., --only PART,..., --max-bytes SIZE. The first bad argument is an error.
StatusOr<Options> ParseOptions(int argc, const char* const* argv);

}  // namespace parasim::calibrate
