#include "models/layer_graph.h"

#include <algorithm>
#include <boost/graph/topological_sort.hpp>
#include <cmath>
#include <iterator>

#include "sim/enum_names.h"

namespace parasim {

namespace {
constexpr EnumNames<CommKind, 5> kComms("communication",
                                        {{{CommKind::kNone, "none"},
                                          {CommKind::kAllReduce, "all-reduce"},
                                          {CommKind::kReduceScatter, "reduce-scatter"},
                                          {CommKind::kAllGather, "all-gather"},
                                          {CommKind::kAllToAll, "all-to-all"}}});
constexpr EnumNames<GroupKind, 6> kGroups("group", {{{GroupKind::kTp, "tp"},
                                                     {GroupKind::kCp, "cp"},
                                                     {GroupKind::kEp, "ep"},
                                                     {GroupKind::kDp, "dp"},
                                                     {GroupKind::kPp, "pp"},
                                                     {GroupKind::kEtp, "etp"}}});
}  // namespace

std::string_view CommName(CommKind c) { return kComms.Name(c); }

double FlashComputedShare(const ModelSpec& m, int64_t seq) {
  // A causal layer computes the blocks on and below the diagonal: half of the matrix.
  constexpr double kCausal = 0.5;
  const AttentionWindow& w = m.window;
  const double s = static_cast<double>(seq);
  if (w.size <= 0 || static_cast<double>(w.size) >= s || m.layers <= 0) return kCausal;
  // Flash kernels compute whole tiles of 128 x 128 (FlashAttention-2, Dao 2023, sec. 3.1 and
  // its kernels' block sizes; cuDNN's fused attention alike): a sliding window of w keys
  // touches ceil(w / 128) + 1 key tiles per query tile, a chunk of w tokens its causal
  // triangle, (w / 128 + 1) / 2 tiles per query tile on average.
  constexpr double kTile = 128;
  const double size = static_cast<double>(w.size);
  const double local = std::min(
      kCausal, w.chunked ? (size + kTile) / (2 * s) : (std::ceil(size / kTile) + 1) * kTile / s);
  const int global = w.global_every > 0 ? m.layers / w.global_every : 0;
  return (global * kCausal + (m.layers - global) * local) / m.layers;
}
std::string_view GroupName(GroupKind g) { return kGroups.Name(g); }

namespace {

using Vertex = OpGraph::vertex_descriptor;

// Builds a block op by op; `Add` links the new op after `after` (default: the previous op).
class BlockBuilder {
 public:
  explicit BlockBuilder(std::string name) { block_.name = std::move(name); }
  Vertex Add(Op op, std::vector<Vertex> after = {}) {
    Vertex v = boost::add_vertex(std::move(op), block_.graph);
    if (after.empty() && has_last_) after.push_back(last_);
    for (Vertex a : after) boost::add_edge(a, v, block_.graph);
    last_ = v;
    has_last_ = true;
    return v;
  }
  Vertex last() const { return last_; }
  Block Finish() {
    std::vector<Vertex> rev;
    boost::topological_sort(block_.graph, std::back_inserter(rev));
    block_.order.assign(rev.rbegin(), rev.rend());
    return std::move(block_);
  }

 private:
  Block block_;
  Vertex last_ = 0;
  bool has_last_ = false;
};

Op Gemm(std::string name, int64_t m, int64_t k, int64_t n, double params, int64_t batch = 1) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kGemm;
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.fwd_flops = Flops(2.0 * m * n * k * batch);
  op.bwd_flops = op.fwd_flops * 2;  // input gradient + weight gradient
  op.params = params;
  return op;
}

Op Elementwise(std::string name, double fwd_bytes, double bwd_bytes) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kMemoryBound;
  op.fwd_bytes = Bytes(fwd_bytes);
  op.bwd_bytes = Bytes(bwd_bytes);
  return op;
}

