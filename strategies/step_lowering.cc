#include "strategies/step_lowering.h"

#include <fmt/core.h>

#include <algorithm>
#include <tuple>

#include "models/layer_graph.h"
#include "strategies/memory.h"
#include "strategies/step_shift.h"
#include "strategies/unit_walk.h"

namespace parasim {

using sim::kNone;
using sim::TaskId;

Status StepLowering::Run() {
  layers_.BuildTimes();
  ctx_.InternCategoryLabels();
  layers_.BuildChunks();
  topo_.Build();
  AllocateStates();
  dp_.IssueStartGathers();
  PARASIM_RETURN_IF_ERROR(EmitSchedule());
  dp_.Finish();
  // The step's last tasks (reductions, the optimizer) have no counterpart.
  if (!ctx_.out.shift.empty()) ctx_.out.shift.resize(ctx_.program.num_tasks(), kNone);
  RecordUnitTimes();
  return Status::Ok();
}

UnitDurations StepLowering::DurationsOf(const Chunk& ch, bool whole_backward) const {
  const bool recompute = ctx_.training.recompute != RecomputeKind::kNone;
  const bool ep = !PairsForwardBackward(ctx_.layout);
  UnitDurations t;
  const Duration r = recompute ? layers_.PhaseSerial(ch, Phase::kR, ep) : Duration::Zero();
  t.f = layers_.PhaseSerial(ch, Phase::kF, ep);
  t.b = layers_.PhaseSerial(ch, Phase::kB, ep) + r;
  t.w = ctx_.schedule.splits_backward() ? layers_.PhaseSerial(ch, Phase::kW, ep) : Duration::Zero();
  t.bw = whole_backward ? Min(t.b + t.w, layers_.WholeBackwardSerial(ch, ep) + r) : t.b + t.w;
  return t;
}

void StepLowering::RecordUnitTimes() {
  double f = 0, b = 0, w = 0, n = 0;
  for (int s = 0; s < ctx_.layout.pp; ++s) {
    for (const Chunk& ch : layers_.chunks(s)) {
      const UnitDurations t = DurationsOf(ch, false);
      f += t.f.seconds();
      b += t.b.seconds();
      w += t.w.seconds();
      n += 1;
    }
  }
  if (n > 0) ctx_.out.unit_times_s = {f / n, b / n, w / n};
}

Duration StepLowering::LowerBound() {
  // Each stage's compute stream runs its units one after another, so the step lasts at least
  // a stage's units, plus the forwards of one micro-batch on the stages before it and, when the
  // backward is not split, the backwards of one micro-batch on those stages after its last
  // unit. A unit holds the stream for its compute and its blocking collectives
  // (LayerLowering::PhaseSerial: TP, CP, and EP unless F&B pairs overlap those). Transfers,
  // contention, the host and every other wait only add to this. The step also lasts each
  // data-parallel stream's collectives in turn (DataParallelLowering::StreamBound); the
  // optimizer's pass follows both. Under ZeRO 3 a stage's gathers and copy-outs form one
  // chain (DataParallelLowering::GatherForCompute), which lasts their sum.
  layers_.BuildTimes();
  layers_.BuildChunks();
  const int p = ctx_.layout.pp;
  const bool split = ctx_.schedule.splits_backward();
  const bool recompute = ctx_.training.recompute != RecomputeKind::kNone;
  const bool ep = !PairsForwardBackward(ctx_.layout);
  auto serial = [&](const Chunk& ch, Phase ph) { return layers_.PhaseSerial(ch, ph, ep); };
  Duration fill, drain, bound;
  // DualPipe's upward copy reaches stage s after the forwards of the stages above it: its
  // first unit waits for the nearer end only.
  std::vector<Duration> fill_up(p + 1);
  if (ctx_.schedule.bidirectional()) {
    for (int s = p - 1; s >= 0; --s) {
      fill_up[s] = fill_up[s + 1] +
                   (s + 1 < p ? serial(layers_.chunk(s + 1, 1), Phase::kF) : Duration::Zero());
    }
  }
  const bool per_layer = dp_.GathersPerLayer();
  const GpuSpec& gpu = ctx_.cluster.gpu;
  const Duration host_step = gpu.host_op_time > Duration::Zero() ? gpu.host_step_time : Duration();
  for (int s = 0; s < p; ++s) {
    Duration per_mb, chain_per_mb;
    for (const Chunk& ch : layers_.chunks(s)) {
      per_mb += serial(ch, Phase::kF) + serial(ch, Phase::kB);
      if (split) per_mb += serial(ch, Phase::kW);
      if (recompute) per_mb += serial(ch, Phase::kR);
      if (!per_layer) continue;
      // The gathers every micro-batch makes (those held to the step's end: none).
      const double gathers =
          (dp_.GathersForForward(1) ? 1.0 : 0.0) + (dp_.GathersForBackward() ? 1.0 : 0.0);
      for (auto [a, b] : ch.segments) {
        const Duration copy = dp_.CopyOutTime(ch, a, b);
        per_mb += copy * gathers;
        chain_per_mb += (dp_.IssuedTime(ch, a, b, true) + copy) * gathers;
      }
    }
    const Duration stage = per_mb * static_cast<double>(ctx_.chunk_micro_batches);
    const Duration wait = ctx_.schedule.bidirectional() ? Min(fill, fill_up[s]) : fill;
    // The optimizer's pass ends each rank's compute stream, after every collective and the
    // host's step time (DataParallelLowering::OptimizerStep): stage s's after its own last
    // unit; after the drain (the backwards of the stages before it), stage 0's.
    const Duration opt = dp_.OptimizerTime(s) + host_step;
    bound = Max(bound, wait + stage + opt);
    if (!split && s > 0)
      bound = Max(bound, wait + stage + drain + dp_.OptimizerTime(0) + host_step);
    // The stage's data-parallel streams run their collectives one after another, each at
    // least its time alone (a flow's bytes are derived from that time: the rounding to whole
    // bytes is why a part in a million is left out).
    bound = Max(bound, dp_.StreamBound(s) * (1 - 1e-6) + opt);
    if (chain_per_mb > Duration::Zero()) {
      bound = Max(bound,
                  chain_per_mb * static_cast<double>(ctx_.chunk_micro_batches) * (1 - 1e-6) + opt);
    }
    const Chunk& first = layers_.chunk(s, 0);
    fill += serial(first, Phase::kF);
    drain += serial(first, Phase::kB) + (recompute ? serial(first, Phase::kR) : Duration::Zero());
  }
  return bound;
}

ChunkComm StepLowering::ChunkCommOf(int s, int c) const {
  const Chunk& ch = layers_.chunk(s, c);
  const bool per_layer = dp_.GathersPerLayer();
  ChunkComm cc;
  const size_t n = ch.segments.size();
  for (size_t k = 0; k < n; ++k) {
    const auto [a, b] = ch.segments[k];
    (k == 0 ? cc.reduce_last : cc.reduce_rest) += dp_.IssuedTime(ch, a, b, false);
    if (!per_layer) continue;
    const Duration g = dp_.IssuedTime(ch, a, b, true);
    cc.gather += g;
    cc.copy += dp_.CopyOutTime(ch, a, b);
    if (k == 0) cc.gather_f = g;
    if (k + 1 == n) cc.gather_b = g;
  }
  std::tie(cc.start_wait, cc.start_after) = dp_.StartGatherWait(s, c);
  return cc;
}

void StepLowering::TransferTimes(std::vector<Duration>* into_f,
                                 std::vector<Duration>* into_b) const {
  const int p = ctx_.layout.pp;
  const int V = p * ctx_.chunks;
  const int route = ctx_.route;
  const Bytes act = ActivationBytes();
  auto hop = [&](int from, int to) {
    if (from == to) return Duration::Zero();  // a V's turn: no transfer
    const Placement& pl = ctx_.placement;
    const bool inter = pl.Node(pl.Rank({0, 0, 0, from})) != pl.Node(pl.Rank({0, 0, 0, to}));
    return topo_.TransferCost(act, inter).time;
  };
  into_f->assign(V, Duration::Zero());
  into_b->assign(V, Duration::Zero());
  for (int g = 0; g < V; ++g) {
    const int here = PlaceOf(ctx_.schedule, p, g).stage;
    if (g % route > 0) (*into_f)[g] = hop(PlaceOf(ctx_.schedule, p, g - 1).stage, here);
    if (g % route < route - 1) (*into_b)[g] = hop(PlaceOf(ctx_.schedule, p, g + 1).stage, here);
  }
}

Duration StepLowering::ScheduleBound() const {
  const int p = ctx_.layout.pp;
  ScheduleBoundInput in{ctx_.schedule};
  in.stages = p;
  in.chunks = ctx_.chunks;
  in.micro_batches = ctx_.micro_batches;
  in.route = ctx_.route;
  in.split = ctx_.schedule.splits_backward();
  in.per_layer = dp_.GathersPerLayer();
  in.gathers_every_forward = dp_.GathersForForward(1);
  in.gathers_backward = dp_.GathersForBackward();
  in.waits = dp_.BackwardWaitsForReductions();
  // As DataParallelLowering::Reduces.
  in.dp_reduces = ctx_.dp_comm;
  in.reduces_every_micro_batch = ctx_.layout.reduces_every_micro_batch();
  in.last_micro_batch = ctx_.chunk_micro_batches - 1;
  in.times.resize(p);
  in.comm.resize(p);
  for (int s = 0; s < p; ++s) {
    const std::vector<Chunk>& chunks = layers_.chunks(s);
    for (size_t c = 0; c < chunks.size(); ++c) {
      in.times[s].push_back(DurationsOf(chunks[c], true));
      in.comm[s].push_back(ChunkCommOf(s, static_cast<int>(c)));
    }
    in.optimizer.push_back(dp_.OptimizerTime(s));
  }
  // What a unit receives from the unit before it on another stage (Send): one activation's
  // transfer, alone on its link (the sweep's replica, tp = cp = dp coordinate 0).
  TransferTimes(&in.into_f, &in.into_b);
  const auto orders = SharedLayoutOrders(ctx_.layout, {p, ctx_.chunks, ctx_.micro_batches});
  return WalkScheduleBound(in, *orders);
}

void StepLowering::AllocateStates() {
  // States and buffers held all step (the memory planner's accounting), from the start.
  MemoryReport mem = EstimateMemory(ctx_.model, ctx_.training, ctx_.layout, ctx_.cluster);
  const uint32_t start_label = ctx_.program.Intern("step start");
  for (int s = 0; s < ctx_.layout.pp; ++s) {
    const StageMemory& st = mem.stages[s];
    const double fixed = st.held_bytes();
    ctx_.out.static_bytes.push_back(fixed);
    ctx_.out.reserve_bytes.push_back(st.reserve_bytes);
    for (Replica& r : topo_.stage(s)) {
      TaskId t = ctx_.program.AddCompute(r.compute, ctx_.Key(Duration::Zero()),
                                         static_cast<uint8_t>(TaskCat::kForward), start_label);
      r.prev = t;
      ctx_.program.AddMemory(t, r.rank, Bytes(fixed), sim::MemoryAt::kStart);
    }
  }
}

Status StepLowering::EmitSchedule() {
  // Emit every stage's units in schedule order, interleaving stages so that a unit is emitted
  // after the unit it receives from (its transfer then exists to depend on).
  const int p = ctx_.layout.pp;
  const int V = p * ctx_.chunks;
  const int64_t m = ctx_.micro_batches;
  const int route = ctx_.route;
  replicas_ = topo_.stage(0).size();
  fwd_in_.assign(Slot(V, 0) * replicas_, kNone);
  bwd_in_.assign(Slot(V, 0) * replicas_, kNone);
  UnitsDone done{route, m, std::vector<char>(Slot(V, 0), 0), std::vector<char>(Slot(V, 0), 0)};
  const auto orders = SharedLayoutOrders(ctx_.layout, {p, ctx_.chunks, m});
  const std::vector<std::vector<Unit>>& order = *orders;
  size_t remaining = 0;
  for (const auto& units : order) remaining += units.size();
  // Every (chunk, micro-batch) runs F and B, and W when the backward is split.
  const size_t units = (ctx_.schedule.splits_backward() ? 3 : 2) * static_cast<size_t>(V) *
                       static_cast<size_t>(ctx_.chunk_micro_batches);
  if (remaining != units) {
    return Internal(
        fmt::format("pipeline schedule {} ordered {} units of {} (pp {}, {} micro-batches)",
                    ctx_.schedule.name(), remaining, units, p, m));
  }
  auto emit = [&](int s, size_t at, size_t idx) -> size_t {
    const std::vector<Unit>& o = order[s];
    const Unit& u = o[at];
    if (RunsAsPair(o, at)) {
      // An F&B unit: the backward must be ready too.
      const Unit& b = o[at + 1];
      const int gb = VirtualStageOf(ctx_.schedule, p, s, b.chunk);
      const size_t bidx = Slot(gb, b.mb);
      if (!done.BackwardReady(gb, bidx)) return 0;
      const Unit* w = nullptr;
      if (at + 2 < o.size()) {
        const Unit& x = o[at + 2];
        if (x.phase == Phase::kW && x.chunk == b.chunk && x.mb == b.mb) w = &x;
      }
      EmitPair(s, u, b, w);
      done.f[idx] = 1;
      done.b[bidx] = 1;
      return w != nullptr ? 3 : 2;
    }
    EmitUnit(s, u);
    if (u.phase != Phase::kW) (u.phase == Phase::kF ? done.f : done.b)[idx] = 1;
    return 1;
  };
  // The tasks each unit emitted (by stage and place in its order), for the periodic shift,
  // when the step has one.
  ctx_.out.shift.clear();
  ctx_.out.anchors.clear();
  const int64_t period = ShiftPeriod(ctx_.schedule, p, m, ctx_.layout.microbatch_group);
  EmittedTasks emitted(period > 0 ? p : 0);
  for (size_t s = 0; s < emitted.size(); ++s) emitted[s].assign(order[s].size(), {kNone, kNone});
  const bool walked =
      WalkOrders(order, ctx_.schedule, done, [&](int s, size_t at, int, size_t idx) -> size_t {
        const TaskId begin = static_cast<TaskId>(ctx_.program.num_tasks());
        const size_t n = emit(s, at, idx);
        if (n > 0 && period > 0) {
          emitted[s][at] = {begin, static_cast<TaskId>(ctx_.program.num_tasks())};
        }
        return n;
      });
  if (!walked) {
    return Internal(fmt::format("pipeline schedule {} has a cycle (no stage can proceed)",
                                ctx_.schedule.name()));
  }
  if (period > 0) {
    BuildShift(order, emitted, period, ctx_.chunks, m, ctx_.program.num_tasks(), &ctx_.out);
  }
  return Status::Ok();
}

void StepLowering::EmitUnit(int s, const Unit& u) {
  for (Replica& r : topo_.stage(s)) r.first = kNone;
  if (u.phase == Phase::kF) {
    EmitForward(s, u);
  } else if (u.phase == Phase::kW) {
    EmitWeightGradient(s, u);
  } else {
    EmitBackward(s, u);
  }
}

void StepLowering::EmitPair(int s, const Unit& f, const Unit& b, const Unit* w) {
  const bool split = ctx_.schedule.splits_backward();
  const bool whole = w != nullptr;
  const bool reduces = (whole || !split) && dp_.Reduces(b.mb);
  if (topo_.stage(s).front().side_ep == kNone || dp_.GathersPerLayer() ||
      (f.mb == 0 && dp_.GathersAtStart()) || reduces) {
    EmitUnit(s, f);
    EmitUnit(s, b);
    if (w != nullptr) EmitUnit(s, *w);
    return;
  }
  const int p = ctx_.layout.pp;
  const int route = ctx_.route;
  const int gf = VirtualStageOf(ctx_.schedule, p, s, f.chunk);
  const int gb = VirtualStageOf(ctx_.schedule, p, s, b.chunk);
  const Chunk& cf = layers_.chunk(s, f.chunk);
  const Chunk& cb = layers_.chunk(s, b.chunk);
  topo_.HostWork(s, ctx_.cluster.gpu.host_micro_batch_time);  // as EmitForward
  dp_.BeforeForward(s);
  const bool recompute = ctx_.training.recompute != RecomputeKind::kNone;
  const std::vector<LayerLowering::FbStep> fs = layers_.FbSteps(cf, {Phase::kF}, false);
  const std::vector<LayerLowering::FbStep> bs =
      recompute ? layers_.FbSteps(cb, {Phase::kR, Phase::kB}, whole)
                : layers_.FbSteps(cb, {Phase::kB}, whole);
  auto& reps = topo_.stage(s);
  const size_t n = reps.size();
  // Per unit and replica: what its next step waits for, and its first task.
  struct Side {
    std::vector<std::vector<TaskId>> wait;
    std::vector<TaskId> first;
  } sf{std::vector<std::vector<TaskId>>(n), std::vector<TaskId>(n, kNone)},
      sb{std::vector<std::vector<TaskId>>(n), std::vector<TaskId>(n, kNone)};
  for (size_t i = 0; i < n; ++i) {
    if (gf % route > 0 && FwdIn(Slot(gf, f.mb))[i] != kNone) {
      sf.wait[i].push_back(FwdIn(Slot(gf, f.mb))[i]);
    }
    if (gb % route < route - 1 && BwdIn(Slot(gb, b.mb))[i] != kNone) {
      sb.wait[i].push_back(BwdIn(Slot(gb, b.mb))[i]);
    }
  }
  auto run = [&](const Chunk& ch, const LayerLowering::FbStep& st, Side& side, bool w_in) {
    for (size_t i = 0; i < n; ++i) {
      reps[i].first = kNone;
      reps[i].pending.insert(reps[i].pending.end(), side.wait[i].begin(), side.wait[i].end());
      side.wait[i].clear();
    }
    layers_.EmitFbStep(s, ch, st, w_in);
    for (size_t i = 0; i < n; ++i) {
      if (reps[i].first == kNone) {
        side.wait[i].swap(reps[i].pending);  // an empty step: its waits carry on
      } else if (side.first[i] == kNone) {
        side.first[i] = reps[i].first;
      }
    }
    if (st.ep > Duration::Zero()) {
      const std::vector<TaskId> a2a =
          topo_.Async(s, static_cast<int>(GroupKind::kEp), st.ep, CommCat(GroupKind::kEp));
      for (size_t i = 0; i < n; ++i) side.wait[i].push_back(a2a[i]);
    }
  };
  for (size_t i = 0, j = 0; i < fs.size() || j < bs.size();) {
    // The backward first: its first step is short (the residual, the shared expert and the
    // combine's gradient), so its all-to-all runs beside the forward's attention, and the
    // forward's dispatch beside the backward's experts (DeepSeek-V3, Figure 4).
    if (j < bs.size()) {
      run(cb, bs[j], sb, whole);
      if (++j == bs.size()) EndBackward(s, b, sb.first, split && !whole);
    }
    if (i < fs.size()) {
      run(cf, fs[i], sf, false);
      if (++i == fs.size()) EndForward(s, f, sf.first);
    }
  }
}

void StepLowering::EmitForward(int s, const Unit& u) {
  const int p = ctx_.layout.pp;
  const int g = VirtualStageOf(ctx_.schedule, p, s, u.chunk);
  const Chunk& ch = layers_.chunk(s, u.chunk);
  auto& reps = topo_.stage(s);
  if (g % ctx_.route > 0) {
    HostWaitsForTransfer(s, FwdIn(Slot(g, u.mb)));
    topo_.WaitFor(s, FwdIn(Slot(g, u.mb)));
  }
  // The training loop's Python for this micro-batch (the schedule's steps, the batch).
  topo_.HostWork(s, ctx_.cluster.gpu.host_micro_batch_time);
  dp_.BeforeForward(s);
  const bool first_f = u.mb == 0 && dp_.GathersAtStart();
  const int nseg = static_cast<int>(ch.segments.size());
  if (dp_.GathersForForward(u.mb)) {
    // FSDP: gather each layer's parameters before its forward, one layer ahead, and copy them
    // out of the gather's buffer (DataParallelLowering::GatherForCompute).
    for (auto [a, b] : ch.segments) {
      dp_.GatherForCompute(s, ch, a, b);
      layers_.Emit(s, ch, a, b, Phase::kF);
    }
  } else if (first_f && ctx_.layout.overlap_dp) {
    for (int k = 0; k < nseg; ++k) {
      dp_.WaitStartGather(s, u.chunk, k);
      layers_.Emit(s, ch, ch.segments[k].first, ch.segments[k].second, Phase::kF);
    }
  } else {
    if (first_f) {
      // Without overlap the updated parameters are all gathered before any forward.
      dp_.WaitAllStartGathers(s);
    }
    layers_.Emit(s, ch, 0, static_cast<int>(ch.pieces.size()), Phase::kF);
  }
  firsts_.clear();
  for (const Replica& r : reps) firsts_.push_back(r.first);
  EndForward(s, u, firsts_);
}

void StepLowering::EndForward(int s, const Unit& u, const std::vector<TaskId>& first) {
  // The chunk's activations are held from the forward's first task; the output goes on.
  const int p = ctx_.layout.pp;
  const int g = VirtualStageOf(ctx_.schedule, p, s, u.chunk);
  const Chunk& ch = layers_.chunk(s, u.chunk);
  auto& reps = topo_.stage(s);
  for (size_t i = 0; i < reps.size(); ++i) {
    ctx_.program.AddMemory(first[i], reps[i].rank, Bytes(ch.act), sim::MemoryAt::kStart);
    // Beside them while the unit runs: its ops' working memory (the loss's copies of the logits).
    if (ch.transient > 0) {
      ctx_.program.AddMemory(first[i], reps[i].rank, Bytes(ch.transient), sim::MemoryAt::kStart);
      ctx_.program.AddMemory(reps[i].prev, reps[i].rank, Bytes(-ch.transient), sim::MemoryAt::kEnd);
    }
  }
  if (!ch.pieces.empty() && ch.pieces.back().time == &layers_.head_time()) {
    // Megatron-LM's loss function checks the loss for NaN and Inf on the host (pretrain_gpt.py
    // loss_func, rerun_state_machine.validate_result, a tensor read as a bool): the host waits.
    topo_.SyncStage(s, {});
  }
  if (g % ctx_.route < ctx_.route - 1) {
    Send(s, PlaceOf(ctx_.schedule, p, g + 1).stage, Phase::kF, FwdIn(Slot(g + 1, u.mb)));
  }
}

void StepLowering::EndBackward(int s, const Unit& u, const std::vector<TaskId>& first,
                               bool keep_w) {
  const int p = ctx_.layout.pp;
  const int g = VirtualStageOf(ctx_.schedule, p, s, u.chunk);
  const Chunk& ch = layers_.chunk(s, u.chunk);
  auto& reps = topo_.stage(s);
  const bool recompute = ctx_.training.recompute != RecomputeKind::kNone;
  // Recompute rebuilds one layer's dropped activations at a time (Megatron recomputes per
  // layer), beside that layer's working memory; or the loss's backward's copies of the logits.
  const double working =
      std::max((recompute ? ch.act_full_max : 0.0) + ch.layer_transient, ch.transient);
  for (size_t i = 0; i < reps.size(); ++i) {
    Replica& r = reps[i];
    if (working > 0) {
      ctx_.program.AddMemory(first[i], r.rank, Bytes(working), sim::MemoryAt::kStart);
      ctx_.program.AddMemory(r.prev, r.rank, Bytes(-working), sim::MemoryAt::kEnd);
    }
    // A split backward keeps what W needs (rebuilt by full recompute: then more than `act`).
    const double release = keep_w ? ch.act - ch.act_w : ch.act;
    ctx_.program.AddMemory(r.prev, r.rank, Bytes(-release), sim::MemoryAt::kEnd);
  }
  if (g % ctx_.route > 0) {
    Send(s, PlaceOf(ctx_.schedule, p, g - 1).stage, Phase::kB, BwdIn(Slot(g - 1, u.mb)));
  }
}

void StepLowering::EmitBackward(int s, const Unit& u) {
  // Backward, after recompute when activations were dropped.
  const int p = ctx_.layout.pp;
  const int g = VirtualStageOf(ctx_.schedule, p, s, u.chunk);
  const Chunk& ch = layers_.chunk(s, u.chunk);
  auto& reps = topo_.stage(s);
  if (g % ctx_.route < ctx_.route - 1) {
    HostWaitsForTransfer(s, BwdIn(Slot(g, u.mb)));
    topo_.WaitFor(s, BwdIn(Slot(g, u.mb)));
  }
  const bool recompute = ctx_.training.recompute != RecomputeKind::kNone;
  // With the backward split, the gradients are reduced and the activations freed after W.
  const bool split = ctx_.schedule.splits_backward();
  const bool reduce = !split && dp_.Reduces(u.mb);
  auto backward = [&](int a, int b) {
    if (recompute) layers_.Emit(s, ch, a, b, Phase::kR);
    layers_.Emit(s, ch, a, b, Phase::kB);
  };
  if (!reduce && !dp_.GathersPerLayer()) {
    backward(0, static_cast<int>(ch.pieces.size()));
  } else {
    const std::vector<size_t> marks = reduce ? dp_.ReductionMarks(s) : std::vector<size_t>{};
    for (int k = static_cast<int>(ch.segments.size()) - 1; k >= 0; --k) {
      auto [a, b] = ch.segments[k];
      if (dp_.GathersForBackward()) dp_.GatherForCompute(s, ch, a, b);
      backward(a, b);
      if (reduce) dp_.Reduce(s, u.chunk, a, b);
    }
    if (reduce) dp_.EndBackward(s, marks);
  }
  firsts_.clear();
  for (const Replica& r : reps) firsts_.push_back(r.first);
  EndBackward(s, u, firsts_, split);
}

void StepLowering::EmitWeightGradient(int s, const Unit& u) {
  // W needs its GEMMs' saved inputs (act_w, kept by B); then the gradients are reduced bucket
  // by bucket as for a backward.
  const Chunk& ch = layers_.chunk(s, u.chunk);
  if (dp_.Reduces(u.mb)) {
    const std::vector<size_t> marks = dp_.ReductionMarks(s);
    for (int k = static_cast<int>(ch.segments.size()) - 1; k >= 0; --k) {
      auto [a, b] = ch.segments[k];
      layers_.Emit(s, ch, a, b, Phase::kW);
      dp_.Reduce(s, u.chunk, a, b);
    }
    dp_.EndBackward(s, marks);
  } else {
    layers_.Emit(s, ch, 0, static_cast<int>(ch.pieces.size()), Phase::kW);
  }
  for (Replica& r : topo_.stage(s)) {
    ctx_.program.AddMemory(r.prev, r.rank, Bytes(-ch.act_w), sim::MemoryAt::kEnd);
  }
}

Bytes StepLowering::ActivationBytesOf(const LoweringContext& ctx) {
  // b s h / cp elements, split over the TP ranks (SC21's scatter/gather; with SP they are
  // sharded already); fp8 training sends bf16 activations.
  const Training& t = ctx.training;
  const Layout& l = ctx.layout;
  return Bytes(static_cast<double>(t.micro_batch) * t.seq_len / l.cp * ctx.model.hidden *
               DtypeBytes(t.precision == Dtype::kFp8 ? Dtype::kBf16 : t.precision) / l.tp);
}

void StepLowering::HostWaitsForTransfer(int s, std::span<const TaskId> in) {
  if (ctx_.schedule.host_syncs_at_transfers()) topo_.SyncStage(s, in);
}

void StepLowering::Send(int from, int to, Phase ph, std::span<TaskId> into) {
  const Bytes bytes = ActivationBytes();
  auto& src = topo_.stage(from);
  auto& dst = topo_.stage(to);
  if (from == to) {
    // A V turns on its last stage: the next chunk runs where this one did, after it.
    for (size_t i = 0; i < src.size(); ++i) into[i] = src[i].prev;
    return;
  }
  for (size_t i = 0; i < src.size(); ++i) {
    TaskId f =
        topo_.Transfer(src[i], dst[i], bytes, ph == Phase::kF ? src[i].send_fwd : src[i].send_bwd);
    ctx_.program.AddDep(src[i].prev, f);
    into[i] = f;
    ctx_.out.pp_flows.push_back(f);
    ctx_.out.pp_receiver.push_back(dst[i].rank);
  }
}

}  // namespace parasim
