// The plan fuzz target's properties (tests/fuzz/plan_property.h) over seeded random inputs, in
// the ordinary test suite (the libFuzzer target needs clang: tools/fuzz.sh).
#include "tests/fuzz/plan_property.h"

#include <doctest/doctest.h>

#include <random>
#include <vector>

namespace parasim {
namespace {

TEST_CASE("run and sweep of 200 generated scenarios: finite, non-negative, MFU <= 1") {
  std::mt19937_64 gen(62);  // fixed seed: the same scenarios every run
  int checked = 0;
  for (int i = 0; i < 200; ++i) {
    std::vector<uint8_t> bytes(32);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(gen());
    const std::string why = CheckPlanProperties(bytes.data(), bytes.size());
    CAPTURE(i);
    CHECK_MESSAGE(why.empty(), why);
    ++checked;
  }
  CHECK(checked == 200);
}

}  // namespace
}  // namespace parasim