// An MLP's activation over `elements` outputs, forward and backward (ElementMath::kActivation).
void Activation(Op* op, double elements) {
  op->elements = elements;
  op->fwd_math = op->bwd_math = ElementMath::kActivation;
}

struct Dims {
  double T;      // tokens of this rank's micro-batch (b * s / cp)
  double T_out;  // tokens outside the TP region (T / t with SP, else T)
  double h;
  double a;  // bytes per activation element
  int t;
  bool sp;
  bool dropout;
};

// FP8 training runs a layer's Linears as FP8 GEMMs and keeps their saved inputs as the FP8 casts
// (Transformer Engine's Linear saves its input's cast for the weight gradient; DeepSeek-V3
// caches FP8 activations for the backward of Linear, Sec. 3.3.3). The MoE router stays in
// 16-bit (DeepSeek-V3 keeps the gating module in higher precision), as do the embedding and the
// LM head, which are not layers' Linears.
void MarkFp8(Block* b, const GraphShape& s, const Dims& d) {
  if (!s.fp8) return;
  const double scale = Fp8ElementBytes(*s.fp8) / d.a;
  for (auto v : b->order) {
    Op& op = b->graph[v];
    if (op.kind != OpKind::kGemm || op.name == "router") continue;
    op.fp8 = true;
    for (SavedTensor& t : op.saved) t.bytes *= scale;
  }
}

// torchtitan's op-level selective checkpointing of a layer (recompute: selective-op): its
// policy saves the outputs of aten.mm calls, but every second one (counted per layer from 1),
// and of scaled-dot-product attention (torchtitan/distributed/activation_checkpoint.py,
// _ops_sac_save and the mm_count_key rule). Every matmul of the layer counts, in order; the
// attention core marks itself (AttentionCore).
void MarkSelectiveOp(Block* b, const Dims& d) {
  int mm = 0;
  for (auto v : b->order) {
    Op& op = b->graph[v];
    if (op.kind == OpKind::kGemm) {
      const std::vector<double> parts =
          op.mm_cols.empty() ? std::vector<double>{static_cast<double>(op.n)} : op.mm_cols;
      double cols = 0, rerun = 0;
      for (double c : parts) {
        cols += c;
        if (++mm % 2 == 1) {
          op.op_kept_bytes += static_cast<double>(op.m) * c * op.batch * d.a;
        } else {
          rerun += c;
        }
      }
      op.op_rerun = cols > 0 ? rerun / cols : 0;
    }
  }
}

// The collective that enters a TP region (Megatron's "f"; with SP an all-gather) after `op`.
// Its backward collective (all-reduce, or reduce-scatter with SP) reduces the input gradient of
// the column-parallel Linear that follows: on `linear` when given, run beside its weight
// gradient (CommSpec::beside_wgrad), else on `op`, blocking.
void EnterTp(Op* op, const Dims& d, Op* linear = nullptr) {
  if (d.t <= 1) return;
  const double D = d.T * d.h * d.a;
  if (d.sp) op->fwd_comm = {CommKind::kAllGather, GroupKind::kTp, D, false};
  Op* back = linear != nullptr ? linear : op;
  back->bwd_comm = {d.sp ? CommKind::kReduceScatter : CommKind::kAllReduce, GroupKind::kTp, D,
                    false};
  back->bwd_comm.beside_wgrad = linear != nullptr;
  back->bwd_comm.regather = linear != nullptr && d.sp;
}

// The collective that leaves a TP region (Megatron's "g"; with SP a reduce-scatter).
void LeaveTp(Op* op, const Dims& d) {
  if (d.t <= 1) return;
  const double D = d.T * d.h * d.a;
  if (d.sp) {
    op->fwd_comm = {CommKind::kReduceScatter, GroupKind::kTp, D, false};
    op->bwd_comm = {CommKind::kAllGather, GroupKind::kTp, D, false};
  } else {
    op->fwd_comm = {CommKind::kAllReduce, GroupKind::kTp, D, false};
  }
}

