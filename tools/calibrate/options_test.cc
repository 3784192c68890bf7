#include "tools/calibrate/options.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace parasim::calibrate {
namespace {

StatusOr<Options> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "parasim-calibrate");
  return ParseOptions(static_cast<int>(args.size()), args.data());
}

TEST_CASE("the defaults measure every part into measurements.yaml") {
  auto o = Parse({});
  REQUIRE(o.ok());
  CHECK(o->out == "measurements.yaml");
  CHECK(o->max_bytes == size_t{4} << 30);
  CHECK_FALSE(o->quick);
  for (const char* part : kParts) CHECK(o->Runs(part));
}

TEST_CASE("every flag is read") {
  auto o = Parse({"--out", "m.yaml", "--quick", "--fp8-shapes", "--shapes", "8x16x32,1x2x3",
                  "--attention", "32x2048x128", "--only", "gemm,sustained", "--max-bytes", "1GiB"});
  REQUIRE_MESSAGE(o.ok(), o.status().message());
  CHECK(o->out == "m.yaml");
  CHECK(o->quick);
  CHECK(o->fp8_shapes);
  REQUIRE(o->shapes.size() == 2);
  CHECK(o->shapes[1] == std::array<int64_t, 3>{1, 2, 3});
  REQUIRE(o->attention.size() == 1);
  CHECK(o->attention[0] == std::array<int64_t, 3>{32, 2048, 128});
  CHECK(o->Runs("gemm"));
  CHECK(o->Runs("sustained"));
  CHECK_FALSE(o->Runs("collectives"));
  CHECK(o->max_bytes == size_t{1} << 30);
}

TEST_CASE("bad arguments are refused with what was expected") {
  struct Bad {
    std::vector<const char*> args;
    std::string message;
  };
  for (const Bad& b : std::vector<Bad>{
           {{"--shapes", "8x16"},
            "--shapes: '8x16' is not MxNxK (e.g. 4096x4096x12288) with positive sizes up to 2^24"},
           {{"--attention", "1x2x0"}, "--attention: '1x2x0' is not BATCHxSEQxHEAD_DIM"},
           {{"--shapes", "1x2x3x"}, "--shapes: '1x2x3x'"},
           {{"--only", "gemm,nccl"}, "--only: 'nccl' is not a part; parts are gemm, memory"},
           {{"--only", "gemm,"}, "--only: '' is not a part"},
           {{"--max-bytes", "512B"}, "--max-bytes: '512B' is not a size between 1KiB and 64GiB"},
           {{"--verbose"}, "unknown argument '--verbose'; usage: parasim-calibrate --out FILE"},
           {{"--out"}, "unknown argument '--out'"},  // a flag without its value
       }) {
    CAPTURE(b.message);
    auto o = Parse(b.args);
    REQUIRE_FALSE(o.ok());
    CHECK(o.status().message().find(b.message) == 0);
  }
}

}  // namespace
}  // namespace parasim::calibrate
