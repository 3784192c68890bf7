// libFuzzer target: nccl-tests logs and measurement files parse or are refused, never crash.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "hardware/measurements.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto m = parasim::ParseNcclTestsLog(text, "all_reduce_perf.log"); m.ok()) {
    for (const auto& c : m->collectives) {
      if (!(c.time.seconds() > 0) || !std::isfinite(c.bytes.bytes())) std::abort();
    }
  }
  (void)parasim::ParseMeasurements(text, "m.yaml");
  return 0;
}
