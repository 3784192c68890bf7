#include "strategies/step.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <tuple>
#include <unordered_map>

#include "hardware/cost_model.h"
#include "models/layer_graph.h"
#include "strategies/memory.h"
#include "strategies/placement.h"

namespace parasim {

std::string_view TaskCatName(TaskCat c) {
  switch (c) {
    case TaskCat::kForward:
      return "forward";
    case TaskCat::kBackward:
      return "backward";
    case TaskCat::kRecompute:
      return "recompute";
    case TaskCat::kOptimizer:
      return "optimizer";
    case TaskCat::kTp:
      return "tp-comm";
    case TaskCat::kCp:
      return "cp-comm";
    case TaskCat::kEp:
      return "ep-comm";
    case TaskCat::kPp:
      return "pp-comm";
    case TaskCat::kDp:
      return "dp-comm";
    case TaskCat::kCompress:
      return "compress";
  }
  return "?";
}

std::vector<std::string> TaskCatNames() {
  std::vector<std::string> out;
  for (int i = 0; i < kNumTaskCats; ++i) {
    out.emplace_back(TaskCatName(static_cast<TaskCat>(i)));
  }
  return out;
}

namespace {

using sim::kNone;
using sim::LinkId;
using sim::StreamId;
using sim::TaskId;

enum class Phase : uint8_t { kF, kB, kR };

TaskCat CommCat(GroupKind g) {
  switch (g) {
    case GroupKind::kTp:
      return TaskCat::kTp;
    case GroupKind::kCp:
      return TaskCat::kCp;
    case GroupKind::kEp:
      return TaskCat::kEp;
    case GroupKind::kDp:
      return TaskCat::kDp;
    case GroupKind::kPp:
      return TaskCat::kPp;
  }
  return TaskCat::kTp;
}

Collective ToCollective(CommKind k) {
  switch (k) {
    case CommKind::kAllReduce:
      return Collective::kAllReduce;
    case CommKind::kReduceScatter:
      return Collective::kReduceScatter;
    case CommKind::kAllGather:
      return Collective::kAllGather;
    case CommKind::kAllToAll:
      return Collective::kAllToAll;
    case CommKind::kNone:
      break;
  }
  return Collective::kAllReduce;
}

// Durations of one op of a block in each phase, with the collective that follows it.
struct OpTime {
  Duration fwd, bwd;
  Duration fwd_comm, bwd_comm;
  TaskCat fwd_cat = TaskCat::kTp, bwd_cat = TaskCat::kTp;
  GroupKind fwd_group = GroupKind::kTp, bwd_group = GroupKind::kTp;
  bool fwd_overlap = false, bwd_overlap = false;
  bool attention_core = false;
  uint32_t label_f = 0, label_b = 0, label_r = 0;
};

struct BlockTime {
  std::vector<OpTime> ops;
};

// One piece of a model chunk: the embedding, a transformer layer or the head.
struct Piece {
  const BlockTime* time = nullptr;
  double act = 0;       // activation bytes saved for backward under the recompute mode
  double act_full = 0;  // bytes of the piece's activations without recompute
  double dense = 0;     // trainable dense parameters on this rank
  double expert = 0;    // trainable expert parameters on this rank
  bool layer = false;   // a transformer layer (recompute replays layers, not embedding or head)
};

// A model chunk: the pieces one stage runs for one virtual stage, split into gradient buckets
// (segments, forward order).
struct Chunk {
  std::vector<Piece> pieces;
  std::vector<std::pair<int, int>> segments;  // [first, last) piece ranges
  double act = 0;
  double act_full_max = 0;
};

struct Unit {
  Phase phase;
  int chunk;
  int64_t mb;
};

// Per-stage unit order of the pipeline schedule.
std::vector<Unit> ScheduleOrder(ScheduleKind kind, int p, int v, int64_t m, int s) {
  std::vector<Unit> out;
  if (kind == ScheduleKind::kGpipe) {
    for (int64_t j = 0; j < m; ++j) out.push_back({Phase::kF, 0, j});
    for (int64_t j = 0; j < m; ++j) out.push_back({Phase::kB, 0, j});
    return out;
  }
  if (kind != ScheduleKind::kInterleaved || v <= 1) {
    const int64_t warmup = std::min<int64_t>(p - s - 1, m);
    for (int64_t j = 0; j < warmup; ++j) out.push_back({Phase::kF, 0, j});
    for (int64_t i = 0; i < m - warmup; ++i) {
      out.push_back({Phase::kF, 0, warmup + i});
      out.push_back({Phase::kB, 0, i});
    }
    for (int64_t i = m - warmup; i < m; ++i) out.push_back({Phase::kB, 0, i});
    return out;
  }
  // Megatron-LM's interleaved schedule: micro-batches in groups of p, chunk by chunk.
  const int64_t total = m * v;
  const int64_t warmup =
      std::min<int64_t>(static_cast<int64_t>(p - s - 1) * 2 + (v - 1) * p, total);
  auto mb_of = [&](int64_t k) { return (k / (static_cast<int64_t>(p) * v)) * p + k % p; };
  auto fwd = [&](int64_t k) { return Unit{Phase::kF, static_cast<int>((k / p) % v), mb_of(k)}; };
  auto bwd = [&](int64_t k) {
    return Unit{Phase::kB, static_cast<int>(v - 1 - (k / p) % v), mb_of(k)};
  };
  for (int64_t k = 0; k < warmup; ++k) out.push_back(fwd(k));
  for (int64_t i = 0; i < total - warmup; ++i) {
    out.push_back(fwd(warmup + i));
    out.push_back(bwd(i));
  }
  for (int64_t i = total - warmup; i < total; ++i) out.push_back(bwd(i));
  return out;
}

struct Replica {
  uint32_t rank = 0;
  int64_t global = 0;
  StreamId compute = 0, side_tp = 0, side_cp = 0, send_fwd = 0, send_bwd = 0, dp_reduce = 0,
           dp_gather = 0;
  LinkId nic_tx = 0, nic_rx = 0, nvl_tx = 0, nvl_rx = 0;
  TaskId prev = kNone;             // last task on the compute stream
  std::vector<TaskId> pending;     // dependencies of the next compute-stream task
  std::vector<TaskId> last_preds;  // what the last compute-stream task waited for
  TaskId first = kNone;            // first compute-stream task of the unit being emitted
  std::vector<TaskId> reduces;     // gradient communication the optimizer step waits for
};

// Group kinds indexing Lowerer::group_of_: the layer graph's kinds, plus expert data parallel.
constexpr int kGroupEdp = 5;
constexpr int kNumGroups = 6;

class Lowerer {
 public:
  Lowerer(const ModelSpec& m, const Training& t, const Layout& l, const ClusterSpec& c,
          const StepOptions& o, LoweredStep* out)
      : m_(m),
        t_(t),
        l_(l),
        c_(c),
        o_(o),
        out_(*out),
        p_(out->program),
        cm_(c, t.precision),
        pl_(l, c) {}

  Status Run();

