// The engine against a reference replay written for clarity, not speed, on random programs.
//
// The reference keeps time in seconds (doubles) and, at every step, finds the next instant
// anything finishes by looking at every running task: a kernel's work left at its current rate
// (slowed while a communication task runs on its rank), a flow's latency, a flow's bytes left at
// its max-min fair rate, solved from scratch by water-filling over all flows in flight. It has
// none of the engine's machinery: no event queue, no moves, no components, no memo of rates, no
// inline fast paths. Its answers are continuous in every cost, so the two agree to within the
// engine's rounding of each event to a picosecond, and a fault in that machinery (a flow's
// rate or completion left stale, a kernel not slowed or sped up again, a task started early
// or late) shows as a difference far above it.
#include <doctest/doctest.h>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "sim/engine.h"

namespace parasim::sim {
namespace {

constexpr double kPs = 1e-12;  // seconds per picosecond

// A random program, kept as plain data for the reference beside the engine's Program.
struct Spec {
  struct TaskSpec {
    std::vector<StreamId> streams;  // its own first, then any extra ones
    bool flow = false;
    int64_t duration_ps = 0;  // compute
    double slowdown = 1;      // compute, beside a collective
    int64_t latency_ps = 0;   // flow
    double bytes = 0;         // flow
    std::vector<LinkId> links;
  };
  std::vector<TaskSpec> tasks;
  std::vector<std::vector<TaskId>> succ;
  std::vector<uint32_t> stream_rank;
  std::vector<StreamRole> stream_role;
  std::vector<double> capacity;  // bytes per second, per link
  std::vector<double> rank_slowdown;
  std::vector<MemoryEvent> memory;
};

// Builds a program of `n` tasks over a few ranks, each with compute, communication and other
// streams, and flows over routes of one to three of a handful of shared links. Dependencies run
// from lower task ids to higher ones, as streams do, so the program cannot deadlock.
void RandomProgram(std::mt19937_64& rng, int n, Spec* spec, Program* p, TableCost* cost) {
  auto uniform = [&](double a, double b) { return std::uniform_real_distribution<>(a, b)(rng); };
  auto pick = [&](int k) { return static_cast<int>(rng() % static_cast<uint64_t>(k)); };
  const int ranks = 2 + pick(3);
  for (int r = 0; r < ranks; ++r) {
    const uint32_t rank = p->AddRank(fmt::format("r{}", r));
    const StreamRole roles[] = {StreamRole::kCompute, StreamRole::kCompute,
                                StreamRole::kCommunication, StreamRole::kOther};
    const int streams = 2 + pick(3);
    for (int s = 0; s < streams; ++s) {
      const StreamRole role = s == 0   ? StreamRole::kCompute
                              : s == 1 ? StreamRole::kCommunication
                                       : roles[pick(4)];
      p->AddStream(rank, fmt::format("s{}", s), role);
      spec->stream_rank.push_back(rank);
      spec->stream_role.push_back(role);
    }
    spec->rank_slowdown.push_back(pick(3) == 0 ? uniform(1.0, 1.3) : 1.0);
  }
  const int links = 2 + pick(5);
  for (int l = 0; l < links; ++l) {
    spec->capacity.push_back(uniform(5e9, 50e9));
    p->AddLink(fmt::format("l{}", l), Bandwidth::BytesPerSecond(spec->capacity.back()));
  }
  // A few routes, shared by many flows (the engine keeps state by route).
  std::vector<std::vector<LinkId>> routes;
  std::vector<RouteId> route_ids;
  const int nroutes = 2 + pick(6);
  for (int r = 0; r < nroutes; ++r) {
    std::vector<LinkId> route;
    const int len = 1 + pick(std::min(3, links));
    while (static_cast<int>(route.size()) < len) {
      const LinkId l = static_cast<LinkId>(pick(links));
      if (std::find(route.begin(), route.end(), l) == route.end()) route.push_back(l);
    }
    route_ids.push_back(p->AddRoute(std::span<const LinkId>(route)));
    routes.push_back(route);
  }
  // A few cost keys shared by several tasks, and some tasks with keys of their own.
  std::vector<uint32_t> compute_keys, flow_keys;
  std::vector<std::pair<int64_t, double>> compute_costs;
  std::vector<std::pair<int64_t, double>> flow_costs;
  auto new_compute_key = [&] {
    const int64_t ps = pick(20) == 0 ? 0 : static_cast<int64_t>(uniform(1e6, 5e7));
    const double slow = pick(2) == 0 ? 1.0 : uniform(1.0, 1.5);
    compute_keys.push_back(cost->AddCompute(Duration::Picoseconds(ps), slow));
    compute_costs.push_back({ps, slow});
  };
  auto new_flow_key = [&] {
    const int64_t latency = pick(3) == 0 ? 0 : static_cast<int64_t>(uniform(1e5, 5e6));
    const double bytes = pick(15) == 0 ? 0.0 : uniform(1e3, 4e6);
    flow_keys.push_back(cost->AddFlow({Duration::Picoseconds(latency), Bytes(bytes)}));
    flow_costs.push_back({latency, bytes});
  };
  for (int i = 0; i < 4; ++i) {
    new_compute_key();
    new_flow_key();
  }
  const int nstreams = static_cast<int>(spec->stream_rank.size());
  spec->succ.assign(n, {});
  for (int i = 0; i < n; ++i) {
    Spec::TaskSpec t;
    const StreamId stream = static_cast<StreamId>(pick(nstreams));
    t.streams.push_back(stream);
    // Flows mostly on communication streams, as a lowering places them.
    t.flow = spec->stream_role[stream] == StreamRole::kCompute ? pick(6) == 0 : pick(3) != 0;
    TaskId id;
    if (t.flow) {
      if (pick(3) == 0) new_flow_key();
      const size_t k = static_cast<size_t>(pick(static_cast<int>(flow_keys.size())));
      const int r = pick(nroutes);
      t.latency_ps = flow_costs[k].first;
      t.bytes = flow_costs[k].second;
      t.links = routes[r];
      id = p->AddFlow(stream, flow_keys[k], 0, p->Intern("flow"), route_ids[r]);
    } else {
      if (pick(3) == 0) new_compute_key();
      const size_t k = static_cast<size_t>(pick(static_cast<int>(compute_keys.size())));
      t.duration_ps = compute_costs[k].first;
      t.slowdown = compute_costs[k].second;
      id = p->AddCompute(stream, compute_keys[k], 0, p->Intern("compute"));
    }
    // Now and then a task on a second stream too (a collective in --full mode).
    if (pick(12) == 0) {
      const StreamId extra = static_cast<StreamId>(pick(nstreams));
      if (extra != stream) {
        p->AddStreamToTask(id, extra);
        t.streams.push_back(extra);
      }
    }
    // Dependencies on a few earlier tasks, mostly recent ones.
    const int deps = i == 0 ? 0 : pick(4);
    for (int d = 0; d < deps; ++d) {
      const int back = 1 + pick(std::min(i, pick(2) == 0 ? 8 : i));
      const TaskId before = static_cast<TaskId>(i - back);
      auto& s = spec->succ[before];
      if (std::find(s.begin(), s.end(), id) != s.end()) continue;
      s.push_back(id);
      p->AddDep(before, id);
    }
    // Memory: most often an allocation at the start freed at the end, on any rank.
    if (pick(5) < 2) {
      const uint32_t rank = static_cast<uint32_t>(pick(ranks));
      const double bytes = std::round(uniform(1e6, 1e8));
      const MemoryAt at = pick(4) == 0 ? MemoryAt::kEnd : MemoryAt::kStart;
      p->AddMemory(id, rank, Bytes(bytes), at);
      spec->memory.push_back({id, rank, bytes, at});
      if (at == MemoryAt::kStart && pick(3) != 0) {
        p->AddMemory(id, rank, Bytes(-bytes), MemoryAt::kEnd);
        spec->memory.push_back({id, rank, -bytes, MemoryAt::kEnd});
      }
    }
    spec->tasks.push_back(t);
  }
}

// Bounds on a rank's peak memory from a timeline's start and end times. Changes at the same
// instant may come in any order, so the peak lies between the highest level between instants
// (frees first) and each instant's level before it plus all its allocations (allocations first).
struct PeakBounds {
  std::vector<double> lo, hi;
};
PeakBounds PeakMemoryBounds(const Spec& spec, const Timeline& tl) {
  const size_t ranks = spec.rank_slowdown.size();
  PeakBounds b{std::vector<double>(ranks, 0.0), std::vector<double>(ranks, 0.0)};
  for (uint32_t r = 0; r < ranks; ++r) {
    std::vector<std::pair<Duration, double>> changes;
    for (const MemoryEvent& m : spec.memory) {
      if (m.rank != r) continue;
      changes.push_back({m.at == MemoryAt::kStart ? tl.start[m.task] : tl.end[m.task], m.bytes});
    }
    std::sort(changes.begin(), changes.end());
    double level = 0;
    for (size_t i = 0; i < changes.size();) {
      double up = 0, net = 0;
      size_t j = i;
      for (; j < changes.size() && changes[j].first == changes[i].first; ++j) {
        up += std::max(0.0, changes[j].second);
        net += changes[j].second;
      }
      b.hi[r] = std::max(b.hi[r], level + up);
      level += net;
      b.lo[r] = std::max(b.lo[r], level);
      i = j;
    }
  }
  return b;
}

// Max-min fair rates by water-filling: the link whose capacity left, shared equally among its
// unfrozen flows, is smallest fixes their rate; repeat.
std::vector<double> WaterFill(const std::vector<const std::vector<LinkId>*>& flows,
                              std::vector<double> left) {
  std::vector<double> rate(flows.size(), 0);
  std::vector<char> frozen(flows.size(), 0);
  size_t unfrozen = flows.size();
  while (unfrozen > 0) {
    std::vector<int> count(left.size(), 0);
    for (size_t f = 0; f < flows.size(); ++f) {
      if (!frozen[f]) {
        for (LinkId l : *flows[f]) ++count[l];
      }
    }
    double share = std::numeric_limits<double>::infinity();
    LinkId tight = 0;
    for (LinkId l = 0; l < left.size(); ++l) {
      if (count[l] > 0 && left[l] / count[l] < share) {
        share = left[l] / count[l];
        tight = l;
      }
    }
    for (size_t f = 0; f < flows.size(); ++f) {
      const auto& links = *flows[f];
      if (frozen[f] || std::find(links.begin(), links.end(), tight) == links.end()) continue;
      rate[f] = share;
      frozen[f] = 1;
      --unfrozen;
      for (LinkId l : links) left[l] -= share;
    }
  }
  return rate;
}

struct Reference {
  std::vector<double> start, end, link_bytes, busy;
  double makespan = 0;
};

Reference Replay(const Spec& spec) {
  const size_t n = spec.tasks.size(), ns = spec.stream_rank.size();
  enum State { kWaiting, kRunning, kLatency, kMoving, kDone };
  std::vector<State> state(n, kWaiting);
  std::vector<double> left(n, 0);  // a kernel's seconds of work at full rate; a flow's bytes
  std::vector<double> latency_end(n, 0);
  std::vector<int> deps(n, 0);
  for (const auto& s : spec.succ) {
    for (TaskId t : s) ++deps[t];
  }
  // Each stream runs its tasks one at a time, in task order.
  std::vector<std::vector<TaskId>> queue(ns);
  for (TaskId t = 0; t < n; ++t) {
    for (StreamId s : spec.tasks[t].streams) queue[s].push_back(t);
  }
  std::vector<size_t> head(ns, 0);
  std::vector<int> comm_running(spec.rank_slowdown.size(), 0);
  Reference ref;
  ref.start.assign(n, 0);
  ref.end.assign(n, 0);
  ref.link_bytes.assign(spec.capacity.size(), 0);
  ref.busy.assign(ns, 0);
  double now = 0;
  size_t done = 0;
  auto role = [&](TaskId t) { return spec.stream_role[spec.tasks[t].streams[0]]; };
  auto rank = [&](TaskId t) { return spec.stream_rank[spec.tasks[t].streams[0]]; };
  // How much longer a kernel takes now than its work alone.
  auto factor = [&](TaskId t) {
    const auto& task = spec.tasks[t];
    return role(t) == StreamRole::kCompute && comm_running[rank(t)] > 0 ? task.slowdown : 1.0;
  };
  auto ready = [&](TaskId t) {
    if (state[t] != kWaiting || deps[t] > 0) return false;
    for (StreamId s : spec.tasks[t].streams) {
      if (head[s] >= queue[s].size() || queue[s][head[s]] != t) return false;
    }
    return true;
  };
  auto complete = [&](TaskId t) {
    state[t] = kDone;
    ref.end[t] = now;
    ++done;
    for (TaskId s : spec.succ[t]) --deps[s];
    for (StreamId s : spec.tasks[t].streams) {
      ++head[s];
      ref.busy[s] += ref.end[t] - ref.start[t];
    }
    if (role(t) == StreamRole::kCommunication) --comm_running[rank(t)];
  };
  while (done < n) {
    // Start whatever can start now. Starting a task releases nothing (only an end does), so one
    // pass finds them all; a task that takes no time ends at the next step, at this instant.
    for (TaskId t = 0; t < n; ++t) {
      if (!ready(t)) continue;
      const auto& task = spec.tasks[t];
      ref.start[t] = now;
      if (task.flow) {
        state[t] = kLatency;
        latency_end[t] = now + static_cast<double>(task.latency_ps) * kPs;
      } else {
        state[t] = kRunning;
        double d = static_cast<double>(task.duration_ps) * kPs;
        if (role(t) == StreamRole::kCompute) d *= spec.rank_slowdown[rank(t)];
        left[t] = d;
      }
      if (role(t) == StreamRole::kCommunication) ++comm_running[rank(t)];
    }
    // The flows moving bytes, and their rates.
    std::vector<TaskId> moving;
    std::vector<const std::vector<LinkId>*> routes;
    for (TaskId t = 0; t < n; ++t) {
      if (state[t] == kMoving) {
        moving.push_back(t);
        routes.push_back(&spec.tasks[t].links);
      }
    }
    const std::vector<double> rate = WaterFill(routes, spec.capacity);
    // The next instant anything finishes.
    double next = std::numeric_limits<double>::infinity();
    for (TaskId t = 0; t < n; ++t) {
      if (state[t] == kRunning) next = std::min(next, now + left[t] * factor(t));
      if (state[t] == kLatency) next = std::min(next, latency_end[t]);
    }
    for (size_t i = 0; i < moving.size(); ++i) {
      next = std::min(next, now + left[moving[i]] / rate[i]);
    }
    REQUIRE(std::isfinite(next));
    const double dt = next - now;
    // Everything that finishes at that instant (to within a rounding of it) finishes.
    const double eps = 1e-15 + 1e-12 * next;
    std::vector<TaskId> finished;
    for (TaskId t = 0; t < n; ++t) {
      if (state[t] == kRunning) {
        const double f = factor(t);
        if (now + left[t] * f <= next + eps) {
          finished.push_back(t);
        } else {
          left[t] -= dt / f;
        }
      }
    }
    for (size_t i = 0; i < moving.size(); ++i) {
      const TaskId t = moving[i];
      if (now + left[t] / rate[i] <= next + eps) {
        finished.push_back(t);
      } else {
        left[t] -= rate[i] * dt;
      }
    }
    now = next;
    for (TaskId t = 0; t < n; ++t) {
      if (state[t] != kLatency || latency_end[t] > now + eps) continue;
      const auto& task = spec.tasks[t];
      if (task.bytes <= 0 || task.links.empty()) {
        finished.push_back(t);
        continue;
      }
      state[t] = kMoving;
      left[t] = task.bytes;
      for (LinkId l : task.links) ref.link_bytes[l] += task.bytes;
    }
    for (TaskId t : finished) complete(t);
  }
  ref.makespan = *std::max_element(ref.end.begin(), ref.end.end());
  return ref;
}

TEST_CASE("the engine replays random programs as a plain reference replay does") {
  std::mt19937_64 rng(20261126);
  int flows_shared = 0, slowed = 0;
  for (int trial = 0; trial < 150; ++trial) {
    CAPTURE(trial);
    Spec spec;
    Program p;
    TableCost cost;
    const int n = 20 + static_cast<int>(rng() % 180);
    RandomProgram(rng, n, &spec, &p, &cost);
    RunOptions options;
    options.rank_slowdown = spec.rank_slowdown;
    options.record_memory = trial % 2 == 1;
    Engine engine;
    auto tl = engine.Run(p, cost, options);
    REQUIRE(tl.ok());
    const Reference ref = Replay(spec);
    // Each event's time is rounded to a picosecond; a task's times carry the roundings of the
    // events before it, a few hundred at most here. Tasks last microseconds to milliseconds.
    const double tol = 1e-9 + 1e-9 * ref.makespan;
    for (TaskId t = 0; t < static_cast<TaskId>(n); ++t) {
      CAPTURE(t);
      CHECK(std::abs(tl->start[t].seconds() - ref.start[t]) <= tol);
      CHECK(std::abs(tl->end[t].seconds() - ref.end[t]) <= tol);
    }
    CHECK(std::abs(tl->makespan.seconds() - ref.makespan) <= tol);
    // The bound a sweep prunes with never exceeds the replay (ranks slowed only add to it).
    auto bound = MakespanLowerBound(p, cost);
    REQUIRE(bound.ok());
    CHECK(*bound <= tl->makespan);
    for (LinkId l = 0; l < ref.link_bytes.size(); ++l) {
      CHECK(tl->link_bytes[l] == doctest::Approx(ref.link_bytes[l]).epsilon(1e-12));
    }
    for (StreamId s = 0; s < ref.busy.size(); ++s) {
      CHECK(std::abs(tl->busy[s].seconds() - ref.busy[s]) <= 2 * tol * n);
    }
    // Memory: each rank's peak, and with record_memory its every change in time order.
    const PeakBounds peak = PeakMemoryBounds(spec, *tl);
    for (uint32_t r = 0; r < peak.lo.size(); ++r) {
      CAPTURE(r);
      CHECK(tl->peak_memory[r] >= peak.lo[r]);
      CHECK(tl->peak_memory[r] <= peak.hi[r]);
    }
    if (options.record_memory) {
      CHECK(tl->memory.size() == spec.memory.size());
      std::vector<double> high(peak.lo.size(), 0.0);
      for (size_t i = 0; i < tl->memory.size(); ++i) {
        const MemorySample& m = tl->memory[i];
        if (i > 0) CHECK(m.time >= tl->memory[i - 1].time);
        high[m.rank] = std::max(high[m.rank], m.bytes);
      }
      for (uint32_t r = 0; r < high.size(); ++r) CHECK(high[r] == tl->peak_memory[r]);
    }
    // The critical path: each task started when the one before it on the path ended (what
    // released it), from a task that started at once to the last to finish.
    const auto& path = tl->critical_path;
    REQUIRE(!path.empty());
    CHECK(tl->start[path.front()] == Duration::Zero());
    CHECK(tl->end[path.back()] == tl->makespan);
    for (size_t i = 1; i < path.size(); ++i) CHECK(tl->start[path[i]] == tl->end[path[i - 1]]);
    // What the random programs exercised, so that a generator that stopped producing shared
    // links or slowed kernels fails here rather than passing on easy programs.
    for (TaskId a = 0; a < static_cast<TaskId>(n); ++a) {
      const auto& ta = spec.tasks[a];
      if (!ta.flow || ta.bytes <= 0) continue;
      for (TaskId b = a + 1; b < static_cast<TaskId>(n); ++b) {
        const auto& tb = spec.tasks[b];
        if (!tb.flow || tb.bytes <= 0 || ref.start[b] >= ref.end[a] || ref.start[a] >= ref.end[b]) {
          continue;
        }
        for (LinkId l : ta.links) {
          if (std::find(tb.links.begin(), tb.links.end(), l) != tb.links.end()) {
            ++flows_shared;
            break;
          }
        }
      }
    }
    for (TaskId t = 0; t < static_cast<TaskId>(n); ++t) {
      const auto& task = spec.tasks[t];
      if (task.flow || task.slowdown == 1.0 || task.duration_ps == 0) continue;
      if (spec.stream_role[task.streams[0]] != StreamRole::kCompute) continue;
      const double alone = static_cast<double>(task.duration_ps) * kPs *
                           spec.rank_slowdown[spec.stream_rank[task.streams[0]]];
      if (ref.end[t] - ref.start[t] > alone * (1 + 1e-6)) ++slowed;
    }
  }
  CHECK(flows_shared > 1000);
  CHECK(slowed > 200);
}

}  // namespace
}  // namespace parasim::sim
