// The replayed ranks of one step: per pipeline stage, its replicas (one by default, every
// TP x CP x DP rank with --full), each a program rank with its streams and its NIC and NVLink
// links, and the groups among them. Puts tasks on them: compute-stream tasks in program order,
// blocking collectives (one task shared by the group's compute streams), collectives beside
// the op just emitted, and flows over the members' links.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/flat_map.h"
#include "sim/program.h"
#include "strategies/lowering.h"

namespace parasim {

struct Replica {
  uint32_t rank = 0;
  int64_t global = 0;
  sim::StreamId compute = 0, side_tp = 0, side_cp = 0, send_fwd = 0, send_bwd = 0, dp_reduce = 0,
                dp_gather = 0;
  // The EP all-to-alls of F&B pairs (schedules that pair forwards with backwards), else kNone.
  sim::StreamId side_ep = sim::kNone;
  sim::LinkId nic_tx = 0, nic_rx = 0, nvl_tx = 0, nvl_rx = 0;
  sim::TaskId prev = sim::kNone;        // last task on the compute stream
  std::vector<sim::TaskId> pending;     // dependencies of the next compute-stream task
  std::vector<sim::TaskId> last_preds;  // what the last compute-stream task waited for
  sim::TaskId first = sim::kNone;       // first compute-stream task of the unit being emitted
  std::vector<sim::TaskId> reduces;     // gradient communication the optimizer step waits for
  // The host (CPU) that issues this rank's work (RankTopology::Issue): its stream, its last
  // task, and the host time not yet put on it (the rest of the last issue, and host work
  // waiting for the next one).
  sim::StreamId host = sim::kNone;
  sim::TaskId host_last = sim::kNone;
  Duration host_carry;
  // The ops the host has issued so far, and each GPU task with the count after its issue
  // (from `lead_next` on, the ones the host's lead may still wait for; `lead_wait` the last
  // it waits for).
  double host_ops = 0;
  std::vector<std::pair<double, sim::TaskId>> issued;
  size_t lead_next = 0;
  sim::TaskId lead_wait = sim::kNone;
  // The routes from this replica's ports to a receiver's (RankTopology::RouteTo), kept: every
  // micro-batch crosses the same links, and a replica has at most three receivers (itself,
  // for a data-parallel flow over its own ports, and the next and previous stages'). A
  // pipeline send's cost key is kept with its route (RankTopology::Transfer): every
  // micro-batch sends the same activations.
  struct RouteFrom {
    uint32_t to = sim::kNone;  // the receiver's rank
    bool inter = false;
    sim::RouteId route = sim::kNone;
    double send_bytes = -1;          // a send's bytes, once priced
    uint32_t send_key = sim::kNone;  // and its cost key
  };
  RouteFrom routes[3];
};

class RankTopology {
 public:
  explicit RankTopology(LoweringContext& ctx) : ctx_(ctx) {}

  // Adds the ranks, streams and links of every stage's replicas and finds their groups.
  void Build();

  std::vector<Replica>& stage(int s) { return replicas_[s]; }
  // The replica indices of replica i's group of kind k, within its stage, sorted.
  const std::vector<int>& group(int k, size_t i) const { return group_of_[k][i]; }

  // The next task on r's compute stream, after r's pending dependencies.
  // `contended`: its duration beside a running collective (zero = not slowed); `host`: the
  // host's time to issue its kernels (Issue).
  sim::TaskId Compute(Replica& r, Duration d, TaskCat cat, uint32_t label,
                      Duration contended = Duration::Zero(), Duration host = Duration::Zero()) {
    return Compute(r, ctx_.Key(d, contended), cat, label, host);
  }
  // The same, priced by a cost key (LoweringContext::Key).
  sim::TaskId Compute(Replica& r, uint32_t key, TaskCat cat, uint32_t label,
                      Duration host = Duration::Zero());

