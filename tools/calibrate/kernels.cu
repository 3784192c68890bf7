// Calibration kernels: STREAM-style copy and triad (bandwidth-bound, grid-stride, vectorised
// loads) and an empty kernel for the launch overhead.
#include <cuda_runtime.h>

#include "tools/calibrate/kernels.h"

namespace {

__global__ void CopyKernel(const float4* __restrict__ x, float4* __restrict__ y, size_t n4) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
    y[i] = x[i];
  }
}

__global__ void TriadKernel(float4* __restrict__ a, const float4* __restrict__ b,
                            const float4* __restrict__ c, float s, size_t n4) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
    float4 u = b[i], v = c[i];
    a[i] = make_float4(u.x + s * v.x, u.y + s * v.y, u.z + s * v.z, u.w + s * v.w);
  }
}

__global__ void EmptyKernel() {}

int Blocks() {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return sms * 8;
}

}  // namespace

extern "C" void CalibCopy(const float* x, float* y, size_t n, void* stream) {
  CopyKernel<<<Blocks(), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n / 4);
}

extern "C" void CalibTriad(float* a, const float* b, const float* c, float s, size_t n,
                           void* stream) {
  TriadKernel<<<Blocks(), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      reinterpret_cast<float4*>(a), reinterpret_cast<const float4*>(b),
      reinterpret_cast<const float4*>(c), s, n / 4);
}

extern "C" void CalibEmpty(void* stream) {
  EmptyKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>();
}