// A norm over `tokens` rows of `cols`: reads x, writes y; backward reads x, dy, writes dx
// (Korthikanti: input saved, 2sbh).
Op NormOver(const std::string& name, const ModelSpec& m, const Dims& d, double tokens,
            double cols) {
  const double x = tokens * cols * d.a;
  Op op = Elementwise(name, 2 * x, 3 * x);
  op.elements = tokens * cols;
  op.fwd_math = ElementMath::kNorm;  // its backward streamed at HBM speed when measured
  op.params = (m.norm == NormKind::kLayerNorm ? 2 : 1) * cols;
  op.saved.push_back({name + ".input", x, false});
  op.deepseek_recompute = true;  // its output, a Linear's input, is rebuilt from its input
  return op;
}

// The block's norm over the hidden size (sharded over TP with SP).
Op Norm(const std::string& name, const ModelSpec& m, const Dims& d) {
  return NormOver(name, m, d, d.T_out, d.h);
}

Op DropoutAdd(const std::string& name, const Dims& d) {
  const double x = d.T_out * d.h * d.a;
  Op op = Elementwise(name, 3 * x, 3 * x);
  op.elements = d.T_out * d.h;
  // The forward draws a random number an element; the backward only applies the saved mask.
  if (d.dropout) op.fwd_math = ElementMath::kDropout;
  if (d.dropout) op.saved.push_back({name + ".mask", d.T_out * d.h, false});  // 1-byte mask
  return op;
}

// The attention core: QK^T and AV over the full key length (CP: keys gathered from the ring),
// for `heads` local heads with Q and K of `qk` and V of `v` dimensions per head, and K and V
// of `k_cols` and `v_cols` columns per token (fewer with GQA).
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
    // Softmax output (2 bytes), dropout mask (1 byte), dropout output (2 bytes): 5as^2b/t.
    core.saved.push_back({"attention.softmax", scores * d.a, true});
    if (d.dropout) {
      core.saved.push_back({"attention.dropout_mask", scores, true});
      core.saved.push_back({"attention.dropout_out", scores * d.a, true});
    }
    // Materialised scores: write S, softmax read/write, dropout read/write, read for AV.
    core.fwd_bytes = Bytes(scores * d.a * (d.dropout ? 6 : 4));
    core.bwd_bytes = Bytes(scores * d.a * (d.dropout ? 8 : 5));
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
    // attention, and their gradients back the same way. Gathered whole (cp_all_gather), they
    // arrive before the attention starts, and the backward gathers them again and
    // reduce-scatters their gradients after it: an all-gather and a reduce-scatter of the same
    // buffer move what one all-reduce moves, 2 (n - 1) / n of it.
    const double kv_bytes = d.T * (k_cols + v_cols) * d.a * s.cp;
    const bool ring = !s.cp_all_gather;
    core.fwd_comm = {CommKind::kAllGather, GroupKind::kCp, kv_bytes, ring};
    core.bwd_comm = {ring ? CommKind::kReduceScatter : CommKind::kAllReduce, GroupKind::kCp,
                     kv_bytes, ring};
  }
  return core;
}

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

// Attention sub-block: norm, QKV, core, output projection, dropout + residual.
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

  Op out =
      Gemm("out_proj", T, static_cast<int64_t>(q_cols), m.hidden, q_cols * d.h + bias * d.h / t);
  out.saved.push_back({"out_proj.input", d.T * q_cols * d.a, false});
  LeaveTp(&out, d);
  bb.Add(std::move(out));
  bb.Add(DropoutAdd("attn_residual", d), {bb.last(), in});
}