  // The host as a resource. Each replica's CPU issues its GPU work one op after another, in
  // the order the lowering emits it (a rank's emission order is its program order), on a
  // stream of its own; a GPU task cannot start before the host has issued its first op, and
  // the host issues the rest while the GPU runs. Issue puts the host time before the next GPU
  // task on r's host stream (what is left of the last task's issue, any host work waiting,
  // and the next task's first op) and returns the host task that GPU task waits for (kNone
  // when the replay has no host: GpuSpec::host_op_time zero). The host runs ahead of the GPU
  // except where it waits for it (Sync).
  sim::TaskId Issue(Replica& r, Duration host);
  // Records GPU task `gpu` as issued by r's host after host task `h` (Issue's), and makes it
  // wait for that.
  void Bind(Replica& r, sim::TaskId h, sim::TaskId gpu);
  // Host work (Python) before the next issue of every replica of `stage`.
  void HostWork(int stage, Duration d);
  // Puts the host time r has not yet placed on its stream (Issue's carry) there.
  void Flush(Replica& r);
  // r's host waits for these GPU tasks (a device-to-host read, torch.cuda.synchronize) after
  // issuing what it has.
  void Sync(Replica& r, std::initializer_list<sim::TaskId> gpu);
  void Sync(Replica& r, std::span<const sim::TaskId> gpu);
  // Each replica i of `stage` waits (Sync) for its last GPU task, and for in[i] where `in` is
  // given (then only the replicas it covers).
  void SyncStage(int stage, std::span<const sim::TaskId> in);
  // A collective of group kind `kind` on the compute streams of each group of `stage`.
  void Blocking(int stage, int kind, Duration d, TaskCat cat) {
    Blocking(stage, kind, ctx_.Key(d), cat);
  }
  // The same, priced by a cost key.
  void Blocking(int stage, int kind, uint32_t key, TaskCat cat);
  // A collective beside the op just emitted: it waits for what that op waited for, and the
  // next compute-stream task waits for it.
  void Overlapped(int stage, int kind, Duration d, TaskCat cat, uint32_t label);
  // A collective of group kind `kind` on the side_ep streams, after each member's last
  // compute-stream task, that the compute stream does not wait for: the caller makes a later
  // task wait for the returned task of each replica (one per replica of `stage`).
  std::vector<sim::TaskId> Async(int stage, int kind, Duration d, TaskCat cat);
  // The cost key of a flow over NICs (inter) or NVLink ports that takes `time` alone on them.
  uint32_t FlowCostKey(Duration time, Duration latency, bool inter);
  // A flow over the members' NICs (inter) or NVLink ports, priced by `key` (FlowCostKey).
  sim::TaskId Flow(const std::vector<Replica*>& members, sim::StreamId Replica::*stream,
                   uint32_t key, bool inter, TaskCat cat, uint32_t label);
  // One point-to-point flow from `src` to `dst` of `bytes`, on the sender's `stream`.
  sim::TaskId Transfer(Replica& src, Replica& dst, Bytes bytes, sim::StreamId stream);
  // What such a transfer costs alone on its link, between nodes or inside one.
  CollectiveCost TransferCost(Bytes bytes, bool inter) const;
  // Makes each replica's next compute task of `stage` wait for its entry of `tasks`.
  void WaitFor(int stage, std::span<const sim::TaskId> tasks);

 private:
  void AddReplica(int stage, RankCoords rc);
  void FindGroups();
  // The route from `src`'s transmit port to `dst`'s receive port, NIC (inter) or NVLink.
  sim::RouteId RouteTo(Replica& src, const Replica& dst, bool inter) {
    return EntryTo(src, dst, inter).route;
  }
  Replica::RouteFrom& EntryTo(Replica& src, const Replica& dst, bool inter);
  // A pipeline send of `bytes` from `src` to `dst` not priced before: priced, and kept with
  // its route.
  const Replica::RouteFrom& PriceSend(Replica& src, const Replica& dst, Bytes bytes);

  LoweringContext& ctx_;
  std::vector<std::vector<Replica>> replicas_;  // [stage][replica]
  std::vector<std::vector<int>> group_of_[kNumGroups];
  std::vector<sim::LinkId> links_;   // scratch: a flow's route
  std::vector<sim::TaskId> issued_;  // scratch: its members' host tasks
  sim::FlatMap<std::pair<int64_t, int64_t>, uint32_t, Int64PairHash>
      transfer_keys_;  // (bytes, inter)
};

}  // namespace parasim
