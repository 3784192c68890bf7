// Calibration kernels: STREAM-style copy and triad (bandwidth-bound, grid-stride, vectorised
// loads), the memory-bound kernels of a transformer step (GeLU, row softmax and its backward,
// LayerNorm; one block per row, the row staged in shared memory so HBM sees one read and one
// write per element), and an empty kernel for the launch overhead.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "tools/calibrate/kernels.h"

namespace {

constexpr int kRowThreads = 256;

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

// A stand-in for a communication kernel that holds its SMs for as long as the collective runs,
// as NCCL's do: one block per SM (the dynamic shared memory keeps a second block off), looping
// until the host sets *stop. `copy` = 0 spins on the flag only (a collective waiting on the
// network); 1 also streams its slice of src into dst (the HBM traffic of reducing and copying
// the data NVLink brings).
__global__ void BackgroundKernel(const float4* __restrict__ src, float4* __restrict__ dst,
                                 size_t n4_per_block, int copy, const volatile int* stop,
                                 unsigned long long* passes) {
  __shared__ int done;
  const size_t base = blockIdx.x * n4_per_block;
  unsigned long long n = 0;
  for (;;) {
    if (threadIdx.x == 0) done = *stop;
    __syncthreads();
    if (done) break;
    if (copy) {
      for (size_t i = threadIdx.x; i < n4_per_block; i += blockDim.x) dst[base + i] = src[base + i];
    } else {
      __nanosleep(500);
    }
    ++n;
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(passes, n);
}

// Uniform values in [-1, 1) from a hash of the index (a 32-bit integer finaliser, Wellons'
// "lowbias32"): matrix inputs must not be zeros, since an H100 multiplies zeros about 13% faster
// than random data (894 vs 788 TFLOP/s, device KINDS.md, 2026-10-28) and the fit would be too
// optimistic.
__device__ float HashUniform(size_t i, unsigned seed) {
  unsigned x = static_cast<unsigned>(i) ^ (static_cast<unsigned>(i >> 32) * 0x9E3779B9u) ^ seed;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return static_cast<float>(x) * (2.f / 4294967296.f) - 1.f;
}

template <typename T>
__global__ void FillKernel(T* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p[i] = T(HashUniform(i, seed));
  }
}

__device__ float Gelu(float x) {
  // tanh approximation (Hendrycks and Gimpel 2016), as Megatron and GPT-2 use it.
  const float k = 0.7978845608f;  // sqrt(2 / pi)
  return 0.5f * x * (1.f + tanhf(k * (x + 0.044715f * x * x * x)));
}

__global__ void GeluKernel(const __nv_bfloat162* __restrict__ x, __nv_bfloat162* __restrict__ y,
                           size_t n2) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n2; i += gridDim.x * blockDim.x) {
    float2 v = __bfloat1622float2(x[i]);
    y[i] = __floats2bfloat162_rn(Gelu(v.x), Gelu(v.y));
  }
}

// Sum or max over the block (kRowThreads threads); every thread gets the result.
template <bool kMax>
__device__ float BlockReduce(float v) {
  __shared__ float partial[kRowThreads / 32];
  for (int o = 16; o > 0; o /= 2) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, w) : v + w;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = partial[0];
  for (int i = 1; i < kRowThreads / 32; ++i) v = kMax ? fmaxf(v, partial[i]) : v + partial[i];
  __syncthreads();  // partial[] is reused by the next call
  return v;
}

__global__ void SoftmaxKernel(__nv_bfloat16* __restrict__ x, int cols) {
  extern __shared__ float row[];
  __nv_bfloat16* r = x + static_cast<size_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < cols; j += kRowThreads) {
    row[j] = __bfloat162float(r[j]);
    m = fmaxf(m, row[j]);
  }
  m = BlockReduce<true>(m);
  float s = 0;
  for (int j = threadIdx.x; j < cols; j += kRowThreads) {
    row[j] = __expf(row[j] - m);
    s += row[j];
  }
  s = BlockReduce<false>(s);
  const float inv = 1.f / s;
  for (int j = threadIdx.x; j < cols; j += kRowThreads) r[j] = __float2bfloat16(row[j] * inv);
}