void AddDenseMlp(BlockBuilder& bb, const ModelSpec& m, const Dims& d, int64_t ffn) {
  const int t = d.t;
  const double f = static_cast<double>(ffn) / t;
  const double bias = m.has_bias() ? 1 : 0;
  const int64_t T = static_cast<int64_t>(d.T);
  Op ln = Norm("mlp_norm", m, d);
  const bool glu = m.mlp == MlpKind::kSwiglu;
  Op fc1 = Gemm("fc1", T, m.hidden, static_cast<int64_t>((glu ? 2 : 1) * f),
                d.h * (glu ? 2 : 1) * f + bias * (glu ? 2 : 1) * f);
  if (glu) fc1.mm_cols = {f, f};  // the gate and up projections, two matmuls (w1, w3)
  EnterTp(&ln, d, &fc1);
  Vertex in = bb.Add(std::move(ln));
  fc1.saved.push_back({"fc1.input", d.T_out * d.h * d.a, false, 0});
  bb.Add(std::move(fc1));
  const double act = d.T * f * d.a;
  Op nl = Elementwise(glu ? "swiglu" : "gelu", (glu ? 3 : 2) * act, (glu ? 5 : 3) * act);
  Activation(&nl, act / d.a);
  nl.saved.push_back({nl.name + ".input", (glu ? 2 : 1) * act, false});
  bb.Add(std::move(nl));
  Op fc2 = Gemm("fc2", T, static_cast<int64_t>(f), m.hidden, f * d.h + bias * d.h / t);
  fc2.saved.push_back({"fc2.input", act, false});
  LeaveTp(&fc2, d);
  bb.Add(std::move(fc2));
  bb.Add(DropoutAdd("mlp_residual", d), {bb.last(), in});
}