 private:
  const ModelSpec& m_;
  const Training& t_;
  const Layout& l_;
  const ClusterSpec& c_;
  const StepOptions& o_;
  LoweredStep& out_;
  sim::Program& p_;
  CostModel cm_;
  Placement pl_;
  ModelGraph graph_;
  BlockTime embedding_, dense_, moe_, head_;
  std::vector<std::vector<Chunk>> chunks_;      // [stage][chunk]
  std::vector<std::vector<Replica>> replicas_;  // [stage][replica]
  // Per group kind, per replica: the replica indices of its group within the stage.
  std::vector<std::vector<int>> group_of_[kNumGroups];
  std::unordered_map<int64_t, uint32_t> compute_keys_;
  uint32_t cat_label_[kNumTaskCats] = {};
  int64_t mbs_ = 1;
  int v_ = 1;
  double grad_bytes_ = 2, weight_bytes_ = 2;
  bool dp_comm_ = false;               // gradients are synchronised across data-parallel ranks
  GroupPlacement groups_[kNumGroups];  // shape of each group kind (placement is symmetric)
  // ZeRO 1/2: parameter all-gathers issued at the step start, [stage][chunk][segment][replica].
  std::vector<std::vector<std::vector<std::vector<TaskId>>>> start_gathers_;
  // Pipeline transfers into each unit: [virtual stage * mbs + mb][replica].
  std::vector<std::vector<TaskId>> fwd_in_, bwd_in_;
  struct Deferred {
    int stage, chunk, first, last;
  };
  std::vector<Deferred> deferred_;

