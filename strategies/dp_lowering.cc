#include "strategies/dp_lowering.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "strategies/memory.h"

namespace parasim {

using sim::kNone;
using sim::StreamId;
using sim::TaskId;

bool DataParallelLowering::GathersPerLayer() const { return ctx_.layout.zero == 3 && ctx_.dp_comm; }

bool DataParallelLowering::GathersForForward(int64_t mb) const {
  return GathersPerLayer() && (ctx_.layout.zero3_reshard != Layout::Zero3Reshard::kStep || mb == 0);
}

bool DataParallelLowering::GathersForBackward() const {
  return GathersPerLayer() && ctx_.layout.zero3_reshard == Layout::Zero3Reshard::kForward;
}

double DataParallelLowering::LayerGathersPerStep() const {
  if (!GathersPerLayer()) return 0;
  const double units = static_cast<double>(ctx_.chunk_micro_batches);
  switch (ctx_.layout.zero3_reshard) {
    case Layout::Zero3Reshard::kForward:
      return 2 * units;
    case Layout::Zero3Reshard::kBackward:
      return units;
    case Layout::Zero3Reshard::kStep:
      break;
  }
  return 1;
}

bool DataParallelLowering::GathersAtStart() const {
  return ctx_.layout.zero >= 1 && ctx_.layout.zero <= 2 && ctx_.dp_comm;
}

bool DataParallelLowering::Reduces(int64_t mb) const {
  return ctx_.dp_comm &&
         (ctx_.layout.reduces_every_micro_batch() || mb == ctx_.chunk_micro_batches - 1);
}

DataParallelLowering::WireCost DataParallelLowering::CostOf(bool gather, double params) const {
  const Layout& l = ctx_.layout;
  WireCost w{gather        ? Collective::kAllGather
             : l.zero == 0 ? Collective::kAllReduce
                           : Collective::kReduceScatter,
             gather ? ctx_.weight_bytes : ctx_.grad_bytes, 1, Duration()};
  if (!gather && CopiesPerParameter()) {
    // ZeRO 3 as PyTorch's FSDP2 runs it (per-parameter sharding): each reduce-scatter's input is
    // a buffer of the reduce dtype that the layer's gradients are copied into first, cast on
    // the way (foreach_reduce_scatter_copy_in, torch._chunk_cat, on the reduce-scatter stream):
    // a memory-bound pass that reads the 16-bit gradients and writes the reduce dtype's bytes.
    // torch/distributed/_composable/fsdp/_fsdp_collectives.py (2024, torch 2.3-2.5).
    w.compress +=
        ctx_.cost.MemoryTime(Bytes((BackwardGradBytes(ctx_.training) + ctx_.grad_bytes) * params)) +
        ctx_.cost.Launch();
  }
  if (gather || l.compression == CompressionKind::kNone) return w;
  switch (l.compression) {
    case CompressionKind::kFp16:
      w.per_elem = std::min(w.per_elem, 2.0);
      break;
    case CompressionKind::kInt8:
      w.per_elem = 1;
      break;
    case CompressionKind::kTopK:
      // fp16 value + int32 index per kept element (Lin et al. 2018, deep gradient compression).
      w.per_elem = l.compression_param * (2 + 4);
      w.coll = Collective::kAllGather;
      w.gather_factor = static_cast<double>(ctx_.groups[static_cast<int>(GroupKind::kDp)].size);
      break;
    case CompressionKind::kPowerSgd:
      // Rank-r factors P (n x r) and Q (m x r) of each h x h-like matrix (Vogels et al. 2019).
      w.per_elem = ctx_.grad_bytes * std::min(1.0, 2.0 * l.compression_param / ctx_.model.hidden);
      w.compress += ComputeTime(Flops(4.0 * params * l.compression_param),
                                ctx_.cost.Peak() * ctx_.cluster.gpu.gemm_efficiency);
      break;
    case CompressionKind::kNone:
      break;
  }
  // Read the gradients, write the compressed form, decompress into the gradients.
  w.compress += ctx_.cost.MemoryTime(Bytes(3 * params * ctx_.grad_bytes)) + ctx_.cost.Launch();
  return w;
}

DataParallelLowering::Timed* DataParallelLowering::TimedOf(const Chunk& ch, int first, int last,
                                                           bool gather) const {
  Params p{0, 0, gather, ch.one_bucket};
  // ZeRO 3 (FSDP, DeepSpeed stage 3) shards a LoRA model's frozen base too and gathers it with
  // the adapters; the start-of-step gathers of ZeRO 1/2 carry only what the optimizer updated.
  const bool frozen = gather && GathersPerLayer();
  // Gathered FP8 weights in the weights' bytes' worth (a byte each against weight_bytes).
  const double fp8_less = gather ? 1.0 - 1.0 / ctx_.weight_bytes : 0.0;
  for (int i = first; i < last; ++i) {
    const Piece& pc = ch.pieces[i];
    p.dense += pc.dense + (frozen ? pc.frozen_dense : 0.0) - fp8_less * pc.fp8_dense;
    p.expert += pc.expert + (frozen ? pc.frozen_expert : 0.0) - fp8_less * pc.fp8_expert;
  }
  if (Timed* t = by_params_.Find(p)) return t;
  return by_params_.Emplace(p, TimeParams(p)).first;
}

DataParallelLowering::Timed DataParallelLowering::TimeParams(const Params& p) const {
  const double dense = p.dense, expert = p.expert;
  const bool gather = p.gather;
  Timed t{CostOf(gather, dense + expert), Duration(), Duration(), false, Duration(), sim::kNone};
  auto timed = [&](double params, const GroupPlacement& g) {
    if (params <= 0 || g.size <= 1) return;
    const double bytes = params * t.wire.per_elem * t.wire.gather_factor;
    const double buckets = p.one_bucket ? 1.0 : std::max(1.0, std::ceil(bytes / ctx_.bucket_bytes));
    CollectiveCost cc = ctx_.cost.CollectiveTime(t.wire.coll, Bytes(bytes / buckets), g);
    t.time += cc.time * buckets;
    t.latency += cc.latency * buckets;
    t.inter = t.inter || cc.inter_node;
  };
  timed(dense, ctx_.groups[static_cast<int>(GroupKind::kDp)]);
  timed(expert, ctx_.groups[kGroupEdp]);
  if (gather && CopiesPerParameter() && t.time > Duration::Zero()) {
    // FSDP2 copies the all-gather's output into each parameter's unsharded tensor
    // (foreach_all_gather_copy_out, torch.split_with_sizes_copy) on the compute stream once
    // the gather is waited for: the gathered bytes read and written (same source as CostOf).
    t.copy_out =
        ctx_.cost.MemoryTime(Bytes(2 * ctx_.weight_bytes * (dense + expert))) + ctx_.cost.Launch();
  }
  return t;
}

Duration DataParallelLowering::StreamBound(int stage) const {
  if (!ctx_.dp_comm) return Duration::Zero();
  // How often each segment is gathered and reduced per step (StepLowering's Emit* calls):
  // ZeRO 3 as parallelism.zero3_reshard frees the layers (LayerGathersPerStep), ZeRO 1/2 once
  // at the start; the gradients are reduced after every backward or after the last
  // micro-batch's (grad_reduce).
  const double units = static_cast<double>(ctx_.chunk_micro_batches);
  const double gathers = GathersPerLayer() ? LayerGathersPerStep() : GathersAtStart() ? 1 : 0;
  const double reduces = ctx_.layout.reduces_every_micro_batch() ? units : 1;
  // Each stream runs its collectives one after another; and both streams' flows cross the
  // same links (the group's NICs, or NVLink inside a node), each flow's bytes taking its time
  // less its latency at the link's rate (RankTopology::AddFlowCost), so the links are busy for
  // the sum of those.
  Duration gather, reduce, wire;
  for (const Chunk& ch : layers_.chunks(stage)) {
    for (auto [a, b] : ch.segments) {
      if (gathers > 0) {
        const Timed g = TimeOf(ch, a, b, true);
        gather += g.time * gathers;
        wire += (g.time - g.latency) * gathers;
      }
      const Timed r = TimeOf(ch, a, b, false);
      reduce += r.time * reduces;
      wire += (r.time - r.latency) * reduces;
    }
  }
  return Max(Max(gather, reduce), wire);
}

Duration DataParallelLowering::IssuedTime(const Chunk& ch, int first, int last, bool gather) const {
  if (!ctx_.dp_comm) return Duration::Zero();
  const Timed t = TimeOf(ch, first, last, gather);
  return t.time > Duration::Zero() ? t.wire.compress + t.time : Duration::Zero();
}

Duration DataParallelLowering::CopyOutTime(const Chunk& ch, int first, int last) const {
  if (!GathersPerLayer()) return Duration::Zero();
  return TimeOf(ch, first, last, true).copy_out;
}

std::pair<Duration, Duration> DataParallelLowering::StartGatherWait(int stage, int chunk) const {
  if (!GathersAtStart()) return {};
  const Chunk& own = layers_.chunk(stage, chunk);
  auto first = [&] {
    return own.segments.empty()
               ? Duration::Zero()
               : IssuedTime(own, own.segments[0].first, own.segments[0].second, true);
  };
  switch (StartGatherMode()) {
    case StartGathers::kOnDemand:
      // Issued once the forward is otherwise ready, and waited for.
      return {Duration::Zero(), first()};
    case StartGathers::kChained:
      // Only the chain's first is issued at the start; a later chunk's may be issued beside
      // any forward before its own (or, out of the chain's order, at its own).
      return {chunk == 0 ? first() : Duration::Zero(), Duration::Zero()};
    case StartGathers::kAll:
    case StartGathers::kAligned:
      break;
  }
  // Issued in chunk order from the step start (kAligned: chunks 0 and 1 then, each later chunk
  // after them), one after another on the gather stream: with overlap the chunk's forward
  // waits for its first segment's gather; without, every forward waits for all of them
  // (StepLowering::EmitForward).
  Duration sum;
  for (int c = 0; c < ctx_.chunks; ++c) {
    const Chunk& ch = layers_.chunk(stage, c);
    for (size_t k = 0; k < ch.segments.size(); ++k) {
      sum += IssuedTime(ch, ch.segments[k].first, ch.segments[k].second, true);
      if (ctx_.layout.overlap_dp && c == chunk && k == 0) return {sum, Duration::Zero()};
    }
  }
  return {sum, Duration::Zero()};
}

const std::vector<TaskId>& DataParallelLowering::Emit(int stage, const Chunk& ch, int first,
                                                      int last, bool gather,
                                                      const std::vector<TaskId>& after) {
  auto& reps = topo_.stage(stage);
  std::vector<TaskId>& out = emitted_;
  out.assign(reps.size(), kNone);
  Timed& t = *TimedOf(ch, first, last, gather);
  if (t.time <= Duration::Zero()) return out;
  StreamId Replica::*stream = gather ? &Replica::dp_gather : &Replica::dp_reduce;
  const int kind = static_cast<int>(GroupKind::kDp);
  for (size_t i = 0; i < reps.size(); ++i) {
    const std::vector<int>& g = topo_.group(kind, i);
    if (g.front() != static_cast<int>(i)) continue;
    members_.clear();
    for (int k : g) members_.push_back(&reps[k]);
    heads_.clear();
    if (t.wire.compress > Duration::Zero()) {
      // Compression's passes, or (without) ZeRO 3's copy of the gradients into the buffer.
      const TaskCat cat =
          ctx_.layout.compression != CompressionKind::kNone ? TaskCat::kCompress : TaskCat::kDpCopy;
      for (Replica* r : members_) {
        heads_.push_back(ctx_.program.AddCompute(r->dp_reduce, ctx_.Key(t.wire.compress),
                                                 static_cast<uint8_t>(cat), ctx_.Label(cat)));
      }
    }
    // Priced once: every micro-batch moves the same buckets.
    if (t.flow_key == kNone) t.flow_key = topo_.FlowCostKey(t.time, t.latency, t.inter);
    TaskId f =
        topo_.Flow(members_, stream, t.flow_key, t.inter, TaskCat::kDp, ctx_.Label(TaskCat::kDp));
    for (size_t k = 0; k < g.size(); ++k) {
      const TaskId a = after.empty() ? kNone : after[g[k]];
      if (!heads_.empty()) {
        if (a != kNone) ctx_.program.AddDep(a, heads_[k]);
        ctx_.program.AddDep(heads_[k], f);
      } else if (a != kNone) {
        ctx_.program.AddDep(a, f);
      }
      out[g[k]] = f;
    }
  }
  return out;
}

void DataParallelLowering::GatherForCompute(int stage, const Chunk& ch, int first, int last) {
  // Two gathered units at most, as the memory estimate holds them (strategies/memory.cc):
  // - With copies (FSDP2), one gather ahead: the next all-gather starts once the last one's
  //   parameters are copied out (FSDP2 waits for that copy-out's event before the next
  //   all-gather's copy-in; torch/distributed/_composable/fsdp/_fsdp_param_group.py,
  //   all_gather_state).
  // - Flat buffers (FSDP1), its rate limiter (limit_all_gathers, on by default since PyTorch
  //   2.0): a unit's all-gather waits for the free event of the unit two before, recorded when
  //   that unit's compute is done (torch/distributed/fsdp/_runtime_utils.py, _unshard and
  //   _free_event_queue of two). On the compute stream, what was issued before this unit is
  //   the unit before, so the next unit's gather waits for it.
  auto& reps = topo_.stage(stage);
  if (waits_.size() < static_cast<size_t>(ctx_.layout.pp)) waits_.resize(ctx_.layout.pp);
  std::vector<TaskId>& wait = waits_[stage];
  wait.resize(reps.size(), kNone);
  topo_.WaitFor(stage, Emit(stage, ch, first, last, true, wait));
  const Duration copy = CopyOutTime(ch, first, last);
  for (size_t i = 0; i < reps.size(); ++i) {
    wait[i] = copy > Duration::Zero()
                  ? topo_.Compute(reps[i], copy, TaskCat::kDpCopy, ctx_.Label(TaskCat::kDpCopy),
                                  copy * ctx_.cluster.gpu.contended_memory)
                  : reps[i].prev;
  }
}

void DataParallelLowering::ReduceNow(int stage, const Chunk& ch, int first, int last,
                                     bool blocking) {
  auto& reps = topo_.stage(stage);
  after_.clear();
  for (Replica& r : reps) after_.push_back(r.prev);
  const std::vector<TaskId>& f = Emit(stage, ch, first, last, false, after_);
  for (size_t i = 0; i < reps.size(); ++i) {
    if (f[i] == kNone) continue;
    reps[i].reduces.push_back(f[i]);
    if (blocking) reps[i].pending.push_back(f[i]);  // the next compute-stream task waits
  }
}

void DataParallelLowering::Reduce(int stage, int chunk, int first, int last) {
  if (!ctx_.layout.overlap_dp && ctx_.layout.reduces_every_micro_batch()) {
    // ZeRO 2 and 3 keep only their shard of a micro-batch's gradients, so without overlap the
    // reduce-scatter still runs when the segment's backward is done, and the compute stream
    // waits for it (DeepSpeed's overlap_comm false, FSDP without async reduction). Deferred to
    // the flush, every micro-batch's whole gradients would be held.
    ReduceNow(stage, layers_.chunk(stage, chunk), first, last, /*blocking=*/true);
    return;
  }
  if (!ctx_.layout.overlap_dp) {
    deferred_.push_back({stage, chunk, first, last});
    return;
  }
  ReduceNow(stage, layers_.chunk(stage, chunk), first, last);
}

bool DataParallelLowering::WaitsAtBackwardEnd() const {
  return ctx_.layout.reduces_every_micro_batch() && ctx_.layout.pp == 1;
}

std::vector<size_t> DataParallelLowering::ReductionMarks(int stage) const {
  std::vector<size_t> marks;
  if (!WaitsAtBackwardEnd()) return marks;
  for (const Replica& r : topo_.stage(stage)) marks.push_back(r.reduces.size());
  return marks;
}

void DataParallelLowering::EndBackward(int stage, const std::vector<size_t>& marks) {
  auto& reps = topo_.stage(stage);
  for (size_t i = 0; i < marks.size(); ++i) {
    Replica& r = reps[i];
    for (size_t k = marks[i]; k < r.reduces.size(); ++k) r.pending.push_back(r.reduces[k]);
  }
}

DataParallelLowering::StartGathers DataParallelLowering::StartGatherMode() const {
  const Layout& l = ctx_.layout;
  if (l.zero != 1 || !l.overlap_dp) return StartGathers::kAll;
  switch (l.param_gather_resolved()) {
    case Layout::ParamGather::kChained:
      return StartGathers::kChained;
    case Layout::ParamGather::kAligned:
      return StartGathers::kAligned;
    case Layout::ParamGather::kOnDemand:
      return StartGathers::kOnDemand;
    case Layout::ParamGather::kAuto:
    case Layout::ParamGather::kAtStart:
      break;
  }
  return StartGathers::kAll;
}

void DataParallelLowering::IssueStartGathers() {
  // ZeRO 1/2: the parameters updated by the last step's sharded optimizer are all-gathered
  // ahead of their first forward (Megatron's distributed optimizer, overlap_param_gather).
  // Without overlap, and under ZeRO 2, they are all issued now, each first forward waiting for
  // its own (without overlap, for all of them). ZeRO 1 with overlap issues them as
  // parallelism.param_gather says (Layout::ParamGather): chained, the first now (at zero_grad);
  // aligned, model chunks 0 and 1 now; on demand, none.
  const int p = ctx_.layout.pp;
  start_gathers_.assign(p, {});
  start_issued_.assign(p, {});
  forwards_.assign(p, 0);
  if (!GathersAtStart()) return;
  const StartGathers mode = StartGatherMode();
  for (int s = 0; s < p; ++s) {
    start_gathers_[s].resize(ctx_.chunks);
    for (int c = 0; c < ctx_.chunks; ++c) {
      start_gathers_[s][c].resize(layers_.chunk(s, c).segments.size());
    }
    start_issued_[s].assign(static_cast<size_t>(StartGatherCount(s)), 0);
    for (int c = 0, j = 0; c < ctx_.chunks; ++c) {
      const int n = static_cast<int>(layers_.chunk(s, c).segments.size());
      for (int k = 0; k < n; ++k, ++j) {
        const bool now = mode == StartGathers::kAll || (mode == StartGathers::kChained && j == 0) ||
                         (mode == StartGathers::kAligned && c < 2);
        if (now) IssueStartGather(s, c, k, false);
      }
    }
  }
}

void DataParallelLowering::IssueStartGather(int stage, int chunk, int segment, bool beside) {
  // `beside`: issued as the compute stream reaches the next task (a forward's pre-hook or the
  // schedule's step before it): after what that task waits for, but the gather it is about
  // to wait for (the caller's WaitFor comes after), beside the task. Else at the step start.
  const Chunk& ch = layers_.chunk(stage, chunk);
  auto& reps = topo_.stage(stage);
  after_.clear();
  if (beside) {
    for (const Replica& r : reps) after_.push_back(r.prev);
  }
  const auto [a, b] = ch.segments[static_cast<size_t>(segment)];
  std::vector<TaskId>& issued = start_gathers_[stage][chunk][segment];
  issued = Emit(stage, ch, a, b, true, after_);
  start_issued_[stage][static_cast<size_t>(IndexOf(stage, chunk, segment))] = 1;
  if (!beside) return;
  for (size_t i = 0; i < reps.size() && i < issued.size(); ++i) {
    if (issued[i] == kNone) continue;
    for (TaskId t : reps[i].pending) ctx_.program.AddDep(t, issued[i]);
  }
}

void DataParallelLowering::BeforeForward(int stage) {
  // Megatron-Core 0.9 on, interleaved (align_param_gather): before the stage's forward number
  // vid, model chunk k is gathered whole where vid + stage is the first forward of chunk k - 1
  // in the schedule's table, k from 2 (schedules.py forward_step_helper_preprocess,
  // is_first_microbatch_for_model_chunk): vid = (k - 1) g - stage, g the micro-batch group.
  if (forwards_.empty()) return;
  const int64_t vid = forwards_[stage]++;
  if (!GathersAtStart() || StartGatherMode() != StartGathers::kAligned) return;
  const Layout& l = ctx_.layout;
  const int64_t g = l.microbatch_group > 0 ? l.microbatch_group : l.pp;
  for (int k = 2; k < ctx_.chunks; ++k) {
    if (vid != (k - 1) * g - stage) continue;
    const int n = static_cast<int>(layers_.chunk(stage, k).segments.size());
    for (int seg = 0; seg < n; ++seg) {
      if (!start_issued_[stage][static_cast<size_t>(IndexOf(stage, k, seg))]) {
        IssueStartGather(stage, k, seg, true);
      }
    }
  }
}

void DataParallelLowering::WaitStartGather(int stage, int chunk, int segment) {
  // The forward that first uses a bucket waits for its all-gather (Megatron-Core's forward
  // pre-hook), having issued it then where it was not issued before (on demand; or a bucket
  // reached out of the chain's order, which 2026's main issues there and 0.8 would not gather
  // at all). Chained and on demand, the hook then issues the next bucket's, so that with
  // CUDA_DEVICE_MAX_CONNECTIONS=1 the gathers do not hold the compute kernels behind them: it
  // runs beside this bucket's first forward (core_r0.8.0 distrib_optimizer.py
  // _finish_param_sync_helper, the next bucket of the whole chain; from 0.9
  // param_and_grad_buffer.py finish_param_sync, the next bucket group of the same model chunk).
  const int index = IndexOf(stage, chunk, segment);
  std::vector<char>& issued = start_issued_[stage];
  if (!issued[static_cast<size_t>(index)]) IssueStartGather(stage, chunk, segment, true);
  const StartGathers mode = StartGatherMode();
  const int segments = static_cast<int>(layers_.chunk(stage, chunk).segments.size());
  int next_chunk = chunk, next_segment = segment + 1;
  if (mode == StartGathers::kChained && next_segment == segments) {
    // The chain goes on to the next model chunk with segments.
    next_segment = 0;
    do {
      ++next_chunk;
    } while (next_chunk < ctx_.chunks && layers_.chunk(stage, next_chunk).segments.empty());
  }
  const bool chains = mode == StartGathers::kChained || mode == StartGathers::kOnDemand;
  if (chains && next_chunk < ctx_.chunks &&
      next_segment < static_cast<int>(layers_.chunk(stage, next_chunk).segments.size()) &&
      !issued[static_cast<size_t>(IndexOf(stage, next_chunk, next_segment))]) {
    IssueStartGather(stage, next_chunk, next_segment, true);
  }
  topo_.WaitFor(stage, start_gathers_[stage][chunk][segment]);
}

void DataParallelLowering::WaitAllStartGathers(int stage) {
  for (int c = 0; c < ctx_.chunks; ++c) {
    const int segments = static_cast<int>(layers_.chunk(stage, c).segments.size());
    for (int k = 0; k < segments; ++k) WaitStartGather(stage, c, k);
  }
}

int DataParallelLowering::StartGatherCount(int stage) const {
  return IndexOf(stage, ctx_.chunks, 0);
}

int DataParallelLowering::IndexOf(int stage, int chunk, int segment) const {
  int index = segment;
  for (int c = 0; c < chunk; ++c)
    index += static_cast<int>(layers_.chunk(stage, c).segments.size());
  return index;
}

void DataParallelLowering::Finish() {
  // Gradient reduction after the pipeline flush when it does not overlap backward.
  for (const Deferred& d : deferred_) {
    ReduceNow(d.stage, layers_.chunk(d.stage, d.chunk), d.first, d.last);
  }
  OptimizerStep();
}

Duration DataParallelLowering::OptimizerTime(int stage) const {
  // A memory-bound pass over this rank's shard of the states.
  const Layout& l = ctx_.layout;
  const StateBytes rule = StateBytesPerParam(ctx_.training);
  const double per_param = 2 * rule.optimizer + rule.grads + rule.weights;  // states read+written
  const double shard_dense = l.zero >= 1 ? static_cast<double>(l.dp) * l.cp : 1.0;
  const double shard_expert = l.zero >= 1 ? std::max(1.0, l.expert_data_width()) : 1.0;
  double local = 0;
  for (const Chunk& ch : layers_.chunks(stage)) {
    for (const Piece& pc : ch.pieces) local += pc.dense / shard_dense + pc.expert / shard_expert;
  }
  return ctx_.cost.MemoryTime(Bytes(local * per_param)) + ctx_.cost.Launch();
}

void DataParallelLowering::OptimizerStep() {
  // The host reads the gradients' norm before it issues the update (Megatron-LM's
  // clip_grad_norm: get_grad_norm_fp32's .item(), megatron/core/optimizer/clip_grads.py), so it
  // waits for every reduction and the backward; then the step's own host work
  // (GpuSpec::host_step_time: the optimizer's Python, the loss scale's and the norms' reads,
  // logging) comes before the update's kernels.
  const Duration host = ctx_.cluster.gpu.host_step_time;
  for (int s = 0; s < ctx_.layout.pp; ++s) {
    const Duration step = OptimizerTime(s);
    for (Replica& r : topo_.stage(s)) {
      for (TaskId f : r.reduces) r.pending.push_back(f);
      waits_for_.assign(r.reduces.begin(), r.reduces.end());
      waits_for_.push_back(r.prev);
      topo_.Sync(r, waits_for_);
      r.host_carry += host;
      topo_.Compute(r, step, TaskCat::kOptimizer, ctx_.Label(TaskCat::kOptimizer),
                    step * ctx_.cluster.gpu.contended_memory, ctx_.cluster.gpu.host_op_time);
    }
  }
}

}  // namespace parasim
