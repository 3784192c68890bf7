// A generated Kineto trace of any size, for measuring the trace reader (time and memory on a
// 50 MB or 1 GB file) and for tests that need many events with known sums. The trace looks as
// PyTorch 2.x writes it: deviceProperties, distributedInfo, ProfilerStep#N annotations, CPU ops,
// cudaLaunchKernel calls with correlation ids, flow arrows, and GPU kernels on a compute stream
// (GEMM, attention, element-wise, copies) and a communication stream (NCCL), the last beside the
// compute as in an overlapped step. Numbers are deterministic (a fixed pseudo-random sequence).
//
//   SyntheticTraceOptions o{.target_bytes = 50 << 20};
//   PARASIM_ASSIGN_OR_RETURN(SyntheticTraceStats s, WriteSyntheticTrace("big.json", o));
//
// Command line: bazel-bin/hardware/readers/synthetic_trace_main OUT.json[.gz] MEGABYTES [STEPS]
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "sim/status.h"

namespace parasim {

struct SyntheticTraceOptions {
  int64_t target_bytes = int64_t{50} << 20;  // stop once the (uncompressed) text is this long
  int64_t kernels_per_step = 2000;
  bool gzip = false;  // also implied by a path ending in .gz
};

struct SyntheticTraceStats {
  int64_t bytes = 0;    // uncompressed
  int64_t events = 0;   // entries of traceEvents
  int64_t kernels = 0;  // GPU events (kernels, copies)
  int64_t steps = 0;
  std::map<std::string, int64_t> dur_ns_by_name;  // what a reader must sum
  std::map<std::string, int64_t> count_by_name;
};

StatusOr<SyntheticTraceStats> WriteSyntheticTrace(const std::string& path,
                                                  const SyntheticTraceOptions& options);

}  // namespace parasim