  uint32_t Key(Duration d) {
    auto [it, inserted] = compute_keys_.try_emplace(d.picoseconds(), 0);
    if (inserted) it->second = out_.costs.AddCompute(d);
    return it->second;
  }
  Duration Comm(const CommSpec& c) const;
  void BuildTimes(const Block& b, BlockTime* bt);
  void BuildChunks();
  void BuildReplicas();
  TaskId Compute(Replica& r, Duration d, TaskCat cat, uint32_t label);
  void Blocking(int stage, int kind, Duration d, TaskCat cat);
  void Overlapped(int stage, int kind, Duration d, TaskCat cat, uint32_t label);
  TaskId Flow(const std::vector<Replica*>& members, StreamId Replica::*stream, Duration time,
              Duration latency, bool inter, TaskCat cat, uint32_t label);
  void EmitPieces(int stage, const Chunk& ch, int first, int last, Phase ph);
  // Data-parallel communication of pieces [first, last) of a chunk: parameter all-gather
  // (gather) or gradient reduction. Each replica waits for its entry of `after` (kNone: none).
  // Returns the flow each replica's group uses.
  std::vector<TaskId> DpComm(int stage, const Chunk& ch, int first, int last, bool gather,
                             const std::vector<TaskId>& after);
  void EmitUnit(int stage, const Unit& u);
  void Send(int from_stage, int to_stage, Phase ph, std::vector<TaskId>* into);
};

Duration Lowerer::Comm(const CommSpec& c) const {
  if (c.kind == CommKind::kNone || c.bytes <= 0) return Duration::Zero();
  const GroupPlacement& g = groups_[static_cast<int>(c.group)];
  if (g.size <= 1) return Duration::Zero();
  return cm_.CollectiveTime(ToCollective(c.kind), Bytes(c.bytes), g).time;
}

void Lowerer::BuildTimes(const Block& b, BlockTime* bt) {
  const bool frozen = t_.finetune != FinetuneKind::kNone;
  const bool qlora = t_.finetune == FinetuneKind::kQlora;
  const bool fused = t_.attention == AttentionKind::kFlash;
  for (size_t i = 0; i < b.size(); ++i) {
    const Op& op = b.op(i);
    OpTime ot;
    switch (op.kind) {
      case OpKind::kGemm:
        for (const GemmCall& g : TrainingGemms(op, frozen)) {
          (g.pass == 'F' ? ot.fwd : ot.bwd) += cm_.GemmTime(g.m, g.n, g.k, g.batch);
        }
        if (qlora && op.params > 0) {
          // 4-bit weights dequantised to bf16 before each use (read 0.5 B, write 2 B a weight).
          Duration dq = cm_.MemoryTime(op.params * 2.5);
          ot.fwd += dq;
          ot.bwd += dq;
        }
        break;
      case OpKind::kAttention:
        ot.fwd = cm_.AttentionTime(op.fwd_flops * op.causal_fraction, op.fwd_bytes, false, fused);
        ot.bwd = cm_.AttentionTime(op.bwd_flops * op.causal_fraction, op.bwd_bytes, true, fused);
        break;
      case OpKind::kMemoryBound:
        ot.fwd = cm_.MemoryTime(op.fwd_bytes) + cm_.Launch();
        ot.bwd = cm_.MemoryTime(op.bwd_bytes) + cm_.Launch();
        break;
    }
    ot.attention_core = op.in_attention_core;
    ot.fwd_comm = Comm(op.fwd_comm);
    ot.bwd_comm = Comm(op.bwd_comm);
    ot.fwd_group = op.fwd_comm.group;
    ot.bwd_group = op.bwd_comm.group;
    ot.fwd_cat = CommCat(op.fwd_comm.group);
    ot.bwd_cat = CommCat(op.bwd_comm.group);
    auto overlap = [&](const CommSpec& c) {
      return c.overlappable || (c.group == GroupKind::kTp && l_.overlap_tp);
    };
    ot.fwd_overlap = overlap(op.fwd_comm);
    ot.bwd_overlap = overlap(op.bwd_comm);
    if (o_.granularity == Granularity::kOp) {
      ot.label_f = p_.Intern("F " + op.name);
      ot.label_b = p_.Intern("B " + op.name);
      ot.label_r = p_.Intern("R " + op.name);
    }
    bt->ops.push_back(ot);
  }
}

void Lowerer::BuildChunks() {
  const std::vector<int> per_stage = StageLayers(l_, m_.layers);
  const int p = l_.pp;
  chunks_.assign(p, std::vector<Chunk>(v_));
  const bool lora = t_.finetune != FinetuneKind::kNone;
  auto make_piece = [&](const Block& b, const BlockTime& bt, bool head) {
    Piece pc;
    pc.time = &bt;
    pc.layer = &bt == &dense_ || &bt == &moe_;
    pc.act = ActivationBytes(b, head ? RecomputeKind::kNone : t_.recompute);
    pc.act_full = ActivationBytes(b, RecomputeKind::kNone);
    if (lora) {
      pc.dense = LoraParams(b, t_.lora_rank);
    } else {
      pc.expert = BlockParams(b, true);
      pc.dense = BlockParams(b) - pc.expert;
    }
    return pc;
  };
  // Each block's accounting once; pieces copy it.
  const Piece embedding = make_piece(graph_.embedding, embedding_, false);
  const Piece dense = make_piece(graph_.dense, dense_, false);
  const Piece moe = m_.is_moe() ? make_piece(graph_.moe, moe_, false) : Piece{};
  const Piece head = make_piece(graph_.head, head_, true);
  // Global chunk c * p + s holds the next per_stage[s] / v layers.
  int layer = 0;
  for (int c = 0; c < v_; ++c) {
    for (int s = 0; s < p; ++s) {
      Chunk& ch = chunks_[s][c];
      const int n = per_stage[s] / v_;
      if (s == 0 && c == 0) ch.pieces.push_back(embedding);
      for (int i = layer; i < layer + n; ++i) ch.pieces.push_back(m_.IsMoeLayer(i) ? moe : dense);
      layer += n;
      if (s == p - 1 && c == v_ - 1) ch.pieces.push_back(head);
      for (const Piece& pc : ch.pieces) {
        ch.act += pc.act;
        if (t_.recompute != RecomputeKind::kNone && pc.layer) {
          ch.act_full_max = std::max(ch.act_full_max, pc.act_full);
        }
      }
      // Gradient buckets, filled in backward order (last piece first) as DDP fills them;
      // ZeRO 3 gathers and reduces layer by layer (FSDP wraps each layer).
      const double bucket = l_.bucket.bytes();
      int last = static_cast<int>(ch.pieces.size());
      double filled = 0;
      for (int i = last - 1; i >= 0; --i) {
        filled += (ch.pieces[i].dense + ch.pieces[i].expert) * grad_bytes_;
        if (filled >= bucket || i == 0 || l_.zero == 3) {
          ch.segments.push_back({i, last});
          last = i;
          filled = 0;
        }
      }
      std::reverse(ch.segments.begin(), ch.segments.end());
    }
  }
}

void Lowerer::BuildReplicas() {
  const int p = l_.pp;
  replicas_.assign(p, {});
  const Bandwidth nic = cm_.NicShare();
  const Bandwidth nvl = cm_.IntraBandwidth();
  std::vector<RankCoords> coords;
  if (o_.full) {
    for (int64_t d = 0; d < l_.dp; ++d) {
      for (int c = 0; c < l_.cp; ++c) {
        for (int t = 0; t < l_.tp; ++t) coords.push_back({t, c, d, 0});
      }
    }
  } else {
    coords.push_back({0, 0, 0, 0});
  }
  out_.replicas = static_cast<int>(coords.size());
  for (int s = 0; s < p; ++s) {
    for (RankCoords rc : coords) {
      rc.pp = s;
      Replica r;
      r.global = pl_.Rank(rc);
      const std::string name =
          o_.full ? fmt::format("rank {} (stage {})", r.global, s) : fmt::format("stage {}", s);
      r.rank = p_.AddRank(name);
      r.compute = p_.AddStream(r.rank, "compute");
      r.side_tp = p_.AddStream(r.rank, "tp-overlap");
      r.side_cp = p_.AddStream(r.rank, "cp-ring");
      r.send_fwd = p_.AddStream(r.rank, "pp-send-fwd");
      r.send_bwd = p_.AddStream(r.rank, "pp-send-bwd");
      r.dp_reduce = p_.AddStream(r.rank, "dp-reduce");
      r.dp_gather = p_.AddStream(r.rank, "dp-gather");
      r.nic_tx = p_.AddLink(name + " nic-tx", nic);
      r.nic_rx = p_.AddLink(name + " nic-rx", nic);
      r.nvl_tx = p_.AddLink(name + " nvlink-tx", nvl);
      r.nvl_rx = p_.AddLink(name + " nvlink-rx", nvl);
      replicas_[s].push_back(std::move(r));
    }
    out_.stage_rank.push_back(replicas_[s][0].rank);
    out_.stage_compute.push_back(replicas_[s][0].compute);
  }
  // Groups among one stage's replicas (every group lies within a stage, except PP's).
  const int n = out_.replicas;
  std::unordered_map<int64_t, int> index;
  for (int i = 0; i < n; ++i) index[replicas_[0][i].global] = i;
  for (int k = 0; k < kNumGroups; ++k) {
    group_of_[k].assign(n, {});
    for (int i = 0; i < n; ++i) {
      if (!o_.full || k == static_cast<int>(GroupKind::kPp)) {
        group_of_[k][i] = {i};
        continue;
      }
      const int64_t g = replicas_[0][i].global;
      std::vector<int64_t> members =
          k == kGroupEdp ? pl_.ExpertDataMembers(g) : pl_.Members(static_cast<GroupKind>(k), g);
      for (int64_t x : members) group_of_[k][i].push_back(index.at(x));
      std::sort(group_of_[k][i].begin(), group_of_[k][i].end());
    }
  }
}

TaskId Lowerer::Compute(Replica& r, Duration d, TaskCat cat, uint32_t label) {
  TaskId t = p_.AddCompute(r.compute, Key(d), static_cast<uint8_t>(cat), label);
  r.last_preds.clear();
  if (r.prev != kNone) r.last_preds.push_back(r.prev);
  for (TaskId x : r.pending) {
    p_.AddDep(x, t);
    r.last_preds.push_back(x);
  }
  r.pending.clear();
  r.prev = t;
  if (r.first == kNone) r.first = t;
  return t;
}

void Lowerer::Blocking(int stage, int kind, Duration d, TaskCat cat) {
  auto& reps = replicas_[stage];
  for (size_t i = 0; i < reps.size(); ++i) {
    const std::vector<int>& g = group_of_[kind][i];
    if (g.front() != static_cast<int>(i)) continue;  // emitted by the group's first member
    TaskId t = Compute(reps[i], d, cat, cat_label_[static_cast<int>(cat)]);
    for (size_t k = 1; k < g.size(); ++k) {
      Replica& r = reps[g[k]];
      p_.AddStreamToTask(t, r.compute);
      for (TaskId x : r.pending) p_.AddDep(x, t);
      r.pending.clear();
      r.last_preds.assign(1, r.prev);
      r.prev = t;
    }
  }
}

void Lowerer::Overlapped(int stage, int kind, Duration d, TaskCat cat, uint32_t label) {
  // Runs beside the op just emitted: it waits for what that op waited for, and the next
  // compute-stream task waits for it.
  auto& reps = replicas_[stage];
  StreamId Replica::*side =
      kind == static_cast<int>(GroupKind::kCp) ? &Replica::side_cp : &Replica::side_tp;
  for (size_t i = 0; i < reps.size(); ++i) {
    const std::vector<int>& g = group_of_[kind][i];
    if (g.front() != static_cast<int>(i)) continue;
    TaskId t = p_.AddCompute(reps[i].*side, Key(d), static_cast<uint8_t>(cat), label);
    for (size_t k = 0; k < g.size(); ++k) {
      Replica& r = reps[g[k]];
      if (k > 0) p_.AddStreamToTask(t, r.*side);
      for (TaskId x : r.last_preds) p_.AddDep(x, t);
      r.pending.push_back(t);
    }
  }
}

TaskId Lowerer::Flow(const std::vector<Replica*>& members, StreamId Replica::*stream, Duration time,
                     Duration latency, bool inter, TaskCat cat, uint32_t label) {
  // The flow moves the bytes that take the cost model's time at the link's rate when alone;
  // flows sharing a link (pipeline sends beside gradient buckets) slow each other down.
  const double cap =
      inter ? cm_.NicShare().bytes_per_second() : cm_.IntraBandwidth().bytes_per_second();
  sim::FlowCost fc{latency, Bytes(std::max(0.0, (time - latency).seconds()) * cap)};
  const uint32_t key = out_.costs.AddFlow(fc);
  std::vector<LinkId> links;
  links.reserve(2 * members.size());
  for (Replica* r : members) {
    links.push_back(inter ? r->nic_tx : r->nvl_tx);
    links.push_back(inter ? r->nic_rx : r->nvl_rx);
  }
  sim::RouteId route = p_.AddRoute(std::span<const LinkId>(links));
  TaskId t = p_.AddFlow(members[0]->*stream, key, static_cast<uint8_t>(cat), label, route);
  for (size_t k = 1; k < members.size(); ++k) p_.AddStreamToTask(t, members[k]->*stream);
  return t;
}

void Lowerer::EmitPieces(int stage, const Chunk& ch, int first, int last, Phase ph) {
  auto& reps = replicas_[stage];
  const bool selective = t_.recompute == RecomputeKind::kSelective;
  const TaskCat cat = ph == Phase::kF   ? TaskCat::kForward
                      : ph == Phase::kB ? TaskCat::kBackward
                                        : TaskCat::kRecompute;
  auto op_parts = [&](const OpTime& op, Duration* c, Duration* t, bool* ov, GroupKind* g) {
    const bool b = ph == Phase::kB;
    *c = b ? op.bwd : op.fwd;
    *t = b ? op.bwd_comm : op.fwd_comm;
    *ov = b ? op.bwd_overlap : op.fwd_overlap;
    *g = b ? op.bwd_group : op.fwd_group;
  };
  if (o_.granularity == Granularity::kCoarse) {
    // One task for the compute of the pieces, then the exposed part of each collective kind.
    Duration compute;
    Duration comm[kNumGroups];
    for (int i = first; i < last; ++i) {
      if (ph == Phase::kR && !ch.pieces[i].layer) continue;
      for (const OpTime& op : ch.pieces[i].time->ops) {
        if (ph == Phase::kR && selective && !op.attention_core) continue;
        Duration c, t;
        bool ov;
        GroupKind g;
        op_parts(op, &c, &t, &ov, &g);
        compute += c;
        if (t > Duration::Zero()) comm[static_cast<int>(g)] += ov ? Max(Duration(), t - c) : t;
      }
    }
    if (compute <= Duration::Zero()) return;  // nothing to recompute in these pieces
    for (Replica& r : reps) Compute(r, compute, cat, cat_label_[static_cast<int>(cat)]);
    for (GroupKind g : {GroupKind::kTp, GroupKind::kCp, GroupKind::kEp}) {
      const int k = static_cast<int>(g);
      if (comm[k] > Duration::Zero()) Blocking(stage, k, comm[k], CommCat(g));
    }
    return;
  }
  // Op granularity: every op, and its collective, in execution order.
  const bool backward = ph == Phase::kB;
  for (int pi = backward ? last - 1 : first; backward ? pi >= first : pi < last;
       pi += backward ? -1 : 1) {
    if (ph == Phase::kR && !ch.pieces[pi].layer) continue;
    const auto& ops = ch.pieces[pi].time->ops;
    const int n = static_cast<int>(ops.size());
    for (int oi = backward ? n - 1 : 0; backward ? oi >= 0 : oi < n; oi += backward ? -1 : 1) {
      const OpTime& op = ops[oi];
      if (ph == Phase::kR && selective && !op.attention_core) continue;
      Duration c, t;
      bool ov;
      GroupKind g;
      op_parts(op, &c, &t, &ov, &g);
      const uint32_t label = ph == Phase::kF ? op.label_f : backward ? op.label_b : op.label_r;
      for (Replica& r : reps) Compute(r, c, cat, label);
      if (t <= Duration::Zero()) continue;
      if (ov) {
        Overlapped(stage, static_cast<int>(g), t, CommCat(g), label);
      } else {
        Blocking(stage, static_cast<int>(g), t, CommCat(g));
      }
    }
  }
}

std::vector<TaskId> Lowerer::DpComm(int stage, const Chunk& ch, int first, int last, bool gather,
                                    const std::vector<TaskId>& after) {
  auto& reps = replicas_[stage];
  std::vector<TaskId> out(reps.size(), kNone);
  double dense = 0, expert = 0;
  for (int i = first; i < last; ++i) {
    dense += ch.pieces[i].dense;
    expert += ch.pieces[i].expert;
  }
  const GroupPlacement gd = groups_[static_cast<int>(GroupKind::kDp)];
  const GroupPlacement ge = groups_[kGroupEdp];
  // Bytes on the wire per element and the collective, by ZeRO stage and compression.
  Collective coll = gather         ? Collective::kAllGather
                    : l_.zero == 0 ? Collective::kAllReduce
                                   : Collective::kReduceScatter;
  double per_elem = gather ? weight_bytes_ : grad_bytes_;
  double gather_factor = 1;  // top-k: each rank's selection is all-gathered
  Duration compress;
  if (!gather && l_.compression != CompressionKind::kNone) {
    const double elems = dense + expert;
    switch (l_.compression) {
      case CompressionKind::kFp16:
        per_elem = std::min(per_elem, 2.0);
        break;
      case CompressionKind::kInt8:
        per_elem = 1;
        break;
      case CompressionKind::kTopK:
        // fp16 value + int32 index per kept element (Lin et al. 2018, deep gradient compression).
        per_elem = l_.compression_param * (2 + 4);
        coll = Collective::kAllGather;
        gather_factor = static_cast<double>(gd.size);
        break;
      case CompressionKind::kPowerSgd:
        // Rank-r factors P (n x r) and Q (m x r) of each h x h-like matrix (Vogels et al. 2019).
        per_elem = grad_bytes_ * std::min(1.0, 2.0 * l_.compression_param / m_.hidden);
        compress += ComputeTime(Flops(4.0 * elems * l_.compression_param),
                                cm_.Peak() * c_.gpu.gemm_efficiency);
        break;
      case CompressionKind::kNone:
        break;
    }
    // Read the gradients, write the compressed form, decompress into the gradients.
    compress += cm_.MemoryTime(3 * elems * grad_bytes_) + cm_.Launch();
  }
  auto timed = [&](double params, GroupPlacement g, Duration* time, Duration* lat, bool* inter) {
    if (params <= 0 || g.size <= 1) return;
    const double bytes = params * per_elem * gather_factor;
    const double buckets = std::max(1.0, std::ceil(bytes / l_.bucket.bytes()));
    CollectiveCost cc = cm_.CollectiveTime(coll, Bytes(bytes / buckets), g);
    *time += cc.time * buckets;
    *lat += cc.latency * buckets;
    *inter = *inter || cc.inter_node;
  };
  Duration time, lat;
  bool inter = false;
  timed(dense, gd, &time, &lat, &inter);
  timed(expert, ge, &time, &lat, &inter);
  if (time <= Duration::Zero()) return out;
  const TaskCat cat = TaskCat::kDp;
  StreamId Replica::*stream = gather ? &Replica::dp_gather : &Replica::dp_reduce;
  const int kind = static_cast<int>(GroupKind::kDp);
  for (size_t i = 0; i < reps.size(); ++i) {
    const std::vector<int>& g = group_of_[kind][i];
    if (g.front() != static_cast<int>(i)) continue;
    std::vector<Replica*> members;
    for (int k : g) members.push_back(&reps[k]);
    std::vector<TaskId> heads;
    if (compress > Duration::Zero()) {
      for (Replica* r : members) {
        TaskId c =
            p_.AddCompute(r->dp_reduce, Key(compress), static_cast<uint8_t>(TaskCat::kCompress),
                          cat_label_[static_cast<int>(TaskCat::kCompress)]);
        heads.push_back(c);
      }
    }
    TaskId f = Flow(members, stream, time, lat, inter, cat, cat_label_[static_cast<int>(cat)]);
    for (size_t k = 0; k < g.size(); ++k) {
      const TaskId a = after.empty() ? kNone : after[g[k]];
      if (!heads.empty()) {
        if (a != kNone) p_.AddDep(a, heads[k]);
        p_.AddDep(heads[k], f);
      } else if (a != kNone) {
        p_.AddDep(a, f);
      }
      out[g[k]] = f;
    }
  }
  return out;
}

void Lowerer::Send(int from, int to, Phase ph, std::vector<TaskId>* into) {
  // Activations (forward) or their gradients (backward) of one micro-batch: b s h / cp, split
  // over the TP ranks (SC21's scatter/gather; with SP they are sharded already).
  const double bytes = static_cast<double>(t_.micro_batch) * t_.seq_len / l_.cp * m_.hidden *
                       DtypeBytes(t_.precision == Dtype::kFp8 ? Dtype::kBf16 : t_.precision) /
                       l_.tp;
  auto& src = replicas_[from];
  auto& dst = replicas_[to];
  into->assign(src.size(), kNone);
  for (size_t i = 0; i < src.size(); ++i) {
    const bool inter = pl_.Node(src[i].global) != pl_.Node(dst[i].global);
    CollectiveCost cc =
        cm_.CollectiveTime(Collective::kSendRecv, Bytes(bytes), {2, inter ? 1 : 2, false});
    const double cap =
        inter ? cm_.NicShare().bytes_per_second() : cm_.IntraBandwidth().bytes_per_second();
    sim::FlowCost fc{cc.latency, Bytes(std::max(0.0, (cc.time - cc.latency).seconds()) * cap)};
    const uint32_t key = out_.costs.AddFlow(fc);
    sim::RouteId route =
        p_.AddRoute({inter ? src[i].nic_tx : src[i].nvl_tx, inter ? dst[i].nic_rx : dst[i].nvl_rx});
    StreamId s = ph == Phase::kF ? src[i].send_fwd : src[i].send_bwd;
    TaskId f = p_.AddFlow(s, key, static_cast<uint8_t>(TaskCat::kPp),
                          cat_label_[static_cast<int>(TaskCat::kPp)], route);
    p_.AddDep(src[i].prev, f);
    (*into)[i] = f;
    out_.pp_flows.push_back(f);
    out_.pp_receiver.push_back(dst[i].rank);
  }
}

void Lowerer::EmitUnit(int s, const Unit& u) {
  const int p = l_.pp;
  const int g = u.chunk * p + s;
  const int V = p * v_;
  const Chunk& ch = chunks_[s][u.chunk];
  auto& reps = replicas_[s];
  const size_t idx = static_cast<size_t>(g) * mbs_ + u.mb;
  for (Replica& r : reps) r.first = kNone;
  const int nseg = static_cast<int>(ch.segments.size());
  const int npieces = static_cast<int>(ch.pieces.size());
  if (u.phase == Phase::kF) {
    if (g > 0) {
      for (size_t i = 0; i < reps.size(); ++i) reps[i].pending.push_back(fwd_in_[idx][i]);
    }
    const bool first_f = u.mb == 0 && l_.zero >= 1 && l_.zero <= 2 && dp_comm_;
    if (l_.zero == 3 && dp_comm_) {
      // FSDP: gather each layer's parameters before its forward (the gather stream runs ahead).
      for (int k = 0; k < nseg; ++k) {
        auto [a, b] = ch.segments[k];
        std::vector<TaskId> f = DpComm(s, ch, a, b, true, {});
        for (size_t i = 0; i < reps.size(); ++i) {
          if (f[i] != kNone) reps[i].pending.push_back(f[i]);
        }
        EmitPieces(s, ch, a, b, Phase::kF);
      }
    } else if (first_f && l_.overlap_dp) {
      for (int k = 0; k < nseg; ++k) {
        for (size_t i = 0; i < reps.size(); ++i) {
          TaskId f = start_gathers_[s][u.chunk][k][i];
          if (f != kNone) reps[i].pending.push_back(f);
        }
        EmitPieces(s, ch, ch.segments[k].first, ch.segments[k].second, Phase::kF);
      }
    } else {
      if (first_f) {
        // Without overlap the updated parameters are all gathered before any forward.
        for (const auto& chunk : start_gathers_[s]) {
          for (const auto& seg : chunk) {
            for (size_t i = 0; i < reps.size(); ++i) {
              if (seg[i] != kNone) reps[i].pending.push_back(seg[i]);
            }
          }
        }
      }
      EmitPieces(s, ch, 0, npieces, Phase::kF);
    }
    for (Replica& r : reps) p_.AddMemory(r.first, r.rank, Bytes(ch.act), sim::MemoryAt::kStart);
    if (g < V - 1) Send(s, (g + 1) % p, Phase::kF, &fwd_in_[idx + mbs_]);
    return;
  }
  // Backward (after recompute when activations were dropped).
  if (g < V - 1) {
    for (size_t i = 0; i < reps.size(); ++i) reps[i].pending.push_back(bwd_in_[idx][i]);
  }
  const bool recompute = t_.recompute != RecomputeKind::kNone;
  const bool last_b = u.mb == mbs_ - 1;
  const bool reduce = dp_comm_ && (l_.zero >= 2 || last_b);
  const bool split = reduce || (l_.zero == 3 && dp_comm_);
  auto backward = [&](int a, int b) {
    if (recompute) EmitPieces(s, ch, a, b, Phase::kR);
    EmitPieces(s, ch, a, b, Phase::kB);
  };
  if (!split) {
    backward(0, npieces);
  } else {
    for (int k = nseg - 1; k >= 0; --k) {
      auto [a, b] = ch.segments[k];
      if (l_.zero == 3) {
        std::vector<TaskId> f = DpComm(s, ch, a, b, true, {});
        for (size_t i = 0; i < reps.size(); ++i) {
          if (f[i] != kNone) reps[i].pending.push_back(f[i]);
        }
      }
      backward(a, b);
      if (!reduce) continue;
      if (!l_.overlap_dp) {
        deferred_.push_back({s, u.chunk, a, b});
        continue;
      }
      std::vector<TaskId> after;
      for (Replica& r : reps) after.push_back(r.prev);
      std::vector<TaskId> f = DpComm(s, ch, a, b, false, after);
      for (size_t i = 0; i < reps.size(); ++i) {
        if (f[i] != kNone) reps[i].reduces.push_back(f[i]);
      }
    }
  }
  for (Replica& r : reps) {
    if (recompute && ch.act_full_max > 0) {
      // Recompute rebuilds one layer's activations at a time (Megatron recomputes per layer).
      p_.AddMemory(r.first, r.rank, Bytes(ch.act_full_max), sim::MemoryAt::kStart);
      p_.AddMemory(r.prev, r.rank, Bytes(-ch.act_full_max), sim::MemoryAt::kEnd);
    }
    p_.AddMemory(r.prev, r.rank, Bytes(-ch.act), sim::MemoryAt::kEnd);
  }
  if (g > 0) Send(s, (g - 1) % p, Phase::kB, &bwd_in_[idx - mbs_]);
}

Status Lowerer::Run() {
  const int p = l_.pp;
  mbs_ = std::max<int64_t>(1, t_.global_batch / (l_.dp * t_.micro_batch));
  v_ = l_.schedule == ScheduleKind::kInterleaved ? std::max(1, l_.virtual_stages) : 1;
  out_.stages = p;
  out_.micro_batches = mbs_;
  if (o_.full && l_.gpus() > kMaxFullRanks) {
    return InvalidArgument(fmt::format(
        "--full replays every rank and is meant for small clusters: {} GPUs is more than {}; "
        "drop --full (the default replays one rank per pipeline stage)",
        l_.gpus(), kMaxFullRanks));
  }
  for (int k = 0; k < kNumGroups; ++k) {
    groups_[k] = k == kGroupEdp ? pl_.ExpertDataGroup() : pl_.Group(static_cast<GroupKind>(k));
  }
  graph_ = BuildModelGraph(m_, RankShape(t_, l_));
  BuildTimes(graph_.embedding, &embedding_);
  BuildTimes(graph_.dense, &dense_);
  if (m_.is_moe()) BuildTimes(graph_.moe, &moe_);
  BuildTimes(graph_.head, &head_);
  grad_bytes_ = StateBytesPerParam(t_).grads;
  weight_bytes_ = StateBytesPerParam(t_).weights;
  for (int i = 0; i < kNumTaskCats; ++i) {
    cat_label_[i] = p_.Intern(TaskCatName(static_cast<TaskCat>(i)));
  }
  dp_comm_ = groups_[static_cast<int>(GroupKind::kDp)].size > 1 || groups_[kGroupEdp].size > 1;
  BuildChunks();
  BuildReplicas();

  // States and buffers held all step (the memory planner's accounting), from the start.
  MemoryReport mem = EstimateMemory(m_, t_, l_, c_);
  const uint32_t start_label = p_.Intern("step start");
  for (int s = 0; s < p; ++s) {
    const StageMemory& st = mem.stages[s];
    const double fixed = st.params_bytes + st.grads_bytes + st.optimizer_bytes + st.other_bytes;
    out_.static_bytes.push_back(fixed);
    for (Replica& r : replicas_[s]) {
      TaskId t = p_.AddCompute(r.compute, Key(Duration::Zero()),
                               static_cast<uint8_t>(TaskCat::kForward), start_label);
      r.prev = t;
      p_.AddMemory(t, r.rank, Bytes(fixed), sim::MemoryAt::kStart);
    }
  }
  // ZeRO 1/2: the parameters updated by the last step's sharded optimizer are all-gathered
  // ahead of their first forward (Megatron's distributed optimizer, overlap_param_gather).
  start_gathers_.assign(p, {});
  if (l_.zero >= 1 && l_.zero <= 2 && dp_comm_) {
    for (int s = 0; s < p; ++s) {
      start_gathers_[s].resize(v_);
      for (int c = 0; c < v_; ++c) {
        for (auto [a, b] : chunks_[s][c].segments) {
          start_gathers_[s][c].push_back(DpComm(s, chunks_[s][c], a, b, true, {}));
        }
      }
    }
  }

  // Emit every stage's units in schedule order, interleaving stages so that a unit is emitted
  // after the unit it receives from (its transfer then exists to depend on).
  const int V = p * v_;
  fwd_in_.assign(static_cast<size_t>(V) * mbs_, {});
  bwd_in_.assign(static_cast<size_t>(V) * mbs_, {});
  std::vector<char> f_done(static_cast<size_t>(V) * mbs_, 0), b_done(f_done.size(), 0);
  std::vector<std::vector<Unit>> order(p);
  size_t remaining = 0;
  for (int s = 0; s < p; ++s) {
    order[s] = ScheduleOrder(l_.schedule, p, v_, mbs_, s);
    remaining += order[s].size();
  }
  std::vector<size_t> pos(p, 0);
  while (remaining > 0) {
    bool progress = false;
    for (int s = 0; s < p; ++s) {
      while (pos[s] < order[s].size()) {
        const Unit& u = order[s][pos[s]];
        const int g = u.chunk * p + s;
        const size_t idx = static_cast<size_t>(g) * mbs_ + u.mb;
        const bool ready = u.phase == Phase::kF ? (g == 0 || f_done[idx - mbs_])
                                                : (g == V - 1 ? f_done[idx] : b_done[idx + mbs_]);
        if (!ready) break;
        EmitUnit(s, u);
        (u.phase == Phase::kF ? f_done : b_done)[idx] = 1;
        ++pos[s];
        --remaining;
        progress = true;
      }
    }
    if (!progress) return Internal("pipeline schedule has a cycle (no stage can proceed)");
  }
  // Gradient reduction after the pipeline flush when it does not overlap backward.
  for (const Deferred& d : deferred_) {
    std::vector<TaskId> after;
    for (Replica& r : replicas_[d.stage]) after.push_back(r.prev);
    std::vector<TaskId> f =
        DpComm(d.stage, chunks_[d.stage][d.chunk], d.first, d.last, false, after);
    for (size_t i = 0; i < f.size(); ++i) {
      if (f[i] != kNone) replicas_[d.stage][i].reduces.push_back(f[i]);
    }
  }
  // Optimizer step: a memory-bound pass over this rank's shard of the states.
  const StateBytes rule = StateBytesPerParam(t_);
  const double per_param = 2 * rule.optimizer + rule.grads + rule.weights;  // states read+written
  const double shard_dense = l_.zero >= 1 ? static_cast<double>(l_.dp) * l_.cp : 1.0;
  const double shard_expert = l_.zero >= 1 ? std::max(1.0, shard_dense / l_.ep) : 1.0;
  for (int s = 0; s < p; ++s) {
    double local = 0;
    for (const Chunk& ch : chunks_[s]) {
      for (const Piece& pc : ch.pieces) local += pc.dense / shard_dense + pc.expert / shard_expert;
    }
    const Duration step = cm_.MemoryTime(local * per_param) + cm_.Launch();
    for (Replica& r : replicas_[s]) {
      for (TaskId f : r.reduces) r.pending.push_back(f);
      Compute(r, step, TaskCat::kOptimizer, cat_label_[static_cast<int>(TaskCat::kOptimizer)]);
    }
  }
  return Status::Ok();
}

// Sorted, merged intervals (picoseconds).
using Intervals = std::vector<std::pair<int64_t, int64_t>>;

void Merge(Intervals* v) {
  std::sort(v->begin(), v->end());
  Intervals out;
  for (auto [a, b] : *v) {
    if (b <= a) continue;
    if (!out.empty() && a <= out.back().second) {
      out.back().second = std::max(out.back().second, b);
    } else {
      out.push_back({a, b});
    }
  }
  *v = std::move(out);
}

// Length of `a` not covered by `b` (both merged), within [0, window).
int64_t Uncovered(const Intervals& a, const Intervals& b, int64_t window) {
  int64_t total = 0;
  size_t j = 0;
  for (auto [s, e] : a) {
    e = std::min(e, window);
    int64_t cur = s;
    while (j < b.size() && b[j].second <= cur) ++j;
    for (size_t k = j; k < b.size() && b[k].first < e && cur < e; ++k) {
      if (b[k].first > cur) total += b[k].first - cur;
      cur = std::max(cur, b[k].second);
    }
    if (cur < e) total += e - cur;
  }
  return total;
}

}  // namespace

StatusOr<LoweredStep> LowerStep(const ModelSpec& model, const Training& training,
                                const Layout& layout, const ClusterSpec& cluster,
                                const StepOptions& options) {
  LoweredStep out;
  Lowerer lw(model, training, layout, cluster, options, &out);
  PARASIM_RETURN_IF_ERROR(lw.Run());
  return out;
}

std::vector<GemmCall> TrainingGemms(const Op& op, bool frozen) {
  // Input gradient (m x k) and, unless the weights are frozen, weight gradient (k x n).
  std::vector<GemmCall> out = {{'F', op.m, op.n, op.k, op.batch},
                               {'B', op.m, op.k, op.n, op.batch}};
  if (!frozen) out.push_back({'W', op.k, op.n, op.m, op.batch});
  return out;
}

StepKernels StepKernelsOf(const ModelSpec& model, const Training& training, const Layout& layout) {
  StepKernels out;
  out.dtype = training.precision;
  const GraphShape shape = RankShape(training, layout);
  const ModelGraph g = BuildModelGraph(model, shape);
  const bool frozen = training.finetune != FinetuneKind::kNone;
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  for (const Block* b : {&g.embedding, &g.dense, &g.moe, &g.head}) {
    for (size_t i = 0; i < b->size(); ++i) {
      const Op& op = b->op(i);
      if (op.kind != OpKind::kGemm) continue;
      for (const GemmCall& c : TrainingGemms(op, frozen)) {
        // The cost model prices a batched GEMM as one with `batch` times the rows.
        const int64_t m = c.m * c.batch;
        if (seen.insert({m, c.n, c.k}).second) {
          out.gemms.push_back({m, c.n, c.k, fmt::format("{} {}", c.pass, op.name)});
        }
      }
    }
  }
  out.attention_batch =
      shape.micro_batch * std::max<int64_t>(1, model.heads / std::max(1, shape.tp));
  out.attention_seq = shape.seq_len / std::max(1, shape.cp);
  out.attention_head_dim = model.hd();
  return out;
}

SequenceFlops FlopsPerSequence(const ModelSpec& model, const Training& training) {
  GraphShape shape;
  shape.micro_batch = 1;
  shape.seq_len = training.seq_len;
  shape.attention = training.attention;
  const ModelGraph g = BuildModelGraph(model, shape);
  const bool frozen = training.finetune != FinetuneKind::kNone;
  auto block = [&](const Block& b, double* model_f, double* recompute_f) {
    for (size_t i = 0; i < b.size(); ++i) {
      const Op& op = b.op(i);
      // Frozen weights need no weight gradient: backward is the input gradient only.
      const double bwd = frozen && op.kind == OpKind::kGemm ? op.bwd_flops / 2 : op.bwd_flops;
      *model_f += op.fwd_flops + bwd;
      if (training.recompute == RecomputeKind::kFull ||
          (training.recompute == RecomputeKind::kSelective && op.in_attention_core)) {
        *recompute_f += op.fwd_flops;
      }
    }
  };
  SequenceFlops f;
  double unused = 0;
  block(g.embedding, &f.model, &unused);
  block(g.head, &f.model, &unused);
  for (int i = 0; i < model.layers; ++i) {
    block(model.IsMoeLayer(i) ? g.moe : g.dense, &f.model, &f.recompute);
  }
  return f;
}

namespace {

std::string Percent(double x) { return fmt::format("{:.0f}%", 100 * x); }

std::string CriticalPathSentence(const LoweredStep& low, const sim::Timeline& tl) {
  const sim::Program& p = low.program;
  if (tl.critical_path.empty() || tl.makespan <= Duration::Zero()) return "";
  double by_cat[kNumTaskCats] = {};
  std::vector<double> by_stage(low.stages, 0.0);
  // Program ranks are created stage by stage, `replicas` per stage.
  std::vector<int> stage_of(p.num_ranks(), -1);
  for (uint32_t r = 0; r < p.num_ranks(); ++r) stage_of[r] = static_cast<int>(r) / low.replicas;
  double total = 0;
  for (sim::TaskId t : tl.critical_path) {
    const double d = (tl.end[t] - tl.start[t]).seconds();
    by_cat[p.category(t)] += d;
    by_stage[stage_of[p.stream_rank(p.stream(t))]] += d;
    total += d;
  }
  if (total <= 0) return "";
  std::vector<std::pair<double, int>> cats;
  for (int c = 0; c < kNumTaskCats; ++c) {
    if (by_cat[c] / total >= 0.005) cats.push_back({by_cat[c], c});
  }
  std::sort(cats.rbegin(), cats.rend());
  std::string parts;
  for (size_t i = 0; i < cats.size() && i < 5; ++i) {
    if (i > 0) parts += ", ";
    parts += fmt::format("{} {}", Percent(cats[i].first / total),
                         TaskCatName(static_cast<TaskCat>(cats[i].second)));
  }
  const int top =
      static_cast<int>(std::max_element(by_stage.begin(), by_stage.end()) - by_stage.begin());
  std::string s = fmt::format("the step's critical path is {}", parts);
  if (low.stages > 1) {
    s += fmt::format("; {} of it runs on stage {}", Percent(by_stage[top] / total), top);
  }
  const double waits = tl.makespan.seconds() - total;
  if (waits / tl.makespan.seconds() >= 0.005) {
    s += fmt::format("; {} is waiting between tasks", Percent(waits / tl.makespan.seconds()));
  }
  return s;
}

}  // namespace

StatusOr<StepReport> SimulateStep(const ModelSpec& model, const Training& training,
                                  const Layout& layout, const ClusterSpec& cluster,
                                  const StepOptions& options, LoweredStep* lowered,
                                  sim::Timeline* timeline) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  PARASIM_ASSIGN_OR_RETURN(LoweredStep low, LowerStep(model, training, layout, cluster, options));
  const auto t1 = Clock::now();
  sim::Engine engine;
  sim::RunOptions ro;
  ro.record_memory = options.record_memory;
  ro.critical_path = options.critical_path;
  PARASIM_ASSIGN_OR_RETURN(sim::Timeline tl, engine.Run(low.program, low.costs, ro));
  const auto t2 = Clock::now();

