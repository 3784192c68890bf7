#include "sim/lower_bound.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "sim/huge_pages.h"
#include "sim/key_costs.h"
#include "sim/stream_queues.h"

namespace parasim::sim {
namespace {

// Past the longest replay a bound is held just beyond it (the replay itself stops there with an
// error): sums of such times never wrap.
constexpr int64_t kPast = kMaxReplayPs + 1;
int64_t FloorPs(double seconds) {
  if (!(seconds * 1e12 < static_cast<double>(kPast))) return kPast;
  return std::max<int64_t>(0, static_cast<int64_t>(std::floor(seconds * 1e12)) - 1);
}

// A task at its shortest for MakespanLowerBound, in picoseconds: a compute task at its cost; a
// flow at its latency plus its bytes at its route's slowest link, as if alone, whose bytes it
// counts on each link it crosses. Costs are asked once per key, and slowest links once per route.
class ShortestDurations {
 public:
  ShortestDurations(const Program& p, const CostProvider& costs)
      : p_(p), keys_(costs), capacity_(p.link_capacities()), link_bytes_(p.num_links(), 0.0) {}

  int64_t operator()(TaskId t) {
    const uint32_t key = p_.cost_key(t);
    const bool compute = p_.kind(t) == TaskKind::kCompute;
    keys_.Learn(key, compute);
    if (compute) return keys_.duration_ps(key);
    const FlowCost& f = keys_.flow(key);
    const RouteId route = p_.route(t);
    if (route >= slowest_.size()) slowest_.resize(route + 1, -1.0);
    if (slowest_[route] < 0) {
      double slowest = std::numeric_limits<double>::infinity();
      for (LinkId l : p_.route_links(route)) slowest = std::min(slowest, capacity_[l]);
      slowest_[route] = slowest;
    }
    for (LinkId l : p_.route_links(route)) link_bytes_[l] += f.bytes.bytes();
    const double slowest = slowest_[route];
    // Rounded down: the engine's own rounding of a completion is to the nearest picosecond.
    const double move = std::isfinite(slowest) && slowest > 0 ? f.bytes.bytes() / slowest : 0.0;
    return std::min(kPast, f.latency.picoseconds() + FloorPs(move));
  }

  // The busiest link's bytes over its capacity, with the same floor as a flow's: a whole
  // picosecond below, against the engine's rounding.
  int64_t BusiestLinkPs() const {
    double link_s = 0;
    for (size_t l = 0; l < link_bytes_.size(); ++l) {
      if (capacity_[l] > 0) link_s = std::max(link_s, link_bytes_[l] / capacity_[l]);
    }
    return FloorPs(link_s);
  }

 private:
  const Program& p_;
  KeyCosts keys_;
  const std::vector<double>& capacity_;
  std::vector<double> link_bytes_;
  std::vector<double> slowest_;  // per route; -1 until asked
};

// The longest path when task order is topological (Program::deps_in_task_order): one pass, each
// task starting once its dependencies and the task before it on each of its streams are done.
int64_t LongestPathInTaskOrder(const Program& p, ShortestDurations& shortest) {
  const size_t n = p.num_tasks();
  HugePageVector<int64_t> ready(n, 0);  // the latest end among each task's dependencies
  std::vector<int64_t> stream_end(p.num_streams(), 0);
  const auto& extra = p.extra_streams();
  size_t e = 0;
  int64_t makespan = 0;
  for (TaskId t = 0; t < n; ++t) {
    const StreamId st = p.stream(t);
    int64_t start = std::max(ready[t], stream_end[st]);
    const size_t first_extra = e;
    for (; e < extra.size() && extra[e].first == t; ++e) {
      start = std::max(start, stream_end[extra[e].second]);
    }
    const int64_t end = std::min(kPast, start + shortest(t));
    makespan = std::max(makespan, end);
    stream_end[st] = end;
    for (size_t k = first_extra; k < e; ++k) stream_end[extra[k].second] = end;
    for (TaskId s : p.successors(t)) ready[s] = std::max(ready[s], end);
  }
  return makespan;
}

// The longest path for any task order (Kahn's algorithm over the dependencies and the stream
// orders); an error for a cycle.
StatusOr<int64_t> LongestPath(const Program& p, ShortestDurations& shortest) {
  const size_t n = p.num_tasks();
  // The next task on each of a task's streams waits for it, as in the replay's queues: those
  // pairs as rows by task, beside the dependencies.
  std::vector<uint32_t> offset;
  HugePageVector<TaskId> queue;
  BuildStreamQueues(p, &offset, &queue);
  std::vector<uint32_t> waits(n, 0), next_offset(n + 1, 0);
  for (size_t st = 0; st + 1 < offset.size(); ++st) {
    for (uint32_t k = offset[st]; k + 1 < offset[st + 1]; ++k) ++next_offset[queue[k] + 1];
  }
  for (size_t t = 0; t < n; ++t) next_offset[t + 1] += next_offset[t];
  std::vector<TaskId> next(next_offset[n]);
  std::vector<uint32_t> fill(next_offset.begin(), next_offset.end() - 1);
  for (size_t st = 0; st + 1 < offset.size(); ++st) {
    for (uint32_t k = offset[st]; k + 1 < offset[st + 1]; ++k) {
      next[fill[queue[k]]++] = queue[k + 1];
      ++waits[queue[k + 1]];
    }
  }
  for (TaskId t = 0; t < n; ++t) {
    for (TaskId s : p.successors(t)) ++waits[s];
  }
  std::vector<int64_t> ready(n, 0);
  std::vector<TaskId> order;
  order.reserve(n);
  for (TaskId t = 0; t < n; ++t) {
    if (waits[t] == 0) order.push_back(t);
  }
  int64_t makespan = 0;
  auto release = [&](TaskId s, int64_t end) {
    ready[s] = std::max(ready[s], end);
    if (--waits[s] == 0) order.push_back(s);
  };
  for (size_t k = 0; k < order.size(); ++k) {
    const TaskId t = order[k];
    const int64_t end = std::min(kPast, ready[t] + shortest(t));
    makespan = std::max(makespan, end);
    for (uint32_t j = next_offset[t]; j < next_offset[t + 1]; ++j) release(next[j], end);
    for (TaskId s : p.successors(t)) release(s, end);
  }
  if (order.size() != n) {
    return Internal(fmt::format("MakespanLowerBound: {} of {} tasks are on a dependency cycle",
                                n - order.size(), n));
  }
  return makespan;
}

}  // namespace

StatusOr<Duration> MakespanLowerBound(Program& p, const CostProvider& costs) {
  p.Finalize();
  ShortestDurations shortest(p, costs);
  int64_t makespan = 0;
  if (p.deps_in_task_order()) {
    makespan = LongestPathInTaskOrder(p, shortest);
  } else {
    PARASIM_ASSIGN_OR_RETURN(makespan, LongestPath(p, shortest));
  }
  return Duration::Picoseconds(std::max(makespan, shortest.BusiestLinkPs()));
}

}  // namespace parasim::sim