__global__ void SoftmaxBackwardKernel(const __nv_bfloat16* __restrict__ p,
                                      __nv_bfloat16* __restrict__ dp, int cols) {
  extern __shared__ float row[];
  // p and dp of the row, staged as bf16 (as they came): 4 bytes a column, one HBM read each.
  __nv_bfloat16* ps = reinterpret_cast<__nv_bfloat16*>(row);
  __nv_bfloat16* gs = ps + cols;
  const size_t base = static_cast<size_t>(blockIdx.x) * cols;
  float dot = 0;
  for (int j = threadIdx.x; j < cols; j += kRowThreads) {
    ps[j] = p[base + j];
    gs[j] = dp[base + j];
    dot += __bfloat162float(ps[j]) * __bfloat162float(gs[j]);
  }
  dot = BlockReduce<false>(dot);
  for (int j = threadIdx.x; j < cols; j += kRowThreads) {
    dp[base + j] = __float2bfloat16(__bfloat162float(ps[j]) * (__bfloat162float(gs[j]) - dot));
  }
}

__global__ void LayerNormKernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y,
                                const float* __restrict__ gamma, const float* __restrict__ beta,
                                int cols) {
  extern __shared__ float row[];
  const size_t base = static_cast<size_t>(blockIdx.x) * cols;
  float s = 0;
  for (int j = threadIdx.x; j < cols; j += kRowThreads) {
    row[j] = __bfloat162float(x[base + j]);
    s += row[j];
  }
  const float mean = BlockReduce<false>(s) / cols;
  float v = 0;
  for (int j = threadIdx.x; j < cols; j += kRowThreads) {
    const float d = row[j] - mean;
    v += d * d;
  }
  const float rstd = rsqrtf(BlockReduce<false>(v) / cols + 1e-5f);
  for (int j = threadIdx.x; j < cols; j += kRowThreads) {
    y[base + j] = __float2bfloat16((row[j] - mean) * rstd * gamma[j] + beta[j]);
  }
}

int Blocks() {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return sms * 8;
}

size_t RowBytes(int cols) { return static_cast<size_t>(cols) * sizeof(float); }

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

extern "C" void CalibFill(void* p, size_t n, int element, unsigned seed, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  if (element == 0) FillKernel<<<Blocks(), 256, 0, st>>>(static_cast<__nv_bfloat16*>(p), n, seed);
  if (element == 1) FillKernel<<<Blocks(), 256, 0, st>>>(static_cast<__half*>(p), n, seed);
  if (element == 2) FillKernel<<<Blocks(), 256, 0, st>>>(static_cast<__nv_fp8_e4m3*>(p), n, seed);
}

extern "C" void CalibEmpty(void* stream) {
  EmptyKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>();
}

extern "C" int CalibBackground(const float* src, float* dst, size_t n_per_block, int blocks,
                               int copy, const volatile int* stop, unsigned long long* passes,
                               void* stream) {
  int device = 0, smem = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
  // More than half an SM's shared memory: two blocks cannot share an SM.
  const int bytes = smem / 2 + 1024;
  if (cudaFuncSetAttribute(BackgroundKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) !=
      cudaSuccess) {
    return 0;
  }
  BackgroundKernel<<<blocks, 512, bytes, static_cast<cudaStream_t>(stream)>>>(
      reinterpret_cast<const float4*>(src), reinterpret_cast<float4*>(dst), n_per_block / 4, copy,
      stop, passes);
  return cudaGetLastError() == cudaSuccess;
}

extern "C" void CalibGelu(const void* x, void* y, size_t n, void* stream) {
  GeluKernel<<<Blocks(), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat162*>(x), static_cast<__nv_bfloat162*>(y), n / 2);
}

extern "C" void CalibSoftmax(void* x, size_t rows, int cols, void* stream) {
  SoftmaxKernel<<<rows, kRowThreads, RowBytes(cols), static_cast<cudaStream_t>(stream)>>>(
      static_cast<__nv_bfloat16*>(x), cols);
}

extern "C" void CalibSoftmaxBackward(const void* p, void* dp, size_t rows, int cols, void* stream) {
  SoftmaxBackwardKernel<<<rows, kRowThreads, RowBytes(cols), static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(p), static_cast<__nv_bfloat16*>(dp), cols);
}

extern "C" void CalibLayerNorm(const void* x, void* y, const float* gamma, const float* beta,
                               size_t rows, int cols, void* stream) {
  LayerNormKernel<<<rows, kRowThreads, RowBytes(cols), static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(x), static_cast<__nv_bfloat16*>(y), gamma, beta, cols);
}