  StepReport r;
  r.lower_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  r.replay_ms = std::chrono::duration<double, std::milli>(t2 - t0).count();
  r.tasks = low.program.num_tasks();
  r.events = tl.events;
  r.micro_batches = low.micro_batches;
  r.step_time_s = tl.makespan.seconds();
  const sim::Program& prog = low.program;
  const int P = low.stages;
  const int64_t makespan = tl.makespan.picoseconds();

  // Intervals per representative rank and category.
  std::vector<int> stage_of(prog.num_ranks(), -1);
  for (int s = 0; s < P; ++s) stage_of[low.stage_rank[s]] = s;
  std::vector<std::array<Intervals, kNumTaskCats>> iv(P);
  std::vector<int64_t> last_backward(P, 0);
  std::vector<double> optimizer_s(P, 0.0), compute_s(P, 0.0);
  for (sim::TaskId t = 0; t < prog.num_tasks(); ++t) {
    const int s = stage_of[prog.stream_rank(prog.stream(t))];
    const uint8_t cat = prog.category(t);
    if (s < 0 || cat == static_cast<uint8_t>(TaskCat::kPp)) continue;
    const int64_t a = tl.start[t].picoseconds(), b = tl.end[t].picoseconds();
    iv[s][cat].push_back({a, b});
    const double d = (tl.end[t] - tl.start[t]).seconds();
    switch (static_cast<TaskCat>(cat)) {
      case TaskCat::kBackward:
        last_backward[s] = std::max(last_backward[s], b);
        compute_s[s] += d;
        break;
      case TaskCat::kForward:
      case TaskCat::kRecompute:
        compute_s[s] += d;
        break;
      case TaskCat::kOptimizer:
        optimizer_s[s] += d;
        compute_s[s] += d;
        break;
      default:
        break;
    }
  }
  for (size_t i = 0; i < low.pp_flows.size(); ++i) {
    const int s = stage_of[low.pp_receiver[i]];
    const sim::TaskId t = low.pp_flows[i];
    if (s >= 0)
      iv[s][static_cast<int>(TaskCat::kPp)].push_back(
          {tl.start[t].picoseconds(), tl.end[t].picoseconds()});
  }
  const int64_t span = *std::max_element(last_backward.begin(), last_backward.end());
  int busiest = 0;
  double busiest_work = -1;
  std::vector<double> work(P, 0.0);
  for (int s = 0; s < P; ++s) {
    Intervals compute;
    for (TaskCat c :
         {TaskCat::kForward, TaskCat::kBackward, TaskCat::kRecompute, TaskCat::kOptimizer}) {
      const Intervals& x = iv[s][static_cast<int>(c)];
      compute.insert(compute.end(), x.begin(), x.end());
    }
    Merge(&compute);
    auto exposed = [&](TaskCat c, int64_t window) {
      Intervals x = iv[s][static_cast<int>(c)];
      if (c == TaskCat::kDp) {
        const Intervals& z = iv[s][static_cast<int>(TaskCat::kCompress)];
        x.insert(x.end(), z.begin(), z.end());
      }
      Merge(&x);
      return static_cast<double>(Uncovered(x, compute, window)) * 1e-12;
    };
    ExposedComm e;
    e.tp = exposed(TaskCat::kTp, makespan);
    e.cp = exposed(TaskCat::kCp, makespan);
    e.ep = exposed(TaskCat::kEp, makespan);
    e.pp = exposed(TaskCat::kPp, makespan);
    e.dp = exposed(TaskCat::kDp, makespan);
    r.exposed.tp = std::max(r.exposed.tp, e.tp);
    r.exposed.cp = std::max(r.exposed.cp, e.cp);
    r.exposed.ep = std::max(r.exposed.ep, e.ep);
    r.exposed.pp = std::max(r.exposed.pp, e.pp);
    r.exposed.dp = std::max(r.exposed.dp, e.dp);
    // Pipeline work: the compute stream's busy time (blocking collectives included) without
    // the optimizer step.
    work[s] = tl.busy[low.stage_compute[s]].seconds() - optimizer_s[s];
    if (work[s] > busiest_work) {
      busiest_work = work[s];
      busiest = s;
    }
  }
  {
    // Bubble: the busiest stage's idle time before its last backward, less the time it waited
    // on transfers and parameter gathers (reported as exposed communication instead).
    const int s = busiest;
    Intervals compute_like;
    for (int c = 0; c < kNumTaskCats; ++c) {
      if (c == static_cast<int>(TaskCat::kPp) || c == static_cast<int>(TaskCat::kDp)) continue;
      compute_like.insert(compute_like.end(), iv[s][c].begin(), iv[s][c].end());
    }
    Merge(&compute_like);
    Intervals waits = iv[s][static_cast<int>(TaskCat::kPp)];
    waits.insert(waits.end(), iv[s][static_cast<int>(TaskCat::kDp)].begin(),
                 iv[s][static_cast<int>(TaskCat::kDp)].end());
    Merge(&waits);
    const double waited = static_cast<double>(Uncovered(waits, compute_like, span)) * 1e-12;
    const double idle = static_cast<double>(span) * 1e-12 - busiest_work;
    r.bubble_fraction = busiest_work > 0 ? std::max(0.0, idle - waited) / busiest_work : 0.0;
  }
  const int v =
      layout.schedule == ScheduleKind::kInterleaved ? std::max(1, layout.virtual_stages) : 1;
  r.ideal_bubble_fraction =
      static_cast<double>(layout.pp - 1) / (static_cast<double>(v) * r.micro_batches);
  r.stage_compute_s = compute_s;

