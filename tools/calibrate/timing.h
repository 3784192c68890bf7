// What every part of the calibration program shares on the GPU: failing with a clear message
// (the program's exit codes: 1 for a CUDA failure, 2 for a bad argument or no GPU), checking CUDA
// calls, and timing a kernel sequence on a stream.
//
//   Check(cudaStreamCreate(&stream), "cudaStreamCreate");      // exits 1 with the CUDA error
//   auto [seconds, spread] = Time(stream, 20, [&] { CalibEmpty(stream); });
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <utility>

namespace parasim::calibrate {

// Untimed runs before the timed ones.
inline constexpr int kWarmup = 3;

// Prints "parasim-calibrate: `msg`" and exits with `code`.
[[noreturn]] void Fail(int code, const std::string& msg);

// Fails (1) with `what` and the CUDA error unless `e` is cudaSuccess.
void Check(cudaError_t e, const char* what);

// Median and spread ((max - min) / median) of `runs` timings of `fn` on `stream` (CUDA events),
// after kWarmup untimed runs.
std::pair<double, double> Time(cudaStream_t stream, int runs, const std::function<void()>& fn);

}  // namespace parasim::calibrate
