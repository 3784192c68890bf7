// Writes a generated Kineto trace (hardware/readers/synthetic_trace.h) of a given size:
//   synthetic_trace_main OUT.json[.gz] MEGABYTES [KERNELS_PER_STEP]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hardware/readers/synthetic_trace.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.json[.gz] MEGABYTES [KERNELS_PER_STEP]\n", argv[0]);
    return 2;
  }
  parasim::SyntheticTraceOptions o;
  o.target_bytes = static_cast<int64_t>(std::atof(argv[2]) * 1024 * 1024);
  if (argc > 3) o.kernels_per_step = std::atoll(argv[3]);
  auto s = parasim::WriteSyntheticTrace(argv[1], o);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.status().message().c_str());
    return 2;
  }
  std::printf("%s: %lld bytes, %lld events, %lld GPU events, %lld steps\n", argv[1],
              static_cast<long long>(s->bytes), static_cast<long long>(s->events),
              static_cast<long long>(s->kernels), static_cast<long long>(s->steps));
  return 0;
}