void AddMoeMlp(BlockBuilder& bb, const ModelSpec& m, const GraphShape& s, const Dims& d) {
  const MoeSpec& e = m.moe;
  const int etp = s.etp > 0 ? s.etp : s.tp;
  const int local_experts = e.experts / s.ep;
  const double bias = m.has_bias() ? 1 : 0;
  // Megatron-Core's all-to-all dispatcher (megatron/core/transformer/moe/token_dispatcher.py,
  // MoEAlltoAllTokenDispatcher): each rank routes its own tokens (its sequence-parallel shard
  // under TP), sends each copy to the EP rank of its expert, and where the experts are
  // tensor-parallel (etp > 1) all-gathers what arrived over the expert-TP group; the experts'
  // outputs are reduce-scattered back over that group before the combining all-to-all. No TP
  // collective surrounds the routed experts. Where every rank of the TP group holds the same
  // tokens (TP without SP, where etp = tp), nothing is gathered: the block is one TP region, its
  // input's gradient and its output all-reduced over TP (after the combine, which sums each
  // token's copies first), as the dense MLP's are.
  const bool same_tokens = d.t > 1 && !d.sp;
  const double local = d.T_out;  // tokens this rank routes
  // Tokens routed from the ranks of this rank's expert-TP group: the experts' input.
  const double group = same_tokens ? local : local * etp;
  const bool gathers = etp > 1 && !same_tokens;
  Op ln = Norm("moe_norm", m, d);
  // Shared experts are a dense MLP over the TP group (Megatron-Core's SharedExpertMLP): their
  // input is gathered over TP (SP) and their output reduce-scattered (LeaveTp, below).
  if (e.shared_experts > 0 || same_tokens) EnterTp(&ln, d);
  Vertex in = bb.Add(std::move(ln));
  Op router = Gemm("router", static_cast<int64_t>(local), m.hidden, e.experts, d.h * e.experts);
  router.saved.push_back({"router.input", local * d.h * d.a, false, 0});
  bb.Add(std::move(router));
  // Tokens this rank's experts process: top_k copies of each token, spread over the experts;
  // the busiest rank sets the pace of the expert GEMMs and of the all-to-alls, which finish
  // when it has received (dispatch) and sent back (combine) its copies.
  const double load = e.BusiestRankLoad(group, s.ep);
  const double routed = local * e.top_k;  // token copies leaving this rank
  const double per_expert = group * e.top_k / e.experts * s.ep * load;
  const double dispatch_bytes = routed * d.h * d.a * load;
  // Blockwise FP8 dispatches the tokens, and sends the gradients back to the experts, as their
  // FP8 casts; the combine and the dispatch's gradient stay 16-bit (DeepSeek-V3 Sec. 3.3.3).
  const double fp8_bytes = s.fp8 == Fp8Recipe::kBlockwise
                               ? routed * d.h * Fp8ElementBytes(Fp8Recipe::kBlockwise) * load
                               : dispatch_bytes;
  Op dispatch = Elementwise("dispatch_permute", 2 * dispatch_bytes, 2 * dispatch_bytes);
  if (s.ep > 1) {
    dispatch.fwd_comm = {CommKind::kAllToAll, GroupKind::kEp, fp8_bytes, false};
    dispatch.bwd_comm = {CommKind::kAllToAll, GroupKind::kEp, dispatch_bytes, false};
  }
  bb.Add(std::move(dispatch));
  // The expert-TP group's copies, gathered (the collectives' full buffer).
  const double gathered = group * e.top_k * d.h * d.a * load;
  if (gathers) {
    // The gathered copies sorted by local expert (the dispatcher's second permutation); the
    // all-gather is priced after the sort, on the same buffer.
    Op sort = Elementwise("expert_sort", 2 * gathered, 2 * gathered);
    sort.fwd_comm = {CommKind::kAllGather, GroupKind::kEtp, gathered, false};
    sort.bwd_comm = {CommKind::kReduceScatter, GroupKind::kEtp, gathered, false};
    bb.Add(std::move(sort));
  }
  const bool glu = m.mlp == MlpKind::kSwiglu;
  const double f = static_cast<double>(e.expert_ffn_hidden) / etp;
  const int64_t rows = static_cast<int64_t>(std::ceil(per_expert));
  Op fc1 =
      Gemm("expert_fc1", rows, m.hidden, static_cast<int64_t>((glu ? 2 : 1) * f),
           local_experts * (d.h * (glu ? 2 : 1) * f + bias * (glu ? 2 : 1) * f), local_experts);
  fc1.expert = true;
  fc1.saved.push_back({"expert_fc1.input", rows * local_experts * d.h * d.a, false});
  bb.Add(std::move(fc1));
  const double act = rows * local_experts * f * d.a;
  Op nl =
      Elementwise(glu ? "expert_swiglu" : "expert_gelu", (glu ? 3 : 2) * act, (glu ? 5 : 3) * act);
  Activation(&nl, act / d.a);
  // DeepSeek-V3 keeps the SwiGLU input as its FP8 cast under FP8 training and reruns the op.
  nl.saved.push_back({nl.name + ".input", (glu ? 2 : 1) * act, false,
                      s.fp8 ? Fp8ElementBytes(*s.fp8) / d.a : 1.0});
  nl.deepseek_recompute = true;
  bb.Add(std::move(nl));
  Op fc2 = Gemm("expert_fc2", rows, static_cast<int64_t>(f), m.hidden,
                local_experts * (f * d.h + bias * d.h / etp), local_experts);
  fc2.expert = true;
  // Without SP the routed experts' partial outputs are all-reduced over TP with the rest of the
  // block: after the combine, or after the shared experts where there are some (LeaveTp
  // below); with EP and no shared expert the combine's all-to-all follows, so on the copies
  // after fc2.
  const bool reduce_after_combine = same_tokens && s.ep <= 1 && e.shared_experts == 0;
  if (gathers) {
    fc2.fwd_comm = {CommKind::kReduceScatter, GroupKind::kEtp, gathered, false};
    fc2.bwd_comm = {CommKind::kAllGather, GroupKind::kEtp, gathered, false};
  } else if (same_tokens && s.ep > 1 && e.shared_experts == 0) {
    fc2.fwd_comm = {CommKind::kAllReduce, GroupKind::kTp, dispatch_bytes, false};
  }
  fc2.saved.push_back({"expert_fc2.input", act, false, 0});
  bb.Add(std::move(fc2));
  Op combine = Elementwise("combine_unpermute", 2 * dispatch_bytes, 2 * dispatch_bytes);
  if (s.ep > 1) {
    combine.fwd_comm = {CommKind::kAllToAll, GroupKind::kEp, dispatch_bytes, false};
    combine.bwd_comm = {CommKind::kAllToAll, GroupKind::kEp, fp8_bytes, false};
  }
  if (reduce_after_combine) LeaveTp(&combine, d);
  bb.Add(std::move(combine));
  const int64_t T = static_cast<int64_t>(d.T);
  const double fs = static_cast<double>(e.expert_ffn_hidden) / d.t;
  for (int i = 0; i < e.shared_experts; ++i) {
    Op sh = Gemm("shared_expert", T, m.hidden, static_cast<int64_t>(3 * fs), 3 * d.h * fs);
    sh.saved.push_back({"shared_expert.input", d.T * d.h * d.a, false, 0});
    if (i + 1 == e.shared_experts) LeaveTp(&sh, d);
    bb.Add(std::move(sh));
  }
  bb.Add(DropoutAdd("moe_residual", d), {bb.last(), in});
}

}  // namespace

