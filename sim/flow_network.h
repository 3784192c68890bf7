// The flows in progress during a replay and their rates: every flow crosses the links of its
// route, and the flows connected through shared links split the capacity max-min fairly
// (sim/maxmin.h). When a flow starts or ends only the rates of its connected component can
// change, so only they are re-solved; each flow's bytes are credited to its links when it
// begins (every byte crosses every link of its route). The common components are found and
// priced without the general search and solver, giving the solver's own rates: the flows of one
// route alone on its links, a route's flows with the flows beside them that reach no further (a
// pipeline send and the gradient buckets on its ranks' ports), and, once the route's last flow
// ends, those neighbours as routes apart; small components' rates are kept by their routes.
//
//   FlowNetwork net(program, &timeline.link_bytes, &seq);
//   net.Begin(task, bytes, now, &due);   // due: completions to queue or move (time, number, task)
//   net.Finish(task, now, &due);         // at its completion: it leaves, others speed up
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "sim/completion.h"
#include "sim/flat_map.h"
#include "sim/huge_pages.h"
#include "sim/maxmin.h"
#include "sim/program.h"

namespace parasim::sim {

class FlowNetwork {
 public:
  // A flow's completion to queue as an event: its time in picoseconds, its sequence number and
  // the flow's task. Every move of a completion takes the next number of *seq and is listed:
  // the replay queues the flow's first and moves its queued event to the later ones.
  struct Completed {
    int64_t at;
    uint32_t seq;
    TaskId task;
  };
  using Due = std::vector<Completed>;

  // seq: the replay's event numbering, shared.
  FlowNetwork(const Program& p, std::vector<double>* link_bytes, uint64_t* seq);

  // Starts the flow of task `t` with `bytes` to move at time `now`.
  void Begin(TaskId t, double bytes, int64_t now, Due* due);
  // The flow of `t` reaches its completion (the one last listed for it) and leaves.
  void Finish(TaskId t, int64_t now, Due* due);
  size_t active() const { return active_.size(); }

  // A flow in progress, for the replay's periodic jump (RunOptions::shift).
  struct State {
    TaskId task;
    double remaining, rate;
    int64_t updated_at;
    Completion done;
  };
  // The flows in progress, in the order they are solved in.
  std::vector<State> States() const;
  // Every flow's task replaced by map(task) and its times moved by dt (the jump).
  template <class Map>
  void Relabel(Map map, int64_t dt) {
    for (Active& f : active_) slot_[f.task] = -1;
    for (size_t i = 0; i < active_.size(); ++i) {
      Active& f = active_[i];
      f.task = map(f.task);
      f.route = p_.route(f.task);  // the same route: the shift maps a flow to one of its shape
      f.updated_at += dt;
      f.done.due += dt;
      slot_[f.task] = static_cast<int32_t>(i);
    }
    for (auto& on : link_flows_) {
      for (TaskId& t : on) t = map(t);
    }
  }
  // Where each crediting of a flow's bytes to a link is also written, in order (null: nowhere).
  void LogMoves(std::vector<std::pair<uint32_t, double>>* log) { moves_ = log; }
  size_t state_bytes() const;

 private:
  struct alignas(64) Active {  // one cache line
    TaskId task;
    RouteId route;     // the task's (kept here: the program's per-task array is far away)
    double remaining;  // bytes left as of updated_at
    double rate;       // bytes per second
    int64_t updated_at;
    Completion done;  // its completion as things stand (queued)
    bool in_component;
  };
  static_assert(sizeof(Active) == 64);
  std::span<const uint32_t> LinksOf(const Active& f) const { return p_.route_links(f.route); }
  void Mark(std::span<const uint32_t> links);
  void FindComponent(RouteId route);
  // Collects the component when the flows on the route's links are all of it (else false).
  bool CollectStar(RouteId route);
  void Reshare(RouteId route, int64_t now, Due* due);
  // The max-min rates of the component found into rates_ (memoised by its routes).
  void Solve();
  // Sets a flow's rate from `now`; when its completion moves, numbers the move and lists it.
  void SetRate(Active& f, double rate, int64_t now, Due* due);
  // Each of n flows of one route alone on its links gets this rate: the max-min solver's
  // answer for them, without the solver.
  double RouteShare(RouteId route, double n) const;
  // A flow's bytes, credited to one of its links (and logged, LogMoves).
  void Credit(LinkId l, double bytes) {
    (*link_bytes_)[l] += bytes;
    if (moves_) moves_->push_back({l, bytes});
  }

  const Program& p_;
  std::vector<double>* link_bytes_;
  uint64_t* seq_;
  std::vector<Active> active_;
  HugePageVector<int32_t> slot_;  // per task: index in active_, or -1
  MaxMinSolver solver_;
  // The solver's rates for components of up to kMemoFlows flows, by their routes in the order
  // solved (a flow's links and their capacities are its route's): a replay meets the same few
  // components, a pipeline send beside the gradient buckets of its two ranks, again and again.
  static constexpr size_t kMemoFlows = 4;
  struct RouteKey {  // the routes, two to a word (kNone past the component's flows)
    uint64_t lo, hi;
    bool operator==(const RouteKey&) const = default;
    void Set(size_t k, RouteId r) {
      uint64_t& w = k < 2 ? lo : hi;
      const int shift = (k % 2) * 32;
      w = (w & ~(uint64_t{0xffffffff} << shift)) | uint64_t{r} << shift;
    }
  };
  struct RouteKeyHash {
    size_t operator()(const RouteKey& k) const {
      return static_cast<size_t>(k.lo * 0x9E3779B97F4A7C15ull ^ k.hi);
    }
  };
  FlatMap<RouteKey, std::array<double, kMemoFlows>, RouteKeyHash> solved_;
  std::vector<std::span<const uint32_t>> flow_links_;
  std::vector<double> rates_;
  std::vector<char> link_marked_;
  // Per link: the tasks of the active flows that cross it.
  std::vector<std::vector<TaskId>> link_flows_;
  // Active flows per route: a route's links carry only its own flows when each link's count
  // of flows is the route's (every flow of a route is on each of its links).
  std::vector<uint32_t> route_flows_;
  std::vector<uint32_t> component_;
  // Whether the component found is routes each alone on their links (one route, or the
  // neighbours of one whose flows have all ended): their rates need no solver.
  bool apart_ = false;
  std::vector<std::pair<uint32_t, double>>* moves_ = nullptr;
  std::vector<uint32_t> marked_links_;  // the component's links, in order of discovery
};

}  // namespace parasim::sim
