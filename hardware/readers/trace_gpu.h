// The GPU a profiler trace ran on, from its deviceProperties (the entry of the device whose
// kernels the trace holds), mapped to the hardware catalog by `device_names`
// (hardware/catalog/gpus.yaml), and checked against the scenario's GPU: a trace from an A100
// compared with an H100 scenario is refused with both names, not reported as a +940% error.
//
//   PARASIM_ASSIGN_OR_RETURN(HardwareCatalog cat, LoadHardwareCatalog());
//   TraceGpu g = IdentifyTraceGpu(trace, cat);
//   PARASIM_RETURN_IF_ERROR(CheckTraceGpu(g, scenario.cluster.gpu.id));
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hardware/readers/profiler_trace.h"
#include "hardware/spec.h"
#include "sim/status.h"

namespace parasim {

struct TraceGpu {
  std::string file;
  int64_t device = -1;     // the CUDA device id of the trace's kernels
  std::string name;        // deviceProperties name ("NVIDIA H800"); empty when not stated
  std::string catalog_id;  // the catalog GPU whose device_names hold `name`; empty if none
  int64_t sms = 0;
  int64_t memory_bytes = 0;
  // "NVIDIA H800 (h800, 132 SMs, 79.1 GiB)", or what is missing.
  std::string Describe() const;
};

TraceGpu IdentifyTraceGpu(const ProfilerTrace& trace, const HardwareCatalog& catalog);

// Ok when the trace's GPU is the scenario's (by catalog id); else an error naming both and how
// to compare against the trace's own GPU. A trace that names no GPU, or one the catalog does not
// list, is an error too unless `allow_unknown` (then the caller says it could not check).
Status CheckTraceGpu(const TraceGpu& gpu, std::string_view scenario_gpu_id,
                     bool allow_unknown = false);

}  // namespace parasim
