// libFuzzer target: arbitrary bytes choose a valid scenario that is replayed (run) or swept
// (sweep), and every output holds its properties (tests/fuzz/plan_property.h): no crash, no
// NaN, infinity or negative time, MFU at most 1, the sweep's best first.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/fuzz/plan_property.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string why = parasim::CheckPlanProperties(data, size);
  if (!why.empty()) {
    std::fprintf(stderr, "property failed: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
