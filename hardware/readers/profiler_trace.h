// What a PyTorch profiler (Kineto) trace says, as parasim keeps it: the GPU's events (kernels,
// copies and memsets with their stream, device and launch), the CPU's ProfilerStep#N ranges, the
// GPUs the trace describes (deviceProperties) and the rank that wrote it (distributedInfo).
// Everything else in the trace (CPU ops, runtime calls, flow arrows) is read and dropped, so a
// trace of any size costs memory in proportion to its GPU events only (40 bytes each, names
// kept once).
//
// Times are integer nanoseconds: Kineto writes microseconds with three decimals
// ("ts": 4800027888463.797), and an absolute timestamp in picoseconds would overflow int64.
//
//   PARASIM_ASSIGN_OR_RETURN(ProfilerTrace t, ReadJsonTrace("rank0.json.gz"));  // json_trace.h
//   for (const GpuEvent& e : t.events) Use(t.name(e), e.dur_ns, t.steps[e.step].number);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace parasim {

// Kineto's categories of GPU activity ("cat" of a complete event).
enum class GpuEventCategory : uint8_t { kKernel, kMemcpy, kMemset };

struct GpuEvent {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = -1;  // args.correlation: the id of the runtime call that launched it
  uint32_t name = 0;         // index into ProfilerTrace::names
  int32_t stream = -1;       // args.stream, else tid
  int16_t device = -1;       // args.device, else pid
  int16_t step = -1;         // index into ProfilerTrace::steps; -1: launched outside every step
  GpuEventCategory category = GpuEventCategory::kKernel;
  int64_t end_ns() const { return start_ns + dur_ns; }
};

// A CPU range "ProfilerStep#N" (torch.profiler's schedule marks each step so).
struct ProfilerStep {
  int64_t number = 0;  // N
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t end_ns() const { return start_ns + dur_ns; }
};

// One entry of the trace's deviceProperties list (CUDA's cudaDeviceProp, as Kineto copies it).
struct TraceDevice {
  int64_t id = -1;
  std::string name;           // "NVIDIA H800"
  int64_t sms = 0;            // numSms
  int64_t memory_bytes = 0;   // totalGlobalMem
  int64_t compute_major = 0;  // computeMajor
  int64_t compute_minor = 0;  // computeMinor
};

// distributedInfo: who wrote the trace.
struct TraceDistributed {
  std::string backend;  // "nccl"
  int64_t rank = -1;
  int64_t world_size = 0;
};

// A kernel launch seen on the CPU side (cuda_runtime / cuda_driver events): correlation id and
// the call's start, used to put each GPU event in the step that launched it.
struct TraceLaunch {
  int64_t correlation = 0;
  int64_t start_ns = 0;
};

struct ProfilerTrace {
  std::string file;
  std::vector<std::string> names;   // kernel names, each once
  std::vector<GpuEvent> events;     // in file order
  std::vector<ProfilerStep> steps;  // sorted by start
  std::vector<TraceDevice> devices;
  std::optional<TraceDistributed> distributed;
  int64_t events_read = 0;     // every entry of traceEvents, GPU or not
  int64_t names_repaired = 0;  // names whose invalid UTF-8 was replaced by U+FFFD
  int64_t bytes_read = 0;      // inflated bytes parsed
  // GPU events (kernels, copies, memsets) written as begin/end pairs ("ph": "B" then "E"): not
  // read, since the PyTorch profiler writes complete events ("ph": "X", with "dur"); the "B"s.
  int64_t gpu_begin_events = 0;

  std::string_view name(const GpuEvent& e) const { return names[e.name]; }
  // The device most GPU events ran on (-1 when there are none).
  int64_t MainDevice() const;
  // The deviceProperties entry of `id`, or null.
  const TraceDevice* Device(int64_t id) const;
};

// Collects a trace while it is read: interns names, keeps launches until Finish() has put each
// GPU event in its step.
class ProfilerTraceBuilder {
 public:
  explicit ProfilerTraceBuilder(std::string file);
  uint32_t InternName(std::string_view name);
  void AddEvent(const GpuEvent& e) { trace_.events.push_back(e); }
  void AddStep(const ProfilerStep& s) { trace_.steps.push_back(s); }
  void AddLaunch(const TraceLaunch& l) { launches_.push_back(l); }
  ProfilerTrace& trace() { return trace_; }
  // Sorts the steps, then gives each GPU event the step whose range holds its launch (by
  // correlation id; an event with no launch seen falls back to its own start time).
  ProfilerTrace Finish() &&;

 private:
  ProfilerTrace trace_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::vector<TraceLaunch> launches_;
};

// `s` with every invalid UTF-8 sequence replaced by U+FFFD; sets *repaired when it changed.
std::string RepairUtf8(std::string_view s, bool* repaired);

}  // namespace parasim