ModelGraph BuildModelGraph(const ModelSpec& m, const GraphShape& s) {
  Dims d;
  d.t = s.tp;
  d.sp = s.sp && s.tp > 1;
  d.T = static_cast<double>(s.micro_batch) * s.seq_len / s.cp;
  d.T_out = d.sp ? d.T / s.tp : d.T;
  d.h = static_cast<double>(m.hidden);
  d.a = s.act_bytes;
  d.dropout = s.dropout >= 0 ? s.dropout == 1 : m.mlp == MlpKind::kGelu;
  ModelGraph g;
  {
    BlockBuilder bb("embedding");
    const double pos = m.position == PositionKind::kLearned
                           ? static_cast<double>(m.max_position > 0 ? m.max_position : s.seq_len)
                           : 0.0;
    Op emb = Elementwise("embedding", 2 * d.T * d.h * d.a, 2 * d.T * d.h * d.a);
    emb.params = static_cast<double>(m.vocab) * d.h / s.tp + pos * d.h;  // vocab-parallel table
    LeaveTp(&emb, d);  // partial sums of the vocab-parallel lookup are reduced over TP
    bb.Add(std::move(emb));
    g.embedding = bb.Finish();
  }
  {
    BlockBuilder bb("dense_layer");
    AddAttention(bb, m, s, d);
    AddDenseMlp(bb, m, d, m.ffn());
    g.dense = bb.Finish();
    MarkSelectiveOp(&g.dense, d);
    MarkFp8(&g.dense, s, d);
  }
  if (m.is_moe()) {
    BlockBuilder bb("moe_layer");
    AddAttention(bb, m, s, d);
    AddMoeMlp(bb, m, s, d);
    g.moe = bb.Finish();
    MarkSelectiveOp(&g.moe, d);
    MarkFp8(&g.moe, s, d);
  }
  {
    BlockBuilder bb("head");
    Op ln = Norm("final_norm", m, d);
    const int64_t T = static_cast<int64_t>(d.T);
    const double v_local = static_cast<double>(m.vocab) / s.tp;
    Op head = Gemm("lm_head", T, m.hidden, static_cast<int64_t>(v_local),
                   m.tied_embeddings ? 0.0 : v_local * d.h);
    EnterTp(&ln, d, &head);
    bb.Add(std::move(ln));
    head.saved.push_back({"lm_head.input", d.T_out * d.h * d.a, false});
    bb.Add(std::move(head));
    // Vocab-parallel cross-entropy on fp32 logits, pass by pass as Megatron-LM runs it (unfused
    // path, the default: megatron/core/tensor_parallel/cross_entropy.py, and mpu/cross_entropy.py
    // with the caller's .float() before it). Bytes per logit, a that of the logits' type:
    //   forward: max (4 read), subtract the max in place (4 + 4), exp in place (4 + 4), sum (4),
    //            divide by the sum in place (4 + 4): 32;
    //   backward: scale the saved softmax by the loss gradient in place (4 + 4): 8;
    //   and 16-bit logits add the cast to fp32 (a + 4) and the gradient's cast back (4 + a).
    // The fp32 softmax is kept for the backward. (torchtitan's F.cross_entropy on .float()
    // logits makes about 22 and 26 with bf16: 48 in all against 52.)
    const double per_logit = d.T * v_local;
    if (s.fused_cross_entropy) {
      // Fused (training.cross_entropy: fused): Transformer Engine's parallel_cross_entropy, as
      // Megatron-Core calls it with cross_entropy_loss_fusion and cross_entropy_fusion_impl
      // "te" (transformer_engine/pytorch/triton/cross_entropy.py). The forward's online
      // softmax reads each logit once, in its own type, and keeps a max, a sum and the
      // target's logit per token; the backward reads the logits again and writes the gradient
      // in their place. The logits themselves are kept for it, in their own type.
      Op loss = Elementwise("cross_entropy", per_logit * d.a, per_logit * 2 * d.a);
      loss.saved.push_back({"logits", per_logit * d.a, false});
      bb.Add(std::move(loss));
    } else {
      const double cast = d.a < 4 ? d.a + 4 : 0;  // .float() of fp32 logits is a no-op
      Op loss = Elementwise("cross_entropy", per_logit * (32 + cast), per_logit * (8 + cast));
      // PyTorch runs the cast to fp32, the in-place subtraction of the max and division by the
      // sum (broadcast over a row), and the backward's in-place scaling unvectorized: kernels
      // the SMs bound (elementwise_kernel<128, 2>, unrolled_elementwise_kernel; "Element-wise
      // kernels on Hopper" in docs/MODEL.md). The max, the exp, the sum and the cast back stream.
      loss.elements = per_logit;
      loss.fwd_math = loss.bwd_math = ElementMath::kLossPasses;
      loss.fwd_sm_passes = cast > 0 ? 3 : 2;
      loss.fwd_sm_bytes = per_logit * (cast + 8 + 8);
      loss.bwd_sm_passes = 1;
      loss.bwd_sm_bytes = per_logit * 8;
      loss.saved.push_back({"logits", per_logit * 4, false});
      bb.Add(std::move(loss));
    }
    g.head = bb.Finish();
  }
  if (m.mtp_depth > 0) {
    // DeepSeek-V3 sec. 2.2: h' = M [RMSNorm(h); RMSNorm(Emb(t_{i+k}))], M of d x 2d.
    BlockBuilder bb("mtp");
    const double x = d.T_out * d.h * d.a;
    bb.Add(Elementwise("mtp_embedding", 2 * x, 2 * x));
    bb.Add(Norm("mtp_hidden_norm", m, d));
    bb.Add(Norm("mtp_embedding_norm", m, d));
    // Replicated over TP (DeepSeek-V3 trains without TP).
    Op proj = Gemm("mtp_proj", static_cast<int64_t>(d.T), 2 * m.hidden, m.hidden, 2.0 * d.h * d.h);
    proj.saved.push_back({"mtp_proj.input", 2 * d.T * d.h * d.a, false, 0});
    bb.Add(std::move(proj));
    g.mtp = bb.Finish();
  }
  return g;
}

