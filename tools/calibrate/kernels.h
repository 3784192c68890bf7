// Streaming and launch-overhead kernels of the calibration program (kernels.cu, built by nvcc).
#pragma once

#include <cstddef>

extern "C" {
// y[i] = x[i] over n floats.
void CalibCopy(const float* x, float* y, size_t n, void* stream);
// a[i] = b[i] + s * c[i] over n floats (STREAM triad).
void CalibTriad(float* a, const float* b, const float* c, float s, size_t n, void* stream);
// An empty kernel, to time launch overhead.
void CalibEmpty(void* stream);
}
