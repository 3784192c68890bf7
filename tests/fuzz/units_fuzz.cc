// libFuzzer target: the unit parsers (sizes, rates, FLOP rates, times, counts) never crash, hang
// or return a non-finite value.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/parse_units.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  if (auto b = parasim::ParseBytes(s); b.ok() && !std::isfinite(b->bytes())) std::abort();
  if (auto r = parasim::ParseBandwidth(s); r.ok() && !std::isfinite(r->bytes_per_second())) {
    std::abort();
  }
  if (auto f = parasim::ParseFlopRate(s); f.ok() && !std::isfinite(f->flops_per_second())) {
    std::abort();
  }
  (void)parasim::ParseDuration(s);
  if (auto c = parasim::ParseCount(s); c.ok() && !std::isfinite(*c)) std::abort();
  return 0;
}
