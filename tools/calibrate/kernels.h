// Kernels of the calibration program (kernels.cu, built by nvcc): streaming copy and triad, the
// memory-bound kernels a training step runs (GeLU, row softmax and its backward, LayerNorm), and
// an empty kernel for the launch overhead, and a stand-in for a communication kernel that holds
// SMs while it runs. bf16 tensors are passed as void*.
#pragma once

#include <cstddef>

extern "C" {
// y[i] = x[i] over n floats.
void CalibCopy(const float* x, float* y, size_t n, void* stream);
// n elements of p set to uniform values in [-1, 1) from a hash of (index, seed); element 0 = bf16,
// 1 = fp16, 2 = fp8 E4M3.
void CalibFill(void* p, size_t n, int element, unsigned seed, void* stream);
// a[i] = b[i] + s * c[i] over n floats (STREAM triad).
void CalibTriad(float* a, const float* b, const float* c, float s, size_t n, void* stream);
// An empty kernel, to time launch overhead.
void CalibEmpty(void* stream);
// Starts a communication stand-in on `blocks` SMs (one block each) that runs until *stop (host
// mapped memory) is set: copy = 0 spins, 1 streams src into dst, n_per_block floats per block
// (a multiple of 4), each block its own slice. Adds the passes made to *passes. 0 when it could
// not be launched.
int CalibBackground(const float* src, float* dst, size_t n_per_block, int blocks, int copy,
                    const volatile int* stop, unsigned long long* passes, void* stream);
// y = GeLU(x) (tanh form) over n bf16 values (n even): reads 2n bytes, writes 2n.
void CalibGelu(const void* x, void* y, size_t n, void* stream);
// Row softmax in place over rows x cols bf16 (fp32 math, cols <= kCalibMaxRow): each element
// read once and written once.
void CalibSoftmax(void* x, size_t rows, int cols, void* stream);
// Softmax backward in place: dp <- p * (dp - sum(dp * p)) per row (bf16, cols <= kCalibMaxRow):
// reads p and dp, writes dp.
void CalibSoftmaxBackward(const void* p, void* dp, size_t rows, int cols, void* stream);
// LayerNorm of rows x cols bf16 into y, fp32 gamma and beta (cols <= kCalibMaxRow): reads x,
// writes y.
void CalibLayerNorm(const void* x, void* y, const float* gamma, const float* beta, size_t rows,
                    int cols, void* stream);
}

// Longest row the softmax and LayerNorm kernels take (a row is held in 48 KiB of shared memory
// as fp32, the default per-block limit).
inline constexpr int kCalibMaxRow = 12288;