  r.capacity_bytes = cluster.gpu.memory.bytes();
  for (int s = 0; s < P; ++s) {
    const double peak = tl.peak_memory[low.stage_rank[s]];
    r.peak_memory_bytes.push_back(peak);
    if (peak > r.capacity_bytes) r.fits = false;
  }

  const double gpus = static_cast<double>(layout.gpus());
  const SequenceFlops sf = FlopsPerSequence(model, training);
  const double gb = static_cast<double>(training.global_batch);
  r.model_flops_per_step = sf.model * gb;
  r.hw_flops_per_step = (sf.model + sf.recompute) * gb;
  const double peak = cluster.gpu.Peak(training.precision).flops_per_second();
  if (r.step_time_s > 0) {
    r.tokens_per_s = gb * training.seq_len / r.step_time_s;
    r.tflops_per_gpu = r.model_flops_per_step / r.step_time_s / gpus / 1e12;
    r.hw_tflops_per_gpu = r.hw_flops_per_step / r.step_time_s / gpus / 1e12;
    r.mfu = peak > 0 ? r.tflops_per_gpu * 1e12 / peak : 0;
    r.hfu = peak > 0 ? r.hw_tflops_per_gpu * 1e12 / peak : 0;
    if (training.tokens > 0) {
      r.time_to_train_s = training.tokens / r.tokens_per_s;
      r.gpu_hours = r.time_to_train_s * gpus / 3600;
      r.cost = r.gpu_hours * cluster.gpu_hour_cost;
    }
  }
  if (options.critical_path) r.critical_path = CriticalPathSentence(low, tl);

