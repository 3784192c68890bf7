#include "models/attention.h"

#include <algorithm>
#include <utility>

namespace parasim::blocks {
namespace {

// Multi-head latent attention (DeepSeek-V3, ModelSpec::mla): norm; the query bottleneck (down,
// norm, up) and the KV latent with the shared RoPE key (down, norm, up to per-head keys and
// values); RoPE; the core with Q/K of nope + rope and V of v_head_dim per head; the output
// projection. The down-projections are small and replicated over TP; the up-projections and
// the output projection are split by heads.
void AddMlaAttention(BlockBuilder& bb, const ModelSpec& m, const GraphShape& s, const Dims& d) {
  const MlaSpec& a = m.mla;
  const double heads_local = static_cast<double>(m.heads) / d.t;
  const double qk = static_cast<double>(a.qk_head_dim()), v = static_cast<double>(a.v_head_dim);
  const double ql = static_cast<double>(a.q_lora_rank), kvl = static_cast<double>(a.kv_lora_rank);
  const double rope = static_cast<double>(a.qk_rope_head_dim);
  const int64_t T = static_cast<int64_t>(d.T);
  Op ln = Norm("attn_norm", m, d);
  EnterTp(&ln, d);
  Vertex in = bb.Add(std::move(ln));
  if (ql > 0) {
    Op q_down = Gemm("q_down_proj", T, m.hidden, a.q_lora_rank, d.h * ql);
    q_down.saved.push_back({"q_down_proj.input", d.T_out * d.h * d.a, false, 0});
    bb.Add(std::move(q_down));
    bb.Add(NormOver("q_norm", m, d, d.T, ql));
    Op q_up = Gemm("q_up_proj", T, a.q_lora_rank, static_cast<int64_t>(heads_local * qk),
                   ql * heads_local * qk);
    q_up.saved.push_back({"q_up_proj.input", d.T * ql * d.a, false, 0});
    q_up.deepseek_recompute = true;
    bb.Add(std::move(q_up));
  } else {
    Op q =
        Gemm("q_proj", T, m.hidden, static_cast<int64_t>(heads_local * qk), d.h * heads_local * qk);
    q.saved.push_back({"q_proj.input", d.T_out * d.h * d.a, false, 0});
    bb.Add(std::move(q));
  }
  // The KV latent reads the same normed input as the query path (saved once, above).
  bb.Add(
      Gemm("kv_down_proj", T, m.hidden, a.kv_lora_rank + a.qk_rope_head_dim, d.h * (kvl + rope)));
  bb.Add(NormOver("kv_norm", m, d, d.T, kvl));
  Op kv_up = Gemm("kv_up_proj", T, a.kv_lora_rank,
                  static_cast<int64_t>(heads_local * (a.qk_nope_head_dim + v)),
                  kvl * heads_local * (static_cast<double>(a.qk_nope_head_dim) + v));
  kv_up.saved.push_back({"kv_up_proj.input", d.T * kvl * d.a, false, 0});
  kv_up.deepseek_recompute = true;
  bb.Add(std::move(kv_up));
  const double rope_bytes = d.T * (heads_local * rope + rope) * d.a;
  Op rope_op = Elementwise("rope", 2 * rope_bytes, 2 * rope_bytes);
  rope_op.deepseek_recompute = true;
  bb.Add(std::move(rope_op));
  // The up-projections' outputs (Q, K, V of the core) are rebuilt from the latents.
  Op core = AttentionCore(m, s, d, heads_local, qk, v, heads_local * qk, heads_local * v);
  for (SavedTensor& t : core.saved) {
    if (t.name == "attention.q" || t.name == "attention.k" || t.name == "attention.v") {
      t.deepseek = 0;
    }
  }
  bb.Add(std::move(core));
  Op out =
      Gemm("out_proj", T, static_cast<int64_t>(heads_local * v), m.hidden, heads_local * v * d.h);
  out.saved.push_back({"out_proj.input", d.T * heads_local * v * d.a, false});
  LeaveTp(&out, d);
  bb.Add(std::move(out));
  bb.Add(DropoutAdd("attn_residual", d), {bb.last(), in});
}

}  // namespace

Op AttentionCore(const ModelSpec& m, const GraphShape& s, const Dims& d, double heads, double qk,
                 double v, double k_cols, double v_cols) {
  const double s_kv = static_cast<double>(s.seq_len);
  const double q_cols = heads * qk, o_cols = heads * v;
  Op core;
  core.name = "attention";
  core.kind = OpKind::kAttention;
  core.m = static_cast<int64_t>(d.T);
  core.n = static_cast<int64_t>(s_kv);
  core.k = static_cast<int64_t>(qk);
  core.batch = static_cast<int64_t>(heads);
  // QK^T and AV: 2 T s (qk + v) per head; 4 T s hd as the SC21 formula counts when qk = v.
  core.fwd_flops = Flops(2.0 * d.T * s_kv * (qk + v) * heads);
  core.bwd_flops = core.fwd_flops * 2;
  // Q and K for QK^T, V for AV (GQA: K and V are smaller): 6sbh/t in Korthikanti for MHA.
  core.saved.push_back({"attention.q", d.T * q_cols * d.a, false});
  core.saved.push_back({"attention.k", d.T * k_cols * d.a, false});
  core.saved.push_back({"attention.v", d.T * v_cols * d.a, false});
  const double scores = heads * d.T * s_kv;  // a s^2 b / t elements per rank
  if (s.attention == AttentionKind::kStandard) {
    const bool drops = s.attention_dropout >= 0 ? s.attention_dropout == 1 : d.dropout;
    // Softmax output (2 bytes), dropout mask (1 byte), dropout output (2 bytes): 5as^2b/t.
    core.saved.push_back({"attention.softmax", scores * d.a, true});
    if (drops) {
      core.saved.push_back({"attention.dropout_mask", scores, true});
      core.saved.push_back({"attention.dropout_out", scores * d.a, true});
    }
    // Materialised scores: write S, softmax read/write, dropout read/write, read for AV.
    core.fwd_bytes = Bytes(scores * d.a * (drops ? 6 : 4));
    core.bwd_bytes = Bytes(scores * d.a * (drops ? 8 : 5));
  } else {
    // Flash attention saves only the output's log-sum-exp (fp32) besides Q, K, V.
    core.saved.push_back({"attention.lse", heads * d.T * 4, true});
    // Masked blocks above the diagonal are skipped, and outside a local layer's window.
    core.causal_fraction = FlashComputedShare(m, s.seq_len);
    core.fwd_bytes = Bytes(d.T * (q_cols + k_cols + v_cols + o_cols) * d.a);
    core.bwd_bytes = core.fwd_bytes * 2.5;
  }
  core.in_attention_core = true;
  // Selective-op keeps its output and the log-sum-exp per head and token (fp32), and never
  // reruns it.
  core.op_kept_bytes = d.T * o_cols * d.a + heads * d.T * 4;
  core.op_rerun = 0;
  if (s.cp > 1) {
    // K and V of every CP rank visit this rank. A ring passes them beside the blocks'
    // attention; its backward passes them round again with their gradients beside them, K and
    // V alone at the first of the n - 1 steps, the gradients alone at the last, both between
    // (Transformer Engine, attention/dot_product_attention/context_parallel.py,
    // AttnFuncWithCPAndKVP2P.backward: p2p_comm_buffers[i % 2] holds KV and dKV): n - 1 steps
    // of twice the forward's blocks, priced as a reduce-scatter of twice the buffer. Gathered
    // whole (cp_all_gather), they arrive before the attention starts, and the backward gathers
    // them again and reduce-scatters their gradients after it: an all-gather and a
    // reduce-scatter of the same buffer move what one all-reduce moves, 2 (n - 1) / n of it.
    const double kv_bytes = d.T * (k_cols + v_cols) * d.a * s.cp;
    const bool ring = !s.cp_all_gather;
    core.fwd_comm = {CommKind::kAllGather, GroupKind::kCp, kv_bytes, ring};
    core.bwd_comm = {ring ? CommKind::kReduceScatter : CommKind::kAllReduce, GroupKind::kCp,
                     ring ? 2 * kv_bytes : kv_bytes, ring};
    // Working memory while the core runs: gathered, the whole sequence's K and V and, in the
    // backward, their gradients (AttnFuncWithCPAndKVAllGather); a ring's two buffers (send and
    // receive) of one rank's block, K, V and their gradients in the backward.
    core.transient = ring ? 4 * kv_bytes / s.cp : 2 * kv_bytes;
  }
  return core;
}

void AddAttention(BlockBuilder& bb, const ModelSpec& m, const GraphShape& s, const Dims& d) {
  if (m.mla.enabled()) {
    AddMlaAttention(bb, m, s, d);
    return;
  }
  const int t = d.t;
  const double heads_local = static_cast<double>(m.heads) / t;
  const double kv_local = std::max(1.0, static_cast<double>(m.kv()) / t);
  const double hd = static_cast<double>(m.hd());
  const double q_cols = heads_local * hd, kv_cols = kv_local * hd;
  const double bias = m.has_bias() ? 1 : 0;
  const int64_t T = static_cast<int64_t>(d.T);

  Op ln = Norm("attn_norm", m, d);
  Op qkv = Gemm("qkv_proj", T, m.hidden, static_cast<int64_t>(q_cols + 2 * kv_cols),
                d.h * (q_cols + 2 * kv_cols) + bias * (q_cols + 2 * kv_cols));
  qkv.mm_cols = {q_cols, kv_cols, kv_cols};  // separate Q, K and V projections (torchtitan)
  EnterTp(&ln, d, &qkv);
  Vertex in = bb.Add(std::move(ln));

  // Input of the column-parallel GEMM: the norm output, replicated over TP unless SP keeps it
  // sharded (and re-gathers it in backward).
  qkv.saved.push_back({"qkv_proj.input", d.T_out * d.h * d.a, false, 0});
  bb.Add(std::move(qkv));

  if (m.position == PositionKind::kRope) {
    double qk = d.T * (q_cols + kv_cols) * d.a;
    bb.Add(Elementwise("rope", 2 * qk, 2 * qk));
  }

  bb.Add(AttentionCore(m, s, d, heads_local, hd, hd, kv_cols, kv_cols));

  // A row-parallel linear's bias is whole on every TP rank, added after the reduction
  // (Megatron-Core's RowParallelLinear: a bias of output_size, not divided by TP).
  Op out = Gemm("out_proj", T, static_cast<int64_t>(q_cols), m.hidden, q_cols * d.h + bias * d.h);
  out.saved.push_back({"out_proj.input", d.T * q_cols * d.a, false});
  LeaveTp(&out, d);
  bb.Add(std::move(out));
  bb.Add(DropoutAdd("attn_residual", d), {bb.last(), in});
}

}  // namespace parasim::blocks
