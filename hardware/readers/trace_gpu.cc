#include "hardware/readers/trace_gpu.h"

#include <fmt/core.h>

#include "hardware/readers/bounded_input.h"

namespace parasim {

TraceGpu IdentifyTraceGpu(const ProfilerTrace& trace, const HardwareCatalog& catalog) {
  TraceGpu g;
  g.file = trace.file;
  g.device = trace.MainDevice();
  const TraceDevice* d = trace.Device(g.device);
  // A trace from CUDA_VISIBLE_DEVICES=N may list only device 0 while its kernels say N: one
  // entry, or several of one name, still names the GPU.
  if (d == nullptr && !trace.devices.empty()) {
    bool same = true;
    for (const TraceDevice& o : trace.devices) same = same && o.name == trace.devices[0].name;
    if (same) d = &trace.devices[0];
  }
  if (d == nullptr) return g;
  g.name = d->name;
  g.sms = d->sms;
  g.memory_bytes = d->memory_bytes;
  if (const GpuSpec* spec = catalog.FindGpuByDevice(d->name)) g.catalog_id = spec->id;
  return g;
}

std::string TraceGpu::Describe() const {
  if (name.empty()) return "a GPU the trace does not name (no deviceProperties)";
  return fmt::format("{} ({}, {} SMs, {:.1f} GiB)", name,
                     catalog_id.empty() ? "not in the catalog" : catalog_id, sms,
                     memory_bytes / 1073741824.0);
}

Status CheckTraceGpu(const TraceGpu& gpu, std::string_view scenario_gpu_id, bool allow_unknown) {
  if (gpu.catalog_id == scenario_gpu_id) return Status::Ok();
  if (gpu.catalog_id.empty()) {
    if (allow_unknown) return Status::Ok();
    if (gpu.name.empty()) {
      return InvalidArgument(InputError(
          gpu.file, 1, 1,
          fmt::format("the trace names no GPU (no deviceProperties), so it cannot be checked "
                      "against the scenario's {}; pass --force to compare anyway",
                      scenario_gpu_id)));
    }
    return InvalidArgument(InputError(
        gpu.file, 1, 1,
        fmt::format("the trace ran on \"{}\", which no GPU of the catalog lists in its "
                    "device_names (hardware/catalog/gpus.yaml); the scenario's GPU is {}; add the "
                    "name to the catalog entry it is, or pass --force",
                    gpu.name, scenario_gpu_id)));
  }
  return InvalidArgument(InputError(
      gpu.file, 1, 1,
      fmt::format("the trace ran on {}, the scenario on {}: a comparison across GPUs measures the "
                  "GPUs, not the model; compare with --set cluster.gpu={}, or pass --force",
                  gpu.Describe(), scenario_gpu_id, gpu.catalog_id)));
}

}  // namespace parasim
