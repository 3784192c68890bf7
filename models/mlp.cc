#include "models/mlp.h"

#include <cmath>
#include <utility>

namespace parasim::blocks {
namespace {

// How one MoE layer's tokens travel on this rank. Megatron-Core's all-to-all dispatcher
// (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher): each rank
// routes its own tokens (its sequence-parallel shard under TP), sends each copy to the EP rank
// of its expert, and where the experts are tensor-parallel (etp > 1) all-gathers what arrived
// over the expert-TP group; the experts' outputs are reduce-scattered back over that group
// before the combining all-to-all. No TP collective surrounds the routed experts. Where every
// rank of the TP group holds the same tokens (TP without SP, where etp = tp), nothing is
// gathered: the block is one TP region, its input's gradient and its output all-reduced over TP
// (after the combine, which sums each token's copies first), as the dense MLP's are.
struct MoeRouting {
  int etp = 1;
  int local_experts = 1;
  bool same_tokens = false;
  double local = 0;  // tokens this rank routes
  // Tokens routed from the ranks of this rank's expert-TP group: the experts' input.
  double group = 0;
  bool gathers = false;
  // Tokens this rank's experts process: top_k copies of each token, spread over the experts;
  // the busiest rank sets the pace of the expert GEMMs and of the all-to-alls, which finish
  // when it has received (dispatch) and sent back (combine) its copies.
  double load = 1;
  double per_expert = 0;
  double dispatch_bytes = 0;
  // Blockwise FP8 dispatches the tokens, and sends the gradients back to the experts, as their
  // FP8 casts; the combine and the dispatch's gradient stay 16-bit (DeepSeek-V3 Sec. 3.3.3).
  double fp8_bytes = 0;
  // The expert-TP group's copies, gathered (the collectives' full buffer).
  double gathered = 0;
  // Whether the received copies are sorted by local expert after the all-to-all and back before
  // the combine: Megatron-Core's alltoall dispatcher's, with more than one expert a rank. Not
  // where each token goes once to a node (node_limit: DeepEP under the flex dispatcher, whose
  // kernels hand over the tokens and permute them once), nor in a serving engine (expert_sort).
  bool sorts = false;
};

MoeRouting Route(const ModelSpec& m, const GraphShape& s, const Dims& d) {
  const MoeSpec& e = m.moe;
  MoeRouting r;
  r.etp = s.etp > 0 ? s.etp : s.tp;
  r.local_experts = e.experts / s.ep;
  r.same_tokens = d.t > 1 && !d.sp;
  r.local = d.T_out;
  r.group = r.same_tokens ? r.local : r.local * r.etp;
  r.gathers = r.etp > 1 && !r.same_tokens;
  r.load = e.BusiestRankLoad(r.group, s.ep);
  const double routed = r.local * e.top_k;  // token copies leaving this rank
  r.per_expert = r.group * e.top_k / e.experts * s.ep * r.load;
  r.dispatch_bytes = routed * d.h * d.a * r.load;
  r.fp8_bytes = s.fp8 == Fp8Recipe::kBlockwise
                    ? routed * d.h * Fp8ElementBytes(Fp8Recipe::kBlockwise) * r.load
                    : r.dispatch_bytes;
  r.gathered = r.group * e.top_k * d.h * d.a * r.load;
  r.sorts = r.local_experts > 1 && s.expert_sort && e.node_limit <= 0;
  return r;
}

// The dispatch's permutation and all-to-all, and where the experts are tensor-parallel the
// copies gathered over their group; then, where the rank holds more than one expert, the
// received copies sorted by local expert (the dispatcher's second permutation,
// sort_chunks_by_idxs where num_local_experts > 1, whatever the experts' TP; the all-gather is
// priced on that op, on the same buffer). It had been tied to the experts' TP: missing with
// etp 1 (DeepSeek-V3, Qwen3), paid with one expert a rank.
void AddDispatch(BlockBuilder& bb, const GraphShape& s, const MoeRouting& r) {
  Op dispatch = Elementwise("dispatch_permute", 2 * r.dispatch_bytes, 2 * r.dispatch_bytes);
  if (s.ep > 1) {
    dispatch.fwd_comm = {CommKind::kAllToAll, GroupKind::kEp, r.fp8_bytes, false};
    dispatch.bwd_comm = {CommKind::kAllToAll, GroupKind::kEp, r.dispatch_bytes, false};
  }
  bb.Add(std::move(dispatch));
  const double sorted = r.sorts ? 2 * r.gathered : 0.0;
  if (r.gathers || sorted > 0) {
    Op sort = Elementwise("expert_sort", sorted, sorted);
    if (r.gathers) {
      sort.fwd_comm = {CommKind::kAllGather, GroupKind::kEtp, r.gathered, false};
      sort.bwd_comm = {CommKind::kReduceScatter, GroupKind::kEtp, r.gathered, false};
    }
    bb.Add(std::move(sort));
  }
}

// The routed experts on the busiest rank: fc1, the activation, fc2, as batched GEMMs over the
// local experts.
void AddExperts(BlockBuilder& bb, const ModelSpec& m, const GraphShape& s, const Dims& d,
                const MoeRouting& r) {
  const MoeSpec& e = m.moe;
  const double bias = m.has_bias() ? 1 : 0;
  const int local_experts = r.local_experts;
  const bool glu = m.mlp == MlpKind::kSwiglu;
  const double f = static_cast<double>(e.expert_ffn_hidden) / r.etp;
  // A GEMM's rows a whole number per expert; the copies themselves, which the elementwise ops
  // touch and the saved tensors hold, as many as routed (at one decoding token on 128 experts
  // of top 8, 8 rows, where a row for each local expert had read 16 times the bytes).
  const int64_t rows = static_cast<int64_t>(std::ceil(r.per_expert));
  const double copies = r.per_expert * local_experts;
  Op fc1 =
      Gemm("expert_fc1", rows, m.hidden, static_cast<int64_t>((glu ? 2 : 1) * f),
           local_experts * (d.h * (glu ? 2 : 1) * f + bias * (glu ? 2 : 1) * f), local_experts);
  fc1.expert = true;
  fc1.saved.push_back({"expert_fc1.input", copies * d.h * d.a, false});
  bb.Add(std::move(fc1));
  const double act = copies * f * d.a;
  Op nl =
      Elementwise(glu ? "expert_swiglu" : "expert_gelu", (glu ? 3 : 2) * act, (glu ? 5 : 3) * act);
  Activation(&nl, act / d.a);
  // DeepSeek-V3 keeps the SwiGLU input as its FP8 cast under FP8 training and reruns the op.
  nl.saved.push_back({nl.name + ".input", (glu ? 2 : 1) * act, false,
                      s.fp8 ? Fp8ElementBytes(*s.fp8) / d.a : 1.0});
  nl.deepseek_recompute = true;
  bb.Add(std::move(nl));
  Op fc2 = Gemm("expert_fc2", rows, static_cast<int64_t>(f), m.hidden,
                local_experts * (f * d.h + bias * d.h), local_experts);
  fc2.expert = true;
  // Without SP the routed experts' partial outputs are all-reduced over TP with the rest of the
  // block: after the combine, or after the shared experts where there are some (LeaveTp
  // below); with EP and no shared expert the combine's all-to-all follows, so on the copies
  // after fc2.
  if (r.gathers) {
    fc2.fwd_comm = {CommKind::kReduceScatter, GroupKind::kEtp, r.gathered, false};
    fc2.bwd_comm = {CommKind::kAllGather, GroupKind::kEtp, r.gathered, false};
  } else if (r.same_tokens && s.ep > 1 && e.shared_experts == 0) {
    fc2.fwd_comm = {CommKind::kAllReduce, GroupKind::kTp, r.dispatch_bytes, false};
  }
  fc2.saved.push_back({"expert_fc2.input", act, false, 0});
  bb.Add(std::move(fc2));
}

// The combine's permutation and all-to-all back; without SP, EP or shared experts, the TP
// all-reduce of the block's output after it.
void AddCombine(BlockBuilder& bb, const ModelSpec& m, const GraphShape& s, const Dims& d,
                const MoeRouting& r) {
  const bool reduce_after_combine = r.same_tokens && s.ep <= 1 && m.moe.shared_experts == 0;
  // With more than one expert a rank, the copies sorted back first (combine_preprocess's
  // un-sort by local expert), then unpermuted.
  const double unsort = r.sorts ? 2 * r.gathered : 0.0;
  Op combine = Elementwise("combine_unpermute", 2 * r.dispatch_bytes + unsort,
                           2 * r.dispatch_bytes + unsort);
  if (s.ep > 1) {
    combine.fwd_comm = {CommKind::kAllToAll, GroupKind::kEp, r.dispatch_bytes, false};
    combine.bwd_comm = {CommKind::kAllToAll, GroupKind::kEp, r.fp8_bytes, false};
  }
  if (reduce_after_combine) LeaveTp(&combine, d);
  bb.Add(std::move(combine));
}

// Shared experts are a dense MLP over the TP group (Megatron-Core's SharedExpertMLP, one MLP of
// moe_shared_expert_intermediate_size: the shared experts' widths together): fc1, the
// activation and fc2 as model.mlp makes them (gated: the gate and up projections in fc1), their
// input gathered over TP (SP) and their output reduce-scattered. fc1's input is the normed block
// input the router already saved (the sequence-parallel shard under SP), kept once (under FP8
// fc1 keeps its cast besides); the activation keeps its input and fc2 its own, as the routed
// experts'. (One GEMM of 3 x F columns had stood for all three, whatever model.mlp, saving the
// gathered input alone.)
void AddSharedExperts(BlockBuilder& bb, const ModelSpec& m, const GraphShape& s, const Dims& d) {
  const MoeSpec& e = m.moe;
  if (e.shared_experts <= 0) return;
  const int64_t T = static_cast<int64_t>(d.T);
  const bool glu = m.mlp == MlpKind::kSwiglu;
  const double f = static_cast<double>(e.shared_experts) * e.expert_ffn_hidden / d.t;
  const double bias = m.has_bias() ? 1 : 0;
  Op fc1 = Gemm("shared_expert", T, m.hidden, static_cast<int64_t>((glu ? 2 : 1) * f),
                (glu ? 2 : 1) * f * (d.h + bias));
  if (glu) fc1.mm_cols = {f, f};  // the gate and up projections (torchtitan's two matmuls)
  // Under FP8 Transformer Engine's Linear keeps its own FP8 cast of that input.
  if (s.fp8) fc1.saved.push_back({"shared_expert.input", d.T_out * d.h * d.a, false, 0});
  bb.Add(std::move(fc1));
  const double act = d.T * f * d.a;
  Op nl = Elementwise(glu ? "shared_expert_swiglu" : "shared_expert_gelu", (glu ? 3 : 2) * act,
                      (glu ? 5 : 3) * act);
  Activation(&nl, act / d.a);
  nl.saved.push_back({nl.name + ".input", (glu ? 2 : 1) * act, false,
                      s.fp8 ? Fp8ElementBytes(*s.fp8) / d.a : 1.0});
  nl.deepseek_recompute = true;
  bb.Add(std::move(nl));
  Op fc2 = Gemm("shared_expert_fc2", T, static_cast<int64_t>(f), m.hidden, f * d.h + bias * d.h);
  fc2.saved.push_back({"shared_expert_fc2.input", act, false, 0});
  LeaveTp(&fc2, d);
  bb.Add(std::move(fc2));
}

}  // namespace

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
  // Row-parallel: its bias whole on every TP rank (out_proj's, models/attention.cc).
  Op fc2 = Gemm("fc2", T, static_cast<int64_t>(f), m.hidden, f * d.h + bias * d.h);
  fc2.saved.push_back({"fc2.input", act, false});
  LeaveTp(&fc2, d);
  bb.Add(std::move(fc2));
  bb.Add(DropoutAdd("mlp_residual", d), {bb.last(), in});
}

void AddMoeMlp(BlockBuilder& bb, const ModelSpec& m, const GraphShape& s, const Dims& d) {
  const MoeSpec& e = m.moe;
  const MoeRouting r = Route(m, s, d);
  Op ln = Norm("moe_norm", m, d);
  // Shared experts are a dense MLP over the TP group (Megatron-Core's SharedExpertMLP): their
  // input is gathered over TP (SP) and their output reduce-scattered (LeaveTp, below).
  if (e.shared_experts > 0 || r.same_tokens) EnterTp(&ln, d);
  Vertex in = bb.Add(std::move(ln));
  Op router = Gemm("router", static_cast<int64_t>(r.local), m.hidden, e.experts, d.h * e.experts);
  router.saved.push_back({"router.input", r.local * d.h * d.a, false, 0});
  bb.Add(std::move(router));
  AddDispatch(bb, s, r);
  AddExperts(bb, m, s, d, r);
  AddCombine(bb, m, s, d, r);
  AddSharedExperts(bb, m, s, d);
  bb.Add(DropoutAdd("moe_residual", d), {bb.last(), in});
}

}  // namespace parasim::blocks
