// The library workspaces a training process allocates once through PyTorch's caching allocator
// and holds for the whole run: cuBLAS's, one per handle and stream; Transformer Engine's, one
// for its GEMMs and one per stream of its grouped GEMM; and Megatron-LM's persistent buffer
// for the local attention's scores. They count in torch.cuda.max_memory_allocated (the
// CUDA context and NCCL's buffers do not: strategies/memory.h, the framework reserve).
//
//   const Workspaces w = WorkspacesOf(model, training, layout, cluster.gpu);
//   w.total()   // bytes on every GPU of the layout, e.g. 2 x 32 + 32 MiB on an H100
#pragma once

#include "hardware/spec.h"
#include "models/model_spec.h"
#include "models/training.h"
#include "strategies/layout.h"

namespace parasim {

// A process's cuBLAS handles: the forward runs on the Python thread and autograd runs a
// device's backward on a thread of its own, each with its own handle (PyTorch keeps a thread's
// handles in a thread-local pool, aten/src/ATen/cuda/CublasHandlePool.cpp) and so its own
// workspace, keyed by (handle, stream) in the same file.
inline constexpr int kBlasHandles = 2;
// Transformer Engine's grouped GEMM issues its GEMMs over 4 streams, each with a workspace of
// its own (transformer_engine/pytorch/module/base.py, get_multi_stream_cublas_workspace;
// _NUM_MAX_CUBLAS_STREAMS = 4).
inline constexpr int kTeGroupedGemmStreams = 4;

// PyTorch's default cuBLAS workspace per handle and stream when CUBLAS_WORKSPACE_CONFIG is not
// set: 32 MiB on Hopper and Blackwell (compute capability 9 and up; ROCm's hipBLAS default is
// 32 MiB too), else ":4096:2:16:8", 2 x 4096 KiB + 8 x 16 KiB (CublasHandlePool.cpp,
// parseChosenWorkspaceSize).
Bytes DefaultBlasWorkspace(const GpuSpec& g);
// Transformer Engine's cuBLAS workspace: 32 MiB + 1 KiB on compute capability 9 and up (32 MiB
// for NVFP4 GEMMs, 1 KiB for alignment and scales), 4 MiB before
// (transformer_engine/pytorch/module/base.py, get_cublas_workspace_size_bytes).
Bytes TransformerEngineWorkspace(const GpuSpec& g);

struct Workspaces {
  double blas = 0;                // kBlasHandles x the workspace per handle and stream
  double transformer_engine = 0;  // its GEMMs' and its grouped GEMM's streams'
  // Megatron-LM's global memory buffer ("mpu"), held once allocated: the local attention's
  // score matrix (megatron/core/transformer/dot_product_attention.py, matmul_input_buffer) or
  // a sequence-parallel all-gather (tensor_parallel/layers.py), whichever is larger.
  double megatron_buffer = 0;
  double total() const { return blas + transformer_engine + megatron_buffer; }
};

Workspaces WorkspacesOf(const ModelSpec& m, const Training& t, const Layout& l, const GpuSpec& g);

}  // namespace parasim
