#include "hardware/readers/synthetic_trace.h"

#include <fmt/core.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace parasim {
namespace {

// The kernels of the generated step, their stream and typical length (ns). Names as the
// libraries write them (cuBLAS on Hopper, FlashAttention-2, ATen, NCCL 2.19+).
struct KernelTemplate {
  std::string_view cat, name;
  int stream;
  int64_t dur_ns;
};
constexpr std::array<KernelTemplate, 6> kKernels = {{
    {"kernel", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NTT", 7, 480000},
    {"kernel",
     "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
     "cutlass::bfloat16_t> >(Flash_fwd_params)",
     7, 210000},
    {"kernel",
     "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add"
     "<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::"
     "BFloat16>, std::array<char*, 3ul>)",
     7, 35000},
    {"kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 20,
     300000},
    {"gpu_memcpy", "Memcpy DtoD (Device -> Device)", 7, 12000},
    {"kernel",
     "void at::native::(anonymous namespace)::layer_norm_kernel<c10::BFloat16, float>("
     "long, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, "
     "float*, float*, c10::BFloat16*)",
     7, 41000},
}};

std::string Micros(int64_t ns) { return fmt::format("{}.{:03d}", ns / 1000, ns % 1000); }

class Writer {
 public:
  explicit Writer(gzFile f) : f_(f) {}
  void Put(std::string_view s) {
    if (gzwrite(f_, s.data(), static_cast<unsigned>(s.size())) != static_cast<int>(s.size())) {
      ok_ = false;
    }
    bytes_ += static_cast<int64_t>(s.size());
  }
  int64_t bytes() const { return bytes_; }
  bool ok() const { return ok_; }

 private:
  gzFile f_;
  int64_t bytes_ = 0;
  bool ok_ = true;
};

constexpr std::string_view kHead = R"({
  "schemaVersion": 1,
  "deviceProperties": [
    {
      "id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472,
      "numSms": 132, "sharedMemPerBlockOptin": 232448
    }
  ],
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},
  "traceEvents": [
)";

// One launch: the CPU op, its runtime call, the flow arrow and the kernel.
void WriteLaunch(Writer& w, const KernelTemplate& k, int64_t id, int64_t cpu_ns, int64_t gpu_ns,
                 int64_t dur_ns) {
  w.Put(fmt::format(
      R"(  {{
    "ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": 4242,
    "ts": {}, "dur": 9.125,
    "args": {{
      "External id": {},"Record function id": 0, "Ev Idx": {}, "Sequence number": {}
    }}
  }},
  {{
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
    "ts": {}, "dur": 4.250,
    "args": {{
      "External id": {}, "cbid": 211, "correlation": {}
    }}
  }},
  {{
    "ph": "s", "id": {}, "pid": 4242, "tid": 4242, "ts": {},
    "cat": "ac2g", "name": "ac2g"
  }},
  {{
    "ph": "X", "cat": "{}", "name": "{}", "pid": 0, "tid": {},
    "ts": {}, "dur": {},
    "args": {{
      "External id": {}, "queued": 0, "device": 0, "context": 1, "stream": {}, "correlation": {}, "registers per thread": 128, "shared memory": 0, "blocks per SM": 1.939394, "warps per SM": 7.757576, "grid": [256, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 12
    }}
  }},
)",
      Micros(cpu_ns), id, id, id, Micros(cpu_ns + 2000), id, id, id, Micros(cpu_ns + 2000), k.cat,
      k.name, k.stream, Micros(gpu_ns), Micros(dur_ns), id, k.stream, id));
}

}  // namespace

StatusOr<SyntheticTraceStats> WriteSyntheticTrace(const std::string& path,
                                                  const SyntheticTraceOptions& options) {
  const bool gz = options.gzip || path.ends_with(".gz");
  gzFile f = gzopen(path.c_str(), gz ? "wb6" : "wbT");
  if (f == nullptr) return InvalidArgument(fmt::format("{}: cannot write", path));
  Writer w(f);
  SyntheticTraceStats stats;
  w.Put(kHead);
  const int64_t t0 = int64_t{1740461679000000} * 1000;  // ns since the epoch, as Kineto writes
  int64_t cpu = t0, compute_free = t0, comm_free = t0, step_start = t0, id = 1;
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  int64_t in_step = 0;
  while (w.bytes() < options.target_bytes) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    const KernelTemplate& k = kKernels[(rng >> 33) % kKernels.size()];
    const int64_t dur = k.dur_ns / 2 + static_cast<int64_t>((rng >> 13) % k.dur_ns);
    int64_t& free = k.stream == 20 ? comm_free : compute_free;
    const int64_t start = std::max(free, cpu + 6000);
    WriteLaunch(w, k, id, cpu, start, dur);
    free = start + dur;
    stats.dur_ns_by_name[std::string(k.name)] += dur;
    ++stats.count_by_name[std::string(k.name)];
    ++stats.kernels;
    stats.events += 4;
    cpu += 15000;
    ++id;
    if (++in_step == options.kernels_per_step || w.bytes() >= options.target_bytes) {
      // The step ends in a synchronisation (the loss read back): the CPU waits for the GPU.
      cpu = std::max({cpu, compute_free, comm_free});
      ++stats.steps;
      w.Put(fmt::format(R"(  {{
    "ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 4242, "tid": 4242,
    "ts": {}, "dur": {},
    "args": {{
      "External id": {}, "Record function id": 0, "Ev Idx": 0
    }}
  }},
)",
                        stats.steps, Micros(step_start), Micros(cpu - step_start), id));
      ++stats.events;
      step_start = cpu;
      in_step = 0;
    }
  }
  w.Put(R"(  {
    "name": "Record Window End", "ph": "i", "s": "g",
    "pid": "", "tid": "", "ts": 1740461679999999.000
  }
  ],
  "traceName": "synthetic.json"
}
)");
  ++stats.events;
  stats.bytes = w.bytes();
  const bool ok = w.ok() && gzclose(f) == Z_OK;
  if (!ok) return InvalidArgument(fmt::format("{}: write failed (disk full?)", path));
  return stats;
}

}  // namespace parasim
