#include "strategies/topology.h"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <span>
#include <string>
#include <unordered_map>

#include "strategies/host_ops.h"

namespace parasim {

using sim::kNone;
using sim::LinkId;
using sim::StreamId;
using sim::TaskId;

void RankTopology::Build() {
  const Layout& l = ctx_.layout;
  replicas_.assign(l.pp, {});
  std::vector<RankCoords> coords;
  if (ctx_.options.full) {
    for (int64_t d = 0; d < l.dp; ++d) {
      for (int c = 0; c < l.cp; ++c) {
        for (int t = 0; t < l.tp; ++t) coords.push_back({t, c, d, 0});
      }
    }
  } else {
    coords.push_back({0, 0, 0, 0});
  }
  ctx_.out.replicas = static_cast<int>(coords.size());
  for (int s = 0; s < l.pp; ++s) {
    for (RankCoords rc : coords) {
      rc.pp = s;
      AddReplica(s, rc);
    }
    ctx_.out.stage_rank.push_back(replicas_[s][0].rank);
    ctx_.out.stage_compute.push_back(replicas_[s][0].compute);
  }
  FindGroups();
}

void RankTopology::AddReplica(int s, RankCoords rc) {
  sim::Program& p = ctx_.program;
  const Bandwidth nic = ctx_.cost.NicShare();
  const Bandwidth nvl = ctx_.cost.IntraBandwidth();
  Replica r;
  r.global = ctx_.placement.Rank(rc);
  const std::string name = ctx_.options.full ? fmt::format("rank {} (stage {})", r.global, s)
                                             : fmt::format("stage {}", s);
  r.rank = p.AddRank(name);
  // Collectives overlapped with compute (TP/CP side streams, gradient reduction, parameter
  // gathers) slow the compute stream while they run (GpuSpec::contended_*). Pipeline sends are
  // NCCL send/recv on one or two channels and are left out.
  using sim::StreamRole;
  r.compute = p.AddStream(r.rank, "compute", StreamRole::kCompute);
  r.side_tp = p.AddStream(r.rank, "tp-overlap", StreamRole::kCommunication);
  r.side_cp = p.AddStream(r.rank, "cp-ring", StreamRole::kCommunication);
  r.send_fwd = p.AddStream(r.rank, "pp-send-fwd");
  r.send_bwd = p.AddStream(r.rank, "pp-send-bwd");
  r.dp_reduce = p.AddStream(r.rank, "dp-reduce", StreamRole::kCommunication);
  r.dp_gather = p.AddStream(r.rank, "dp-gather", StreamRole::kCommunication);
  if (PairsForwardBackward(ctx_.layout) && ctx_.layout.ep > 1) {
    r.side_ep = p.AddStream(r.rank, "ep-overlap", StreamRole::kCommunication);
  }
  if (ctx_.cluster.gpu.host_op_time > Duration::Zero()) r.host = p.AddStream(r.rank, "host");
  r.nic_tx = p.AddLink(name + " nic-tx", nic);
  r.nic_rx = p.AddLink(name + " nic-rx", nic);
  r.nvl_tx = p.AddLink(name + " nvlink-tx", nvl);
  r.nvl_rx = p.AddLink(name + " nvlink-rx", nvl);
  replicas_[s].push_back(std::move(r));
}

void RankTopology::FindGroups() {
  // Groups among one stage's replicas (every group lies within a stage, except PP's).
  const int n = ctx_.out.replicas;
  std::unordered_map<int64_t, int> index;
  for (int i = 0; i < n; ++i) index[replicas_[0][i].global] = i;
  for (int k = 0; k < kNumGroups; ++k) {
    group_of_[k].assign(n, {});
    for (int i = 0; i < n; ++i) {
      if (!ctx_.options.full || k == static_cast<int>(GroupKind::kPp)) {
        group_of_[k][i] = {i};
        continue;
      }
      const int64_t g = replicas_[0][i].global;
      std::vector<int64_t> members = k == kGroupEdp
                                         ? ctx_.placement.ExpertDataMembers(g)
                                         : ctx_.placement.Members(static_cast<GroupKind>(k), g);
      for (int64_t x : members) group_of_[k][i].push_back(index.at(x));
      std::sort(group_of_[k][i].begin(), group_of_[k][i].end());
    }
  }
}

namespace {

// How far the host may run ahead of the GPU, in ops issued and not yet finished: CUDA queues
// about a thousand launches per context before cudaLaunchKernel blocks (an estimate from
// launch-queue measurements people report; it bounds the host's lead where nothing else
// does: only its order of magnitude matters, a unit of a large model holds more).
constexpr double kHostLeadOps = 1024;

}  // namespace

TaskId RankTopology::Issue(Replica& r, Duration host) {
  if (r.host == kNone) return kNone;
  // Work the host issued with the ops before (a unit's exposed collectives, whose issue its
  // compute task carries) waits for where the host has got to, not for the rest of that issue:
  // the host issues them among those ops.
  if (host <= Duration::Zero()) return r.host_last;
  const Duration op = ctx_.cluster.gpu.host_op_time;
  const Duration first = Min(host, op);
  // The launch queue: before this task's first op, the host waits for the GPU task issued
  // kHostLeadOps ops earlier. The wait is put before what the host carries from the task
  // before too (the rest of its issue): that task was issued after the one waited for ended,
  // in all but the first kHostLeadOps ops of it, so the error is at most that.
  size_t& next = r.lead_next;
  const double at = r.host_ops + first.seconds() / op.seconds();
  while (next < r.issued.size() && r.issued[next].first <= at - kHostLeadOps) ++next;
  sim::TaskId wait = kNone;
  if (next > 0 && r.issued[next - 1].second != r.lead_wait) {
    wait = r.lead_wait = r.issued[next - 1].second;
  }
  if (next > 4096) {  // forget what the host is far past
    r.issued.erase(r.issued.begin(), r.issued.begin() + static_cast<std::ptrdiff_t>(next - 1));
    next = 1;
  }
  const Duration d = r.host_carry + first;
  r.host_carry = host - first;
  r.host_ops += host.seconds() / op.seconds();
  sim::Program& p = ctx_.program;
  r.host_last = p.AddCompute(r.host, ctx_.Key(d), static_cast<uint8_t>(TaskCat::kHost),
                             ctx_.Label(TaskCat::kHost));
  if (wait != kNone) p.AddDep(wait, r.host_last);
  return r.host_last;
}

void RankTopology::Bind(Replica& r, TaskId h, TaskId gpu) {
  if (h != kNone) ctx_.program.AddDep(h, gpu);
  if (r.host != kNone) r.issued.push_back({r.host_ops, gpu});
}

void RankTopology::HostWork(int stage, Duration d) {
  if (d <= Duration::Zero()) return;
  for (Replica& r : replicas_[stage]) r.host_carry += d;
}

void RankTopology::Sync(Replica& r, std::initializer_list<TaskId> gpu) {
  Sync(r, std::span<const TaskId>(gpu.begin(), gpu.size()));
}

void RankTopology::Flush(Replica& r) {
  if (r.host == kNone || r.host_carry <= Duration::Zero()) return;
  r.host_last =
      ctx_.program.AddCompute(r.host, ctx_.Key(r.host_carry), static_cast<uint8_t>(TaskCat::kHost),
                              ctx_.Label(TaskCat::kHost));
  r.host_carry = Duration::Zero();
}

void RankTopology::Sync(Replica& r, std::span<const TaskId> gpu) {
  if (r.host == kNone) return;
  sim::Program& p = ctx_.program;
  const uint8_t cat = static_cast<uint8_t>(TaskCat::kHost);
  Flush(r);
  // The read itself (a device-to-host copy or synchronize, and the Python around it): one op.
  r.host_last = p.AddCompute(r.host, ctx_.Key(ctx_.cluster.gpu.host_op_time), cat,
                             ctx_.Label(TaskCat::kHost));
  for (TaskId t : gpu) {
    if (t != kNone) p.AddDep(t, r.host_last);
  }
}

void RankTopology::SyncStage(int stage, std::span<const TaskId> in) {
  std::vector<Replica>& reps = replicas_[stage];
  if (in.empty()) {
    for (Replica& r : reps) Sync(r, {r.prev});
    return;
  }
  for (size_t i = 0; i < reps.size() && i < in.size(); ++i) Sync(reps[i], {in[i], reps[i].prev});
}

TaskId RankTopology::Compute(Replica& r, uint32_t key, TaskCat cat, uint32_t label, Duration host) {
  sim::Program& p = ctx_.program;
  const TaskId h = Issue(r, host);
  TaskId t = p.AddCompute(r.compute, key, static_cast<uint8_t>(cat), label);
  Bind(r, h, t);
  r.last_preds.clear();
  if (r.prev != kNone) r.last_preds.push_back(r.prev);
  for (TaskId x : r.pending) {
    p.AddDep(x, t);
    r.last_preds.push_back(x);
  }
  r.pending.clear();
  r.prev = t;
  if (r.first == kNone) r.first = t;
  return t;
}

void RankTopology::Blocking(int stage, int kind, uint32_t key, TaskCat cat) {
  sim::Program& p = ctx_.program;
  auto& reps = replicas_[stage];
  for (size_t i = 0; i < reps.size(); ++i) {
    const std::vector<int>& g = group_of_[kind][i];
    if (g.front() != static_cast<int>(i)) continue;  // emitted by the group's first member
    TaskId t = Compute(reps[i], key, cat, ctx_.Label(cat));
    for (size_t k = 1; k < g.size(); ++k) {
      Replica& r = reps[g[k]];
      p.AddStreamToTask(t, r.compute);
      if (r.host_last != kNone) p.AddDep(r.host_last, t);
      for (TaskId x : r.pending) p.AddDep(x, t);
      r.pending.clear();
      r.last_preds.assign(1, r.prev);
      r.prev = t;
    }
  }
}

void RankTopology::Overlapped(int stage, int kind, Duration d, TaskCat cat, uint32_t label) {
  sim::Program& p = ctx_.program;
  auto& reps = replicas_[stage];
  StreamId Replica::*side =
      kind == static_cast<int>(GroupKind::kCp) ? &Replica::side_cp : &Replica::side_tp;
  for (size_t i = 0; i < reps.size(); ++i) {
    const std::vector<int>& g = group_of_[kind][i];
    if (g.front() != static_cast<int>(i)) continue;
    TaskId t = p.AddCompute(reps[i].*side, ctx_.Key(d), static_cast<uint8_t>(cat), label);
    for (size_t k = 0; k < g.size(); ++k) {
      Replica& r = reps[g[k]];
      if (k > 0) p.AddStreamToTask(t, r.*side);
      for (TaskId x : r.last_preds) p.AddDep(x, t);
      if (r.host_last != kNone) p.AddDep(r.host_last, t);  // issued with the op (its host)
      r.pending.push_back(t);
    }
  }
}

std::vector<TaskId> RankTopology::Async(int stage, int kind, Duration d, TaskCat cat) {
  sim::Program& p = ctx_.program;
  auto& reps = replicas_[stage];
  std::vector<TaskId> out(reps.size(), kNone);
  for (size_t i = 0; i < reps.size(); ++i) {
    const std::vector<int>& g = group_of_[kind][i];
    if (g.front() != static_cast<int>(i)) continue;
    TaskId t =
        p.AddCompute(reps[i].side_ep, ctx_.Key(d), static_cast<uint8_t>(cat), ctx_.Label(cat));
    for (size_t k = 0; k < g.size(); ++k) {
      Replica& r = reps[g[k]];
      if (k > 0) p.AddStreamToTask(t, r.side_ep);
      if (r.prev != kNone) p.AddDep(r.prev, t);
      if (r.host_last != kNone) p.AddDep(r.host_last, t);
      out[g[k]] = t;
    }
  }
  return out;
}

uint32_t RankTopology::FlowCostKey(Duration time, Duration latency, bool inter) {
  // The flow moves the bytes that take the cost model's time at the link's rate when alone;
  // flows sharing a link (pipeline sends beside gradient buckets) slow each other down.
  const Bandwidth cap = inter ? ctx_.cost.NicShare() : ctx_.cost.IntraBandwidth();
  return ctx_.FlowKey(latency, TransferBytes(time - latency, cap));
}

TaskId RankTopology::Flow(const std::vector<Replica*>& members, StreamId Replica::*stream,
                          uint32_t key, bool inter, TaskCat cat, uint32_t label) {
  sim::Program& p = ctx_.program;
  // Each member's host issues the collective.
  issued_.clear();
  const Duration issue = ctx_.cluster.gpu.host_op_time * kHostOpsPerCollective;
  for (Replica* r : members) issued_.push_back(Issue(*r, issue));
  sim::RouteId route;
  if (members.size() == 1) {
    route = RouteTo(*members[0], *members[0], inter);  // its own ports, out and in
  } else {
    std::vector<LinkId>& links = links_;
    links.clear();
    for (Replica* r : members) {
      links.push_back(inter ? r->nic_tx : r->nvl_tx);
      links.push_back(inter ? r->nic_rx : r->nvl_rx);
    }
    route = p.AddRoute(links);
  }
  TaskId t = p.AddFlow(members[0]->*stream, key, static_cast<uint8_t>(cat), label, route);
  for (size_t k = 1; k < members.size(); ++k) p.AddStreamToTask(t, members[k]->*stream);
  for (size_t k = 0; k < members.size(); ++k) Bind(*members[k], issued_[k], t);
  return t;
}

CollectiveCost RankTopology::TransferCost(Bytes bytes, bool inter) const {
  return ctx_.cost.CollectiveTime(Collective::kSendRecv, bytes, {2, inter ? 1 : 2, false});
}

TaskId RankTopology::Transfer(Replica& src, Replica& dst, Bytes bytes, StreamId stream) {
  const Replica::RouteFrom* to = nullptr;
  for (const Replica::RouteFrom& r : src.routes) {
    if (r.to == dst.rank && r.send_bytes == bytes.bytes()) to = &r;
  }
  if (to == nullptr) to = &PriceSend(src, dst, bytes);
  // The sender's host issues the send (the receiver's recv is issued with the unit that waits
  // for it).
  const TaskId h = Issue(src, ctx_.cluster.gpu.host_op_time * kHostOpsPerCollective);
  const TaskId t = ctx_.program.AddFlow(stream, to->send_key, static_cast<uint8_t>(TaskCat::kPp),
                                        ctx_.Label(TaskCat::kPp), to->route);
  Bind(src, h, t);
  return t;
}

const Replica::RouteFrom& RankTopology::PriceSend(Replica& src, const Replica& dst, Bytes bytes) {
  const bool inter = ctx_.placement.Node(src.global) != ctx_.placement.Node(dst.global);
  // Priced once per size and kind of hop.
  auto [it, inserted] =
      transfer_keys_.Emplace({std::bit_cast<int64_t>(bytes.bytes()), inter ? 1 : 0}, 0);
  if (inserted) {
    const CollectiveCost cc = TransferCost(bytes, inter);
    *it = FlowCostKey(cc.time, cc.latency, inter);
  }
  Replica::RouteFrom& r = EntryTo(src, dst, inter);
  r.send_bytes = bytes.bytes();
  r.send_key = *it;
  return r;
}

Replica::RouteFrom& RankTopology::EntryTo(Replica& src, const Replica& dst, bool inter) {
  for (Replica::RouteFrom& r : src.routes) {
    if (r.to == dst.rank && r.inter == inter) return r;
  }
  const sim::RouteId route =
      ctx_.program.AddRoute({inter ? src.nic_tx : src.nvl_tx, inter ? dst.nic_rx : dst.nvl_rx});
  // Kept in the first free entry, else in place of the last.
  size_t k = 0;
  while (k + 1 < std::size(src.routes) && src.routes[k].to != kNone) ++k;
  src.routes[k] = {dst.rank, inter, route};
  return src.routes[k];
}

void RankTopology::WaitFor(int stage, std::span<const TaskId> tasks) {
  auto& reps = replicas_[stage];
  for (size_t i = 0; i < reps.size() && i < tasks.size(); ++i) {
    if (tasks[i] != kNone) reps[i].pending.push_back(tasks[i]);
  }
}

}  // namespace parasim
