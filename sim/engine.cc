#include "sim/engine.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <queue>

#include "sim/maxmin.h"

namespace parasim::sim {
namespace {

enum class EventType : uint8_t { kComplete, kFlowBegin, kFlowDone };

struct Event {
  int64_t time;
  uint64_t seq;
  TaskId task;
  EventType type;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

}  // namespace

double Timeline::LinkUtilisation(const Program& p, LinkId l) const {
  double cap = p.link_capacity(l) * makespan.seconds();
  return cap > 0 ? link_bytes[l] / cap : 0.0;
}

StatusOr<Timeline> Engine::Run(Program& p, const CostProvider& costs, RunOptions options) {
  p.Finalize();
  const size_t n = p.num_tasks();
  Timeline tl;
  tl.start.assign(n, Duration::Zero());
  tl.end.assign(n, Duration::Zero());
  tl.peak_memory.assign(p.num_ranks(), 0.0);
  tl.peak_time.assign(p.num_ranks(), Duration::Zero());
  tl.busy.assign(p.num_streams(), Duration::Zero());
  tl.link_bytes.assign(p.num_links(), 0.0);

  // Durations, asked once per distinct cost key.
  std::vector<int64_t> key_duration;
  std::vector<FlowCost> key_flow;
  std::vector<uint8_t> key_known;
  auto ensure_key = [&](uint32_t key) {
    if (key >= key_known.size()) {
      key_known.resize(key + 1, 0);
      key_duration.resize(key + 1, 0);
      key_flow.resize(key + 1);
    }
  };

  // Remaining dependencies and stream heads.
  std::vector<uint32_t> deps(n, 0);
  for (TaskId t = 0; t < n; ++t) {
    for (TaskId s : p.successors(t)) ++deps[s];
  }
  std::vector<uint8_t> streams_needed(n, 1);
  std::vector<uint8_t> heads_held(n, 0);
  const auto& extra = p.extra_streams();
  for (const auto& [t, s] : extra) ++streams_needed[t];
  // Stream queues in issue order (compressed rows).
  const size_t ns = p.num_streams();
  std::vector<uint32_t> q_offset(ns + 1, 0);
  for (TaskId t = 0; t < n; ++t) ++q_offset[p.stream(t) + 1];
  for (const auto& [t, s] : extra) ++q_offset[s + 1];
  for (size_t s = 0; s < ns; ++s) q_offset[s + 1] += q_offset[s];
  std::vector<TaskId> queue(q_offset[ns]);
  {
    std::vector<uint32_t> fill(q_offset.begin(), q_offset.end() - 1);
    size_t e = 0;
    for (TaskId t = 0; t < n; ++t) {
      queue[fill[p.stream(t)]++] = t;
      while (e < extra.size() && extra[e].first == t) {
        queue[fill[extra[e].second]++] = t;
        ++e;
      }
    }
  }
  std::vector<uint32_t> head(q_offset.begin(), q_offset.end() - 1);
  std::vector<TaskId> stream_last(ns, kNone);
  // The task whose completion released each task last (dependency or stream predecessor):
  // events come in time order, so the last release is the one that set the start time.
  std::vector<TaskId> enabler(options.critical_path ? n : 0, kNone);

  // Memory events index (sorted by task at Finalize).
  const auto& mem = p.memory_events();
  std::vector<double> mem_now(p.num_ranks(), 0.0);
  std::vector<uint8_t> has_memory(n, 0);
  for (const auto& m : mem) has_memory[m.task] = 1;

  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  uint64_t seq = 0;
  size_t done = 0;
  int64_t now = 0;

  // Active flows.
  struct Active {
    TaskId task;
    double remaining;  // bytes left as of updated_at
    double rate;       // bytes per second
    int64_t done_at;   // the completion event that is current; older ones are stale
    int64_t updated_at;
    bool in_component;
  };
  std::vector<Active> active;
  MaxMinSolver solver;
  std::vector<std::span<const uint32_t>> flow_links;
  std::vector<double> rates;

  auto apply_memory = [&](TaskId t, MemoryAt at) {
    if (!has_memory[t]) return;
    auto it = std::lower_bound(mem.begin(), mem.end(), t,
                               [](const MemoryEvent& m, TaskId x) { return m.task < x; });
    for (; it != mem.end() && it->task == t; ++it) {
      if (it->at != at) continue;
      double& cur = mem_now[it->rank];
      cur += it->bytes;
      if (cur > tl.peak_memory[it->rank]) {
        tl.peak_memory[it->rank] = cur;
        tl.peak_time[it->rank] = Duration::Picoseconds(now);
      }
      if (options.record_memory) tl.memory.push_back({Duration::Picoseconds(now), it->rank, cur});
    }
  };

  // Re-shares bandwidth among the flows connected (through shared links) to `route`: only their
  // rates can change when a flow on `route` starts or ends.
  std::vector<char> link_marked(p.num_links(), 0);
  std::vector<uint32_t> component;
  std::vector<uint32_t> marked_links;
  auto reshare = [&](RouteId route) {
    component.clear();
    marked_links.clear();
    for (LinkId l : p.route_links(route)) {
      if (!link_marked[l]) {
        link_marked[l] = 1;
        marked_links.push_back(l);
      }
    }
    for (bool grew = true; grew;) {
      grew = false;
      for (uint32_t i = 0; i < active.size(); ++i) {
        if (active[i].in_component) continue;
        bool touches = false;
        for (LinkId l : p.route_links(p.route(active[i].task))) touches |= link_marked[l] != 0;
        if (!touches) continue;
        active[i].in_component = true;
        component.push_back(i);
        grew = true;
        for (LinkId l : p.route_links(p.route(active[i].task))) {
          if (!link_marked[l]) {
            link_marked[l] = 1;
            marked_links.push_back(l);
          }
        }
      }
    }
    for (LinkId l : marked_links) link_marked[l] = 0;
    flow_links.clear();
    for (uint32_t i : component) {
      Active& f = active[i];
      f.in_component = false;
      // Bring progress up to `now` at the old rate.
      const double dt = static_cast<double>(now - f.updated_at) * 1e-12;
      double moved = std::min(f.remaining, f.rate * dt);
      f.remaining -= moved;
      f.updated_at = now;
      for (LinkId l : p.route_links(p.route(f.task))) tl.link_bytes[l] += moved;
      flow_links.push_back(p.route_links(p.route(f.task)));
    }
    if (component.empty()) return;
    solver.Solve(flow_links, p.link_capacities(), &rates);
    for (size_t k = 0; k < component.size(); ++k) {
      Active& f = active[component[k]];
      f.rate = rates[k];
      double secs = f.rate > 0 ? f.remaining / f.rate : std::numeric_limits<double>::infinity();
      int64_t at = secs >= 9e6 ? std::numeric_limits<int64_t>::max() / 2
                               : now + static_cast<int64_t>(std::llround(secs * 1e12));
      if (at == f.done_at) continue;  // unchanged: the pending event stays valid
      f.done_at = at;
      events.push(Event{at, seq++, f.task, EventType::kFlowDone});
    }
  };

  auto start = [&](TaskId t) {
    tl.start[t] = Duration::Picoseconds(now);
    apply_memory(t, MemoryAt::kStart);
    const uint32_t key = p.cost_key(t);
    ensure_key(key);
    if (!key_known[key]) {
      if (p.kind(t) == TaskKind::kCompute) {
        key_duration[key] = costs.ComputeDuration(key).picoseconds();
      } else {
        key_flow[key] = costs.Flow(key);
      }
      key_known[key] = 1;
    }
    if (p.kind(t) == TaskKind::kCompute) {
      events.push(Event{now + key_duration[key], seq++, t, EventType::kComplete});
    } else {
      events.push(
          Event{now + key_flow[key].latency.picoseconds(), seq++, t, EventType::kFlowBegin});
    }
  };

  // A task starts when its dependencies are done and it heads every stream it needs.
  std::vector<TaskId> ready;
  auto try_start = [&](TaskId t, TaskId trigger) {
    if (deps[t] == 0 && heads_held[t] == streams_needed[t]) {
      ready.push_back(t);
      if (options.critical_path) enabler[t] = trigger;
    }
  };
  auto take_head = [&](StreamId s) {
    if (head[s] < q_offset[s + 1]) {
      TaskId h = queue[head[s]];
      ++heads_held[h];
      try_start(h, stream_last[s]);
    }
  };
  for (StreamId s = 0; s < ns; ++s) take_head(s);
  auto drain_ready = [&]() {
    // Start in task order for determinism.
    std::sort(ready.begin(), ready.end());
    for (TaskId t : ready) start(t);
    ready.clear();
  };
  drain_ready();

  auto release_stream = [&](StreamId s, TaskId t) {
    tl.busy[s] += tl.end[t] - tl.start[t];
    stream_last[s] = t;
    ++head[s];
    take_head(s);
  };

  auto complete = [&](TaskId t) {
    tl.end[t] = Duration::Picoseconds(now);
    apply_memory(t, MemoryAt::kEnd);
    ++done;
    for (TaskId s : p.successors(t)) {
      --deps[s];
      try_start(s, t);
    }
    release_stream(p.stream(t), t);
    if (streams_needed[t] > 1) {
      auto it = std::lower_bound(extra.begin(), extra.end(), std::make_pair(t, StreamId{0}));
      for (; it != extra.end() && it->first == t; ++it) release_stream(it->second, t);
    }
  };

  while (!events.empty()) {
    Event e = events.top();
    events.pop();
    now = e.time;
    ++tl.events;
    switch (e.type) {
      case EventType::kComplete:
        complete(e.task);
        break;
      case EventType::kFlowBegin: {
        const FlowCost& fc = key_flow[p.cost_key(e.task)];
        if (fc.bytes.bytes() <= 0 || p.route_links(p.route(e.task)).empty()) {
          complete(e.task);
          break;
        }
        active.push_back(Active{e.task, fc.bytes.bytes(), 0.0, -1, now, false});
        reshare(p.route(e.task));
        break;
      }
      case EventType::kFlowDone: {
        auto it = std::find_if(active.begin(), active.end(),
                               [&](const Active& a) { return a.task == e.task; });
        if (it == active.end() || it->done_at != e.time) break;  // superseded by a re-share
        {
          const double dt = static_cast<double>(now - it->updated_at) * 1e-12;
          double moved = std::min(it->remaining, it->rate * dt);
          for (LinkId l : p.route_links(p.route(it->task))) tl.link_bytes[l] += moved;
        }
        *it = active.back();
        active.pop_back();
        reshare(p.route(e.task));
        complete(e.task);
        break;
      }
    }
    // Tasks released by this event start now, in task order.
    drain_ready();
  }

  if (done != n) {
    Status cyc = p.Validate();
    if (!cyc.ok()) return cyc;
    for (TaskId t = 0; t < n; ++t) {
      if (tl.end[t] == Duration::Zero() && deps[t] == 0 && heads_held[t] < streams_needed[t]) {
        return InvalidArgument(fmt::format(
            "deadlock: task {} ('{}' on {}/{}) is ready but waits behind another task in its "
            "stream order; {} of {} tasks finished",
            t, p.label_text(p.label(t)), p.rank_name(p.stream_rank(p.stream(t))),
            p.stream_name(p.stream(t)), done, n));
      }
    }
    return InvalidArgument(fmt::format("deadlock: {} of {} tasks finished", done, n));
  }

  tl.makespan = Duration::Zero();
  TaskId last = kNone;
  for (TaskId t = 0; t < n; ++t) {
    if (last == kNone || tl.end[t] > tl.makespan) {
      tl.makespan = tl.end[t];
      last = t;
    }
  }
  if (options.critical_path && last != kNone) {
    for (TaskId t = last; t != kNone; t = enabler[t]) tl.critical_path.push_back(t);
    std::reverse(tl.critical_path.begin(), tl.critical_path.end());
  }
  auto cap = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  tl.state_bytes = cap(deps) + cap(streams_needed) + cap(heads_held) + cap(q_offset) + cap(queue) +
                   cap(head) + cap(stream_last) + cap(enabler) + cap(tl.start) + cap(tl.end) +
                   cap(key_duration) + cap(key_flow) + cap(key_known) + cap(has_memory);
  return tl;
}

}  // namespace parasim::sim
