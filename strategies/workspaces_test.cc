#include "strategies/workspaces.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

struct Setup {
  HardwareCatalog hw = *LoadHardwareCatalog();
  ModelSpec m;
  Training t;
  Layout l;
  Setup() {
    m.layers = 12;
    m.hidden = 512;
    m.heads = 8;
    m.vocab = 50304;
    t.seq_len = 1024;
    t.micro_batch = 4;
    t.global_batch = 32;
  }
  const GpuSpec& Gpu(const char* id) { return *hw.FindGpu(id); }
};

TEST_CASE("PyTorch's and Transformer Engine's cuBLAS workspaces by compute capability") {
  Setup su;
  struct Row {
    const char* gpu;
    double blas_mib;  // CublasHandlePool.cpp: 32 MiB from Hopper on, else :4096:2:16:8
    double te_mib;    // get_cublas_workspace_size_bytes: 32 MiB + 1 KiB from Hopper on, else 4
  };
  for (Row r : {Row{"a100-sxm4-80gb", 8.125, 4}, Row{"h100-sxm5-80gb", 32, 32 + 1.0 / 1024},
                Row{"gb200", 32, 32 + 1.0 / 1024}, Row{"mi300x", 32, 32 + 1.0 / 1024}}) {
    CAPTURE(r.gpu);
    CHECK(DefaultBlasWorkspace(su.Gpu(r.gpu)).bytes() == r.blas_mib * kMiB);
    CHECK(TransformerEngineWorkspace(su.Gpu(r.gpu)).bytes() == r.te_mib * kMiB);
  }
}

TEST_CASE("two cuBLAS handles, Transformer Engine's workspace and its grouped GEMM's streams") {
  Setup su;
  // H100, Transformer Engine, no SP: 2 x 32 MiB + 32 MiB + 1 KiB.
  Workspaces w = WorkspacesOf(su.m, su.t, su.l, su.Gpu("h100-sxm5-80gb"));
  CHECK(w.blas == 64 * kMiB);
  CHECK(w.total() == 96 * kMiB + 1024);
  // CUBLAS_WORKSPACE_CONFIG=:4096:8 on an A100: 32 MiB a handle; TE's 4 MiB.
  su.t.blas_workspace = Bytes(32 * kMiB);
  CHECK(WorkspacesOf(su.m, su.t, su.l, su.Gpu("a100-sxm4-80gb")).total() == 68 * kMiB);
  // MoE with TE's GroupedLinear: four more of TE's workspaces.
  su.m.moe.experts = 8;
  su.m.moe.top_k = 2;
  su.t.per_expert_gemm = true;
  CHECK(WorkspacesOf(su.m, su.t, su.l, su.Gpu("a100-sxm4-80gb")).transformer_engine ==
        5 * 4 * kMiB);
}

TEST_CASE("Megatron-LM's global buffer: the local attention's scores or the SP all-gather") {
  Setup su;
  const GpuSpec& a100 = su.Gpu("a100-sxm4-80gb");
  su.t.transformer_engine = false;
  su.t.attention = AttentionKind::kStandard;
  // [b * heads / tp, s, s] in bf16: 4 x 8 x 1024 x 1024 x 2 B = 64 MiB at TP1, 16 MiB at TP4.
  CHECK(WorkspacesOf(su.m, su.t, su.l, a100).megatron_buffer == 64 * kMiB);
  su.l.tp = 4;
  CHECK(WorkspacesOf(su.m, su.t, su.l, a100).megatron_buffer == 16 * kMiB);
  // Under Transformer Engine only the LM head's SP all-gather uses it: [s, b, h] = 4 MiB.
  su.t.transformer_engine = true;
  CHECK(WorkspacesOf(su.m, su.t, su.l, a100).megatron_buffer == 0);
  su.l.sp = true;
  CHECK(WorkspacesOf(su.m, su.t, su.l, a100).megatron_buffer == 4 * kMiB);
}

}  // namespace
}  // namespace parasim
