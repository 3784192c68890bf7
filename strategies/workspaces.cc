#include "strategies/workspaces.h"

#include <algorithm>

namespace parasim {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Hopper (9.0) and later, or a GPU that is not NVIDIA's.
bool HopperOrLater(const GpuSpec& g) {
  return g.compute_capability <= 0 || g.compute_capability >= 9.0;
}

}  // namespace

Bytes DefaultBlasWorkspace(const GpuSpec& g) {
  return Bytes(HopperOrLater(g) ? 32 * kMiB : 2 * 4096 * 1024.0 + 8 * 16 * 1024.0);
}

Bytes TransformerEngineWorkspace(const GpuSpec& g) {
  return Bytes(HopperOrLater(g) ? 32 * kMiB + 1024 : 4 * kMiB);
}

Workspaces WorkspacesOf(const ModelSpec& m, const Training& t, const Layout& l, const GpuSpec& g) {
  Workspaces w;
  const Bytes blas = t.blas_workspace.bytes() > 0 ? t.blas_workspace : DefaultBlasWorkspace(g);
  w.blas = kBlasHandles * blas.bytes();
  if (t.transformer_engine) {
    const double te = TransformerEngineWorkspace(g).bytes();
    // The experts' GEMMs issued one by one (expert_gemm: per_expert) are its GroupedLinear's.
    const bool grouped = m.is_moe() && t.per_expert_gemm;
    w.transformer_engine = te * (1 + (grouped ? kTeGroupedGemmStreams : 0));
  }
  // Megatron-LM's own Linears (every one in its local layers, the LM head under Transformer
  // Engine) all-gather a sequence-parallel input into the buffer, [s, b, h]; its local
  // attention keeps the scores of one micro-batch there, [b * heads / tp, s, s].
  const double act = (t.precision == Dtype::kFp32 || t.precision == Dtype::kTf32) ? 4 : 2;
  const double tokens =
      static_cast<double>(t.micro_batch) * static_cast<double>(t.seq_len) / std::max(1, l.cp);
  const double gathered = l.sp && l.tp > 1 ? tokens * static_cast<double>(m.hidden) * act : 0.0;
  double scores = 0;
  if (!t.transformer_engine && t.attention == AttentionKind::kStandard) {
    scores = tokens * static_cast<double>(t.seq_len) * m.heads / std::max(1, l.tp) * act;
  }
  w.megatron_buffer = std::max(scores, gathered);
  return w;
}

}  // namespace parasim
