#include "models/mamba.h"

#include <algorithm>
#include <utility>

namespace parasim::blocks {

// Megatron-Core's MambaMixer (megatron/core/ssm/mamba_mixer.py) on this rank: in_proj is
// column-parallel over z and x (d_inner), B and C (groups x state each) and dt (a head each);
// the heads and groups split over TP; out_proj is row-parallel. The training path
// (use_mamba_mem_eff_path, the default) runs mamba_ssm's mamba_split_conv1d_scan_combined: the
// causal conv1d and SiLU over x, B and C, the chunked scan and the gating y * silu(z); then the
// grouped RMSNorm (no TP collective: its groups are within a rank) and out_proj.
void AddMamba(BlockBuilder& bb, const ModelSpec& m, const GraphShape& s, const Dims& d) {
  const MambaRank r = MambaRankOf(m, d.t);
  const double heads = r.heads, groups = r.groups, inner = r.inner(), bc = r.bc();
  const double N = r.state;
  const double proj_cols = 2 * inner + bc + heads;  // z, x, B, C, dt
  const int64_t T = static_cast<int64_t>(d.T);

  Op ln = Norm("mamba_norm", m, d);  // fused into in_proj (TELayerNormColumnParallelLinear)
  Op in_proj = Gemm("in_proj", T, m.hidden, static_cast<int64_t>(proj_cols), d.h * proj_cols);
  EnterTp(&ln, d, &in_proj);
  const Vertex in = bb.Add(std::move(ln));
  in_proj.saved.push_back({"in_proj.input", d.T_out * d.h * d.a, false, 0});
  // Context parallelism (mamba_context_parallel.py): all-to-alls turn this rank's part of the
  // sequence of all its heads into the whole sequence of 1/cp of them (z, x, B, C and dt after
  // in_proj; y back before out_proj), and the reverse in backward.
  // B and C go as max(groups, cp) copies, each CP rank taking its own (repeated where fewer).
  const double cp_groups = std::max(groups, static_cast<double>(s.cp));
  const double proj_bytes = d.T * proj_cols * d.a, y_bytes = d.T * inner * d.a;
  const double sent_bytes = d.T * (2 * inner + 2 * cp_groups * N + heads) * d.a;
  if (s.cp > 1) in_proj.fwd_comm = {CommKind::kAllToAll, GroupKind::kCp, sent_bytes, false};
  bb.Add(std::move(in_proj));

  // The depthwise causal conv1d (kernel MambaSpec::kConv) and SiLU over x, B and C; the fused
  // function keeps in_proj's whole output for backward and reruns the conv there.
  const double conv_bytes = d.T * (inner + bc) * d.a;
  Op conv = Elementwise("conv1d", 2 * conv_bytes, 4 * conv_bytes);
  conv.params = (inner + bc) * (MambaSpec::kConv + 1) + 3 * heads;  // + dt_bias, A_log, D
  conv.saved.push_back({"in_proj.output", proj_bytes, false});
  if (s.cp > 1) conv.bwd_comm = {CommKind::kAllToAll, GroupKind::kCp, sent_bytes, false};
  bb.Add(std::move(conv));

  // The chunked scan (MambaRank): its matmuls are attention's masked form within a chunk (the
  // paper's state-space duality), run in 16 bits by Triton kernels: priced as the fused
  // attention core is.
  const double Q = static_cast<double>(std::min<int64_t>(MambaSpec::kChunk, s.seq_len));
  Op scan;
  scan.name = "ssd_scan";
  scan.kind = OpKind::kAttention;
  scan.m = T;
  scan.n = static_cast<int64_t>(Q);
  scan.k = m.mamba.state_dim;
  scan.batch = static_cast<int64_t>(heads);
  scan.fwd_flops = Flops(r.ScanFlops(d.T, Q, s.cp));
  scan.bwd_flops = scan.fwd_flops * 2;
  scan.fwd_bytes = Bytes(r.ScanBytes(d.T, Q, d.a, /*keep_y=*/true));
  scan.bwd_bytes = scan.fwd_bytes * 2.5;
  scan.saved.push_back({"ssd_scan.output", y_bytes, false});  // y before the gate
  if (s.cp > 1) scan.fwd_comm = {CommKind::kAllToAll, GroupKind::kCp, y_bytes, false};
  bb.Add(std::move(scan));

  // The grouped RMSNorm of the gated output (a weight per inner channel).
  Op norm = Elementwise("mamba_gated_norm", 2 * y_bytes, 3 * y_bytes);
  norm.elements = d.T * inner;
  norm.fwd_math = ElementMath::kNorm;
  norm.params = inner;
  norm.saved.push_back({"mamba_gated_norm.input", y_bytes, false});
  if (s.cp > 1) norm.bwd_comm = {CommKind::kAllToAll, GroupKind::kCp, y_bytes, false};
  bb.Add(std::move(norm));

  Op out = Gemm("mamba_out_proj", T, static_cast<int64_t>(inner), m.hidden, inner * d.h);
  out.saved.push_back({"mamba_out_proj.input", y_bytes, false});
  LeaveTp(&out, d);
  bb.Add(std::move(out));
  bb.Add(DropoutAdd("mamba_residual", d), {bb.last(), in});
}

}  // namespace parasim::blocks
