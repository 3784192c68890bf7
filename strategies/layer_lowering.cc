#include "strategies/layer_lowering.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/layer_graph.h"
#include "strategies/memory.h"
#include "strategies/step_kernels.h"

namespace parasim {

namespace {

TaskCat PhaseCat(Phase ph) {
  return ph == Phase::kF                      ? TaskCat::kForward
         : ph == Phase::kB || ph == Phase::kW ? TaskCat::kBackward
                                              : TaskCat::kRecompute;
}

// An op's compute and collective in one phase (recompute replays the forward). The compute
// runs as a head and a tail of `hide`: `pre` runs beside the head, and the collective beside
// the tail when `overlap` (an overlappable one hides behind all of the op's compute), else after
// it.
struct OpPhase {
  Duration compute, comm;
  bool overlap;
  GroupKind group;
  double contended = 1.0;
  Duration hide, pre;
  Duration host;  // the host's time to issue the phase's kernels and collectives
};

OpPhase Phased(Duration compute, Duration comm, bool overlap, GroupKind group, double contended,
               Duration host) {
  return {compute, comm, overlap, group, contended, overlap ? compute : Duration::Zero(), {}, host};
}

// With the backward split (`split`), B is the backward less its weight gradient and W the
// weight gradient alone, which has no collective of its own. A collective beside the weight
// gradient waits for B's end when W is split off.
OpPhase PartsOf(const OpTime& op, Phase ph, bool split) {
  if (ph == Phase::kW) {
    return Phased(op.wgrad, Duration::Zero(), false, op.bwd_group, op.contended, op.host_w);
  }
  if (ph == Phase::kB) {
    OpPhase o = Phased(split ? op.bwd - op.wgrad : op.bwd, op.bwd_comm, op.bwd_overlap,
                       op.bwd_group, op.contended, split ? op.host_b - op.host_w : op.host_b);
    if (op.bwd_beside_wgrad) {
      o.overlap = !split;
      o.hide = split ? Duration::Zero() : op.wgrad;
      o.pre = op.bwd_regather;
    }
    return o;
  }
  if (ph == Phase::kR && op.rerun < 1) {
    return Phased(op.fwd * op.rerun, op.fwd_comm, op.fwd_overlap, op.fwd_group, op.contended,
                  op.host_f * op.rerun);
  }
  return Phased(op.fwd, op.fwd_comm, op.fwd_overlap, op.fwd_group, op.contended, op.host_f);
}

// A collective of `comm` beside `work`, the work running `slow` times slower while the
// collective runs (GpuSpec::contended_*, as the replay runs them op by op), lasts
// max(comm, work + comm (1 - 1/slow)) - work longer than the work alone: the work's slowdown
// (`slowed`, compute time, as the op-by-op replay counts it) and, where the collective outlasts
// it, the wait for the collective (`waited`, exposed communication).
struct BesideTime {
  Duration slowed, waited;
};
BesideTime Beside(Duration comm, Duration work, double slow) {
  if (comm <= Duration::Zero()) return {};
  if (comm >= work * slow) return {work * (slow - 1), comm - work * slow};
  return {comm * (1 - 1 / slow), Duration::Zero()};
}

// Adds op phase `o` to a phase sum: its compute, and its collectives' exposed part when `comm`
// (a collective beside the op's compute adds what it slows the compute to the compute, and what
// outlasts it to the collective's kind).
template <class Sum>
void AddOp(Sum* sum, const OpPhase& o, bool comm) {
  Duration compute = o.compute;
  if (comm && (o.comm > Duration::Zero() || o.pre > Duration::Zero())) {
    const BesideTime pre = Beside(o.pre, o.compute - o.hide, o.contended);
    const BesideTime own =
        o.overlap ? Beside(o.comm, o.hide, o.contended) : BesideTime{Duration::Zero(), o.comm};
    compute += pre.slowed + own.slowed;
    sum->comm[static_cast<int>(o.group)] += pre.waited + own.waited;
  }
  sum->compute += compute;
  // Beside a data-parallel collective the op's kernels slow (its own slowdown is counted once).
  sum->contended += o.compute * o.contended + (compute - o.compute);
  sum->host += o.host;
}

}  // namespace

void LayerLowering::BuildTimes() {
  LayerPricer pricer(ctx_);
  graph_ = SharedModelGraph(ctx_.model, RankShape(ctx_.training, ctx_.layout));
  pricer.Price(graph_->embedding, &embedding_);
  for (int k = 0; k < kLayerKinds; ++k) {
    const Block& b = graph_->Layer(static_cast<LayerKind>(k));
    if (b.size() > 0) pricer.Price(b, &layers_[k]);
  }
  pricer.Price(graph_->head, &head_);
  pricer.Price(graph_->mtp, &mtp_);
}

Piece LayerLowering::MakePiece(const Block& b, const BlockTime& bt, bool head) const {
  const Training& t = ctx_.training;
  Piece pc;
  pc.time = &bt;
  pc.layer = &bt >= layers_ && &bt < layers_ + kLayerKinds;
  pc.recompute = pc.layer && t.recompute != RecomputeKind::kNone;
  pc.act = ActivationBytes(b, head ? RecomputeKind::kNone : t.recompute);
  pc.act_full = ActivationBytes(b, RecomputeKind::kNone);
  pc.act_w = WeightGradBytes(b);
  pc.transient = TransientBytes(b);
  if (t.finetune != FinetuneKind::kNone) {
    pc.dense = LoraParams(b, t.lora_rank);
    // In the weights' bytes (ctx_.weight_bytes, the gathers' unit): QLoRA's base Linears are
    // 4.127 bits, the embedding and the LM head the weights' own (StageAccounting::BaseBytes).
    const bool table = head || &b == &graph_->embedding;
    const double scale =
        t.finetune == FinetuneKind::kQlora && !table ? (4.127 / 8) / ctx_.weight_bytes : 1.0;
    pc.frozen_expert = BlockParams(b, true) * scale;
    pc.frozen_dense = (BlockParams(b) - BlockParams(b, true)) * scale;
  } else {
    pc.expert = BlockParams(b, true);
    pc.dense = BlockParams(b) - pc.expert;
    if (t.precision == Dtype::kFp8 && t.fp8_param_gather && t.fp8_recipe != Fp8Recipe::kMxfp8) {
      pc.fp8_expert = Fp8GemmParams(b, true);
      pc.fp8_dense = Fp8GemmParams(b) - pc.fp8_expert;
    }
  }
  return pc;
}

void LayerLowering::Segment(Chunk* ch, int stage, int chunk) const {
  // Gradient buckets, filled in backward order (last piece first) as DDP fills them;
  // ZeRO 3 gathers and reduces layer by layer (FSDP wraps each layer). Megatron-Core's
  // distributed optimizer (ZeRO 1) buckets only the first model chunk of pipeline rank 0, and
  // only with overlap: every other stage and chunk is one bucket, reduced once its last backward
  // is done and gathered whole (megatron/core/distributed/distributed_data_parallel.py:
  // bucket_size None without overlap_grad_reduce, where the pipeline rank is above 0, or with
  // disable_bucketing, which megatron/training/training.py get_model sets for
  // model_chunk_idx > 0; core_r0.8.0 to 2026's main alike).
  const Layout& l = ctx_.layout;
  ch->one_bucket = l.zero == 1 && (stage > 0 || chunk > 0 || !l.overlap_dp);
  const double bucket =
      ch->one_bucket ? std::numeric_limits<double>::infinity() : ctx_.bucket_bytes;
  int last = static_cast<int>(ch->pieces.size());
  double filled = 0;
  for (int i = last - 1; i >= 0; --i) {
    filled += (ch->pieces[i].dense + ch->pieces[i].expert) * ctx_.grad_bytes;
    if (filled >= bucket || i == 0 || l.zero == 3) {
      ch->segments.push_back({i, last});
      last = i;
      filled = 0;
    }
  }
  std::reverse(ch->segments.begin(), ch->segments.end());
}

void LayerLowering::BuildChunks() {
  const Layout& l = ctx_.layout;
  const ModelSpec& m = ctx_.model;
  const int p = l.pp, v = ctx_.chunks;
  chunks_.assign(p, std::vector<Chunk>(v));
  chunk_sums_.assign(static_cast<size_t>(p * v), ChunkSums{});
  // Each block's accounting once; pieces copy it.
  const Piece embedding = MakePiece(graph_->embedding, embedding_, false);
  Piece layers[kLayerKinds];
  for (int k = 0; k < kLayerKinds; ++k) {
    const Block& b = graph_->Layer(static_cast<LayerKind>(k));
    if (b.size() > 0) layers[k] = MakePiece(b, layers_[k], false);
  }
  const Piece head = MakePiece(graph_->head, head_, true);
  const Piece mtp = m.mtp_depth > 0 ? MakePiece(graph_->mtp, mtp_, false) : Piece{};
  Piece mtp_head = head;  // the LM head's weights are shared: no parameters of its own
  mtp_head.dense = mtp_head.expert = mtp_head.frozen_dense = mtp_head.frozen_expert = 0;
  // The first module on a stage apart from stage 0 also holds its own input embedding
  // (strategies/memory.cc, ContentsOf): its gradients are the stage's to reduce too.
  Piece mtp_embedding = mtp;
  mtp_embedding.dense += embedding.dense;
  mtp_embedding.frozen_dense += embedding.frozen_dense;
  // Virtual stage g (the schedule's placement: strategies/schedule.h) holds the next layers of
  // its route; two directions each run the whole model.
  const std::vector<ChunkSpan> spans = ChunkSpans(l, m.layers);
  const std::vector<char> recomputed = RecomputedLayers(l, ctx_.training, m.layers);
  for (int g = 0; g < p * v; ++g) {
    const auto [s, c] = PlaceOf(ctx_.schedule, p, g);
    Chunk& ch = chunks_[s][c];
    ch.id = s * v + c;
    const ChunkSpan& span = spans[static_cast<size_t>(g)];
    if (span.embedding) ch.pieces.push_back(embedding);
    for (int i = span.first; i < span.first + span.layers; ++i) {
      ch.pieces.push_back(layers[static_cast<int>(m.KindOf(i))]);
      if (!recomputed[static_cast<size_t>(i)]) {  // past the chunk's recompute_layers
        Piece& pc = ch.pieces.back();
        pc.recompute = false;
        pc.act = pc.act_full;
      }
    }
    if (span.head) {
      ch.pieces.push_back(head);
      // Multi-token prediction after the head: its module, its layer, the shared head again.
      const bool own_embedding = !ctx_.schedule.bidirectional() && s != 0;
      for (int d = 0; d < m.mtp_depth; ++d) {
        ch.pieces.push_back(d == 0 && own_embedding ? mtp_embedding : mtp);
        ch.pieces.push_back(
            layers[static_cast<int>(m.is_moe() ? LayerKind::kMoe : LayerKind::kDense)]);
        ch.pieces.push_back(mtp_head);
      }
    }
    for (const Piece& pc : ch.pieces) {
      ch.act += pc.act;
      ch.act_w += pc.act_w;
      ch.transient = std::max(ch.transient, pc.transient);
      if (pc.layer) ch.layer_transient = std::max(ch.layer_transient, pc.transient);
      if (pc.recompute) {
        ch.act_full_max = std::max(ch.act_full_max, pc.act_full - pc.act);
      }
    }
    Segment(&ch, s, c);
  }
}

void LayerLowering::Emit(int stage, const Chunk& ch, int first, int last, Phase ph) {
  if (ctx_.options.granularity == Granularity::kCoarse) {
    EmitCoarse(stage, ch, first, last, ph);
  } else {
    EmitOps(stage, ch, first, last, ph);
  }
}

bool LayerLowering::Runs(const Piece& pc, const OpTime& op, Phase ph) const {
  // Recompute reruns the layers' ops its mode names (models/layer_graph.h Recomputes).
  if (ph != Phase::kR) return true;
  return pc.recompute && op.recompute;
}

LayerLowering::PhaseSum LayerLowering::Sum(const Chunk& ch, int first, int last, Phase ph) const {
  if (const PhaseSum* kept = Kept(ch, first, last, ph)) return *kept;
  return SumOnce(ch, first, last, ph);
}

LayerLowering::PhaseSum LayerLowering::SumOnce(const Chunk& ch, int first, int last,
                                               Phase ph) const {
  // A chunk's layers share a few block times: each block's sum is taken once and added per
  // piece. Durations are whole picoseconds, so the total is the op-by-op sum exactly.
  PhaseSum sum;
  const PhaseSum* piece = nullptr;  // the last piece's, reused while the pieces repeat
  for (int i = first; i < last; ++i) {
    const Piece& pc = ch.pieces[i];
    if (piece == nullptr || pc.time != ch.pieces[i - 1].time ||
        pc.recompute != ch.pieces[i - 1].recompute) {
      piece = &PieceSum(pc, ph);
    }
    sum.compute += piece->compute;
    sum.contended += piece->contended;
    sum.host += piece->host;
    for (int k = 0; k < kNumGroups; ++k) sum.comm[k] += piece->comm[k];
  }
  return sum;
}

const LayerLowering::PhaseSum& LayerLowering::PieceSum(const Piece& pc, Phase ph) const {
  const PieceKey key{pc.time, pc.recompute, ph};
  auto it = piece_sums_.find(key);
  if (it != piece_sums_.end()) return it->second;
  PhaseSum sum;
  for (const OpTime& op : pc.time->ops) {
    if (!Runs(pc, op, ph)) continue;
    AddOp(&sum, PartsOf(op, ph, ctx_.schedule.splits_backward()), true);
  }
  return piece_sums_.emplace(key, sum).first->second;
}

Duration LayerLowering::PhaseCompute(const Chunk& ch, Phase ph) const {
  return Sum(ch, 0, static_cast<int>(ch.pieces.size()), ph).compute;
}

Duration LayerLowering::WholeBackwardSerial(const Chunk& ch, bool ep) const {
  PhaseSum sum;
  for (const Piece& pc : ch.pieces) {
    for (const OpTime& op : pc.time->ops) AddOp(&sum, PartsOf(op, Phase::kB, false), true);
  }
  return Serial(sum, ep);
}

Duration LayerLowering::PhaseSerial(const Chunk& ch, Phase ph, bool ep) const {
  return Serial(Sum(ch, 0, static_cast<int>(ch.pieces.size()), ph), ep);
}

Duration LayerLowering::Serial(const PhaseSum& sum, bool ep) {
  Duration d = sum.compute;
  if (d <= Duration::Zero()) return d;  // EmitSum emits nothing, collectives included
  d += sum.comm[static_cast<int>(GroupKind::kTp)] + sum.comm[static_cast<int>(GroupKind::kCp)] +
       sum.comm[static_cast<int>(GroupKind::kEtp)];
  if (ep) d += sum.comm[static_cast<int>(GroupKind::kEp)];
  return d;
}

void LayerLowering::EmitCoarse(int stage, const Chunk& ch, int first, int last, Phase ph) {
  if (const PhaseSum* kept = Kept(ch, first, last, ph)) {
    EmitSum(stage, *kept, PhaseCat(ph));  // which keeps its cost keys
  } else {
    EmitSum(stage, SumOnce(ch, first, last, ph), PhaseCat(ph));
  }
}

const LayerLowering::PhaseSum* LayerLowering::Kept(const Chunk& ch, int first, int last,
                                                   Phase ph) const {
  if (ch.id < 0 || static_cast<size_t>(ch.id) >= chunk_sums_.size()) return nullptr;
  const int nseg = static_cast<int>(ch.segments.size());
  int slot = -1;
  if (first == 0 && last == static_cast<int>(ch.pieces.size())) slot = nseg;
  for (int k = 0; k < nseg && slot < 0; ++k) {
    if (ch.segments[k].first == first && ch.segments[k].second == last) slot = k;
  }
  if (slot < 0) return nullptr;
  ChunkSums& cs = chunk_sums_[static_cast<size_t>(ch.id)];
  if (cs.have.empty()) {
    cs.sums.resize(static_cast<size_t>((nseg + 1) * kPhases));
    cs.have.assign(cs.sums.size(), 0);
  }
  const size_t i = static_cast<size_t>(slot * kPhases + static_cast<int>(ph));
  if (!cs.have[i]) {
    cs.sums[i] = SumOnce(ch, first, last, ph);
    cs.have[i] = 1;
  }
  return &cs.sums[i];
}

void LayerLowering::EmitSum(int stage, const PhaseSum& sum, TaskCat cat) {
  // One task for the compute of the pieces, then the exposed part of each collective kind.
  if (sum.compute <= Duration::Zero()) return;  // nothing to recompute in these pieces
  if (sum.compute_key == sim::kNone) sum.compute_key = ctx_.Key(sum.compute, sum.contended);
  for (Replica& r : topo_.stage(stage)) {
    topo_.Compute(r, sum.compute_key, cat, ctx_.Label(cat), sum.host);
  }
  for (GroupKind g : {GroupKind::kTp, GroupKind::kEtp, GroupKind::kCp, GroupKind::kEp}) {
    const int k = static_cast<int>(g);
    if (sum.comm[k] <= Duration::Zero()) continue;
    if (sum.comm_key[k] == sim::kNone) sum.comm_key[k] = ctx_.Key(sum.comm[k]);
    topo_.Blocking(stage, k, sum.comm_key[k], CommCat(g));
  }
}

void LayerLowering::EmitOp(int stage, const OpTime& op, Phase ph, bool split, bool comm) {
  const TaskCat cat = PhaseCat(ph);
  const OpPhase o = PartsOf(op, ph, split);
  const uint32_t label = ph == Phase::kF ? op.label_f : ph == Phase::kR ? op.label_r : op.label_b;
  const int k = static_cast<int>(o.group);
  if (o.pre > Duration::Zero() || (o.overlap && o.hide < o.compute)) {
    // The head of the compute (with `pre` beside it), then the tail that hides the collective.
    const Duration head = o.compute - o.hide;
    for (Replica& r : topo_.stage(stage)) {
      topo_.Compute(r, head, cat, label, head * o.contended, o.host);
    }
    if (comm && o.pre > Duration::Zero())
      topo_.Overlapped(stage, k, o.pre, CommCat(o.group), label);
    if (o.hide > Duration::Zero()) {
      for (Replica& r : topo_.stage(stage)) {
        topo_.Compute(r, o.hide, cat, label, o.hide * o.contended);
      }
    }
  } else {
    for (Replica& r : topo_.stage(stage)) {
      topo_.Compute(r, o.compute, cat, label, o.compute * o.contended, o.host);
    }
  }
  if (!comm || o.comm <= Duration::Zero()) return;
  if (o.overlap) {
    topo_.Overlapped(stage, k, o.comm, CommCat(o.group), label);
  } else {
    topo_.Blocking(stage, k, o.comm, CommCat(o.group));
  }
}

void LayerLowering::EmitOps(int stage, const Chunk& ch, int first, int last, Phase ph) {
  // Every op, and its collective, in execution order (backward runs the pieces in reverse).
  const bool backward = ph == Phase::kB || ph == Phase::kW;
  const bool split = ctx_.schedule.splits_backward();
  const int step = backward ? -1 : 1;
  for (int pi = backward ? last - 1 : first; backward ? pi >= first : pi < last; pi += step) {
    const auto& ops = ch.pieces[pi].time->ops;
    const int n = static_cast<int>(ops.size());
    for (int oi = backward ? n - 1 : 0; backward ? oi >= 0 : oi < n; oi += step) {
      if (Runs(ch.pieces[pi], ops[oi], ph)) EmitOp(stage, ops[oi], ph, split, true);
    }
  }
}

std::vector<LayerLowering::FbStep> LayerLowering::FbSteps(const Chunk& ch,
                                                          std::initializer_list<Phase> phases,
                                                          bool whole) const {
  const bool split = ctx_.schedule.splits_backward() && !whole;
  std::vector<FbStep> out(1);
  const int np = static_cast<int>(ch.pieces.size());
  for (Phase ph : phases) {
    const bool backward = ph == Phase::kB || ph == Phase::kW;
    const int step = backward ? -1 : 1;
    for (int pi = backward ? np - 1 : 0; backward ? pi >= 0 : pi < np; pi += step) {
      const auto& ops = ch.pieces[pi].time->ops;
      const int n = static_cast<int>(ops.size());
      for (int oi = backward ? n - 1 : 0; backward ? oi >= 0 : oi < n; oi += step) {
        if (!Runs(ch.pieces[pi], ops[oi], ph)) continue;
        out.back().ops.push_back({pi, oi, ph});
        const OpPhase o = PartsOf(ops[oi], ph, split);
        if (o.group == GroupKind::kEp && !o.overlap && o.comm > Duration::Zero()) {
          out.back().ep = o.comm;
          out.emplace_back();
        }
      }
    }
  }
  if (out.size() > 1 && out.back().ops.empty()) out.pop_back();
  out.back().ep = Duration::Zero();  // a closing all-to-all blocks: the unit's end waits for it
  return out;
}

void LayerLowering::EmitFbStep(int stage, const Chunk& ch, const FbStep& st, bool whole) {
  const bool split = ctx_.schedule.splits_backward() && !whole;
  const bool closes = st.ep > Duration::Zero();
  if (ctx_.options.granularity == Granularity::kOp) {
    for (size_t i = 0; i < st.ops.size(); ++i) {
      const OpRef& r = st.ops[i];
      EmitOp(stage, ch.pieces[r.piece].time->ops[r.op], r.ph, split,
             !closes || i + 1 < st.ops.size());
    }
    return;
  }
  // Coarse: one compute task per phase run of the step, with its exposed collectives.
  PhaseSum sum;
  Phase ph = st.ops.empty() ? Phase::kF : st.ops.front().ph;
  for (size_t i = 0; i < st.ops.size(); ++i) {
    const OpRef& r = st.ops[i];
    if (r.ph != ph) {
      EmitSum(stage, sum, PhaseCat(ph));
      sum = PhaseSum{};
      ph = r.ph;
    }
    AddOp(&sum, PartsOf(ch.pieces[r.piece].time->ops[r.op], r.ph, split),
          !closes || i + 1 < st.ops.size());
  }
  EmitSum(stage, sum, PhaseCat(ph));
}

}  // namespace parasim
