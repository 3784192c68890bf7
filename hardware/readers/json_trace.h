// The streaming reader of PyTorch profiler (Kineto) Chrome traces, `.json` or `.json.gz`.
//
// The JSON is read as a stream of tokens (RapidJSON's SAX reader over a bounded, inflating input:
// hardware/readers/bounded_input.h) and never held whole: memory grows with the GPU events kept,
// not with the file, so a 1 GB trace reads like a 50 MB one (about 1 s and 30 MB per 50 MB of
// trace: hardware/readers/README.md). Read from the trace:
//   - traceEvents: complete events ("ph": "X") of category kernel, gpu_memcpy and gpu_memset
//     (name, ts, dur, args.stream, args.device, args.correlation); ProfilerStep#N ranges of the
//     CPU; the launches (cuda_runtime, cuda_driver) that put each GPU event in its step;
//   - deviceProperties (name, numSms, totalGlobalMem, computeMajor/Minor);
//   - distributedInfo (backend, rank, world_size; a number, or one written as a string, "3").
// A bare array of events (Chrome's JSON Array Format) is read as traceEvents. GPU events written
// as begin/end pairs ("ph": "B" then "E", which Kineto does not write) are not read but counted
// (ProfilerTrace::gpu_begin_events), and a trace with only those is refused saying so.
//
// Refused, each as "file: what, where": a path that is not a regular file, a file that inflates
// past the limits (InputLimits), malformed JSON (with its byte offset), a GPU event whose dur is
// negative or absurd (over a day, or not finite) or whose ts is not a number (with the event's
// index, name and byte offset), a distributedInfo rank or world_size that is not a whole number
// (with its byte offset), no GPU events at all. Invalid UTF-8 in a name is replaced by
// U+FFFD (ProfilerTrace::names_repaired counts them); an invalid \u escape is an error.
//
//   PARASIM_ASSIGN_OR_RETURN(ProfilerTrace t, ReadJsonTrace("rank0.json.gz"));
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hardware/readers/bounded_input.h"
#include "hardware/readers/profiler_trace.h"
#include "sim/status.h"

namespace parasim {

struct JsonTraceOptions {
  InputLimits limits;
  // A GPU event longer than this is an error (a day: no kernel runs that long; 1e308 is a
  // corrupt number, not a duration).
  int64_t max_dur_ns = int64_t{86400} * 1000000000;
  // Longer kernel names are cut to this many bytes (CUTLASS names reach a few KB).
  size_t max_name_bytes = 16384;
  // false: a trace without GPU events is an error (the profiler ran without
  // ProfilerActivity.CUDA); true: an empty event list is returned.
  bool allow_no_gpu_events = false;
};

StatusOr<ProfilerTrace> ReadJsonTrace(const std::string& path,
                                      const JsonTraceOptions& options = {});

// Microseconds as Kineto writes them ("12", "4800027888463.797", "1.5e3") to integer
// nanoseconds, rounded to the nearest; nullopt when the text is not a finite number or the
// result would not fit in int64.
std::optional<int64_t> MicrosecondsToNanos(std::string_view text);

}  // namespace parasim