  // Warnings for the seeds' anti-patterns.
  Placement pl(layout, cluster);
  GroupPlacement tp = pl.Group(GroupKind::kTp);
  if (tp.size > tp.per_node) {
    r.warnings.push_back(fmt::format(
        "TP group of {} spans nodes ({} GPUs per node): every layer's TP collectives cross "
        "{}; keep tp <= {} so TP stays on {}",
        layout.tp, tp.per_node, cluster.inter.id, cluster.gpus_per_node, cluster.intra.id));
  }
  if (layout.pp > 1 && r.micro_batches < layout.pp) {
    r.warnings.push_back(fmt::format(
        "{} micro-batches for {} pipeline stages: the bubble costs {} of the compute time; use "
        "at least {} micro-batches (smaller micro_batch or larger global_batch) or fewer stages",
        r.micro_batches, layout.pp, Percent(r.ideal_bubble_fraction), 4 * layout.pp));
  }
  if (training.global_batch < layout.dp) {
    r.warnings.push_back(fmt::format("global batch {} is smaller than the {} data-parallel ranks",
                                     training.global_batch, layout.dp));
  }
  if (layout.pp == 1 && r.micro_batches > 1) {
    Training bigger = training;
    bigger.micro_batch = training.micro_batch * r.micro_batches;
    if (EstimateMemory(model, bigger, layout, cluster).fits) {
      r.warnings.push_back(fmt::format(
          "gradient accumulation over {} micro-batches although micro_batch {} fits in memory: "
          "one larger micro-batch runs larger, more efficient GEMMs",
          r.micro_batches, bigger.micro_batch));
    }
  }
  if (r.step_time_s > 0 && r.exposed.total() / r.step_time_s > 0.2) {
    r.warnings.push_back(fmt::format(
        "exposed communication is {} of the step (above 20%, scaling efficiency suffers): "
        "overlap it, or move the largest kind onto a faster fabric",
        Percent(r.exposed.total() / r.step_time_s)));
  }
  if (!r.fits) {
    int worst =
        static_cast<int>(std::max_element(r.peak_memory_bytes.begin(), r.peak_memory_bytes.end()) -
                         r.peak_memory_bytes.begin());
    r.warnings.push_back(
        fmt::format("does not fit: stage {} peaks at {:.1f} GiB of {:.1f} GiB per GPU", worst,
                    r.peak_memory_bytes[worst] / 1073741824.0, r.capacity_bytes / 1073741824.0));
  }
  if (lowered) *lowered = std::move(low);
  if (timeline) *timeline = std::move(tl);
  return r;
}

}  // namespace parasim