// One E4M3 byte, plus blockwise's fp32 scale per 1x128 tile (a weight's 128x128 blocks add
// 4 / 16384, left out) or MXFP8's E8M0 byte per 32 values.
double Fp8ElementBytes(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kTensorwise:
      return 1.0;
    case Fp8Recipe::kBlockwise:
      return 1.0 + 4.0 / 128;  // an fp32 scale per 128 values
    case Fp8Recipe::kMxfp8:
      return 1.0 + 1.0 / 32;  // an E8M0 scale (one byte) per 32 values
  }
  return 1.0;
}

bool Recomputes(const Op& op, RecomputeKind r) {
  switch (r) {
    case RecomputeKind::kNone:
      return false;
    case RecomputeKind::kSelective:
      return op.in_attention_core;
    case RecomputeKind::kFull:
      return true;
    case RecomputeKind::kDeepseek:
      return op.deepseek_recompute;
    case RecomputeKind::kSelectiveOp:
      return op.op_rerun > 0;
  }
  return false;
}

double RecomputeShare(const Op& op, RecomputeKind r) {
  if (!Recomputes(op, r)) return 0;
  return r == RecomputeKind::kSelectiveOp ? op.op_rerun : 1.0;
}

double ActivationBytes(const Block& b, RecomputeKind recompute) {
  double total = 0;
  if (recompute == RecomputeKind::kFull || recompute == RecomputeKind::kSelectiveOp) {
    // Only the block's input is kept (Korthikanti: 2sbh, /t with SP); the first op's first saved
    // tensor is the block input (the norm's input) for transformer layers. Selective-op keeps
    // the outputs of the ops its policy saves as well.
    if (recompute == RecomputeKind::kSelectiveOp) {
      for (size_t i = 0; i < b.size(); ++i) total += b.op(i).op_kept_bytes;
    }
    for (size_t i = 0; i < b.size(); ++i) {
      if (!b.op(i).saved.empty()) return total + b.op(i).saved.front().bytes;
    }
    return total;
  }
  for (size_t i = 0; i < b.size(); ++i) {
    for (const auto& t : b.op(i).saved) {
      if (recompute == RecomputeKind::kSelective && t.attention_core) continue;
      total += recompute == RecomputeKind::kDeepseek ? t.bytes * t.deepseek : t.bytes;
    }
  }
  return total;
}

double WeightGradBytes(const Block& b) {
  double total = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    if (b.op(i).kind != OpKind::kGemm) continue;
    for (const auto& t : b.op(i).saved) total += t.bytes;
  }
  return total;
}

double ForwardFlops(const Block& b) {
  double f = 0;
  for (size_t i = 0; i < b.size(); ++i) f += b.op(i).fwd_flops.flops();
  return f;
}

double BackwardFlops(const Block& b) {
  double f = 0;
  for (size_t i = 0; i < b.size(); ++i) f += b.op(i).bwd_flops.flops();
  return f;
}

double BlockParams(const Block& b, bool experts_only) {
  double p = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!experts_only || b.op(i).expert) p += b.op(i).params;
  }
  return p;
}

double LoraParams(const Block& b, int r) {
  double p = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const Op& op = b.op(i);
    if (op.kind != OpKind::kGemm || op.name == "router") continue;
    p += static_cast<double>(r) * (op.k + op.n) * op.batch;
  }
  return p;
}

std::shared_ptr<const ModelGraph> SharedModelGraph(const ModelSpec& model,
                                                   const GraphShape& shape) {
  struct Entry {
    ModelSpec model;
    GraphShape shape;
    std::shared_ptr<const ModelGraph> graph;
  };
  // A sweep's layouts take a handful of rank shapes (tp x sp x cp x ep x micro-batch); eight
  // recent ones per thread cover a layout's calls and the runs of layouts beside it.
  constexpr size_t kEntries = 8;
  thread_local std::vector<Entry> cache;
  for (size_t i = 0; i < cache.size(); ++i) {
    if (cache[i].shape == shape && cache[i].model == model) {
      std::rotate(cache.begin(), cache.begin() + static_cast<std::ptrdiff_t>(i),
                  cache.begin() + static_cast<std::ptrdiff_t>(i) + 1);  // most recent first
      return cache.front().graph;
    }
  }
  auto g = std::make_shared<const ModelGraph>(BuildModelGraph(model, shape));
  if (cache.size() == kEntries) cache.pop_back();
  cache.insert(cache.begin(), Entry{model, shape, g});
  return g;
}

}  // namespace parasim
