#include "sim/steady_state.h"

#include <cstring>
#include <limits>

namespace parasim::sim {
namespace {

// A state may repeat only after several anchors: Llama 3 405B at PP64 1F1B with two one-layer
// stages repeats every 62 micro-batches, not every one. The replay keeps the hashes of that
// many recent states (a deque of this length; 128 anchors cover 2p for every pipeline up to
// PP64), and gives up after this many anchors beyond it without a repeat (a zero-bubble PP64
// schedule settles after 63).
constexpr uint32_t kMaxLag = 128;
constexpr int kAttempts = 12;
// How many anchors in a row a frontier may grow before the replay takes it for a backlog that
// never ends: a host running ahead of its GPU fills its launch queue over that many periods
// before its state repeats (Llama 2 7B, PP4, zb-h1 at op granularity: 12-15 anchors).
constexpr int kGrowingAnchors = 2 * kAttempts;

int64_t Bits(double x) {
  int64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

}  // namespace

SteadyState::SteadyState(ReplayState* state, const RunOptions& options)
    : s_(*state),
      n_(state->p.num_tasks()),
      given_(options.shift),
      anchors_(options.anchors),
      critical_path_(options.critical_path) {
  looking_ = options.shift != nullptr && options.anchors != nullptr &&
             options.shift->size() == n_ && !options.anchors->empty() && !options.record_memory &&
             s_.p.extra_streams().empty();
  if (!looking_) return;
  shift_ = options.shift;
  mark_.assign(n_, 0);
  s_.flows.LogMoves(&moves_);
  busy_then_ = s_.tl.busy;
}

void SteadyState::AtAnchor() {
  due_ = false;
  if (skip_ > 0) {  // inside a lengthened period: its tasks and moves go on adding up
    --skip_;
    return;
  }
  Snapshot cur;
  TakeSnapshot(&cur);
  if (Repeats(&cur)) {
    uint64_t periods = Reach(prev_);
    // No further than the longest replay (kMaxReplayPs): times placed past it could wrap; the
    // replay goes on to its end there and is refused.
    const int64_t period = cur.time - prev_.time;
    if (period > 0) {
      periods = std::min<uint64_t>(
          periods, static_cast<uint64_t>(std::max<int64_t>(0, kMaxReplayPs - s_.now) / period));
    }
    if (periods > 0) {
      Jump(periods, period);
      StopLooking();  // one jump: the rest of the step is the drain, replayed
      return;
    }
  }
  if (lag_ > 1) {  // the lengthened period did not hold
    StopLooking();
    return;
  }
  // Has the state come back after more than one anchor? The period is then that many; the
  // replay takes this state as the start of one and compares at its end, as above.
  const uint32_t lag = RepeatLag(cur);
  if (lag > 1 && LengthenPeriod(lag)) {
    skip_ = lag - 1;
  } else if (have_prev_ &&
             (++failed_ >= kAttempts + static_cast<int>(kMaxLag) || growing_ >= kGrowingAnchors)) {
    // A state that has not repeated within a few periods past the longest the replay looks
    // for will not: the snapshots stop costing.
    StopLooking();
    return;
  }
  BeginPeriod(std::move(cur));
}

void SteadyState::TakeSnapshot(Snapshot* snap) {
  const int64_t T = s_.now;
  snap->time = T;
  snap->nums.clear();
  snap->tasks.clear();
  auto& nums = snap->nums;
  auto& tasks = snap->tasks;
  // Sequence numbers only order events: each is written as its rank among those in the state.
  std::vector<uint32_t> seqs;
  std::vector<Event> events(s_.events.items().begin(), s_.events.items().end());
  std::sort(events.begin(), events.end());
  for (const Event& e : events) seqs.push_back(e.seq());
  auto completion_seqs = [&](const Completion& c) { seqs.push_back(c.seq); };
  for (const Running& r : s_.running) {
    if (r.task != kNone) completion_seqs(r.done);
  }
  const std::vector<FlowNetwork::State> flows = s_.flows.States();
  for (const auto& f : flows) completion_seqs(f.done);
  std::sort(seqs.begin(), seqs.end());
  seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
  auto rank = [&](uint32_t q) {
    return static_cast<int64_t>(std::lower_bound(seqs.begin(), seqs.end(), q) - seqs.begin());
  };
  auto completion = [&](const Completion& c) {
    nums.push_back(c.due - T);
    nums.push_back(rank(c.seq));
  };
  // A started task: when it started, and what released it.
  auto started = [&](TaskId t) {
    tasks.push_back(t);
    nums.push_back(s_.tl.start[t].picoseconds() - T);
    tasks.push_back(critical_path_ ? s_.enabler[t] : kNone);
  };
  nums.push_back(static_cast<int64_t>(events.size()));
  for (const Event& e : events) {
    nums.push_back(e.time - T);
    nums.push_back(static_cast<int64_t>(e.type()));
    nums.push_back(rank(e.seq()));
    started(e.task());
  }
  for (const Running& r : s_.running) {
    if (r.task == kNone) {
      nums.push_back(-1);
      continue;
    }
    started(r.task);
    nums.push_back(r.since - T);
    nums.push_back(Bits(r.left));
    nums.push_back(Bits(r.factor));
    completion(r.done);
  }
  for (StreamId st = 0; st < s_.head.size(); ++st) {
    tasks.push_back(s_.Head(st));
    tasks.push_back(s_.stream_last[st]);
  }
  for (uint32_t c : s_.comm_running) nums.push_back(c);
  // Tasks some of whose dependencies or streams are done, not started: how many they wait for.
  size_t kept = 0;
  for (TaskId t : frontier_) {
    if (mark_[t] == 1) frontier_[kept++] = t;
  }
  frontier_.resize(kept);
  snap->waits.clear();
  for (TaskId t : frontier_) snap->waits.push_back({t, s_.waiting[t]});
  for (double level : s_.memory.levels()) nums.push_back(Bits(level));
  nums.push_back(static_cast<int64_t>(flows.size()));
  for (const auto& f : flows) {
    started(f.task);
    nums.push_back(Bits(f.remaining));
    nums.push_back(Bits(f.rate));
    nums.push_back(f.updated_at - T);
    completion(f.done);
  }
}

uint64_t SteadyState::Hash(const Snapshot& s) {
  // splitmix64's finaliser over the state's numbers and sizes (not its task ids, which move).
  auto mix = [](uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    return h;
  };
  // The frontier's counts are left out: an accumulator's fall each period.
  uint64_t h = mix(s.tasks.size(), s.waits.size());
  for (int64_t x : s.nums) h = mix(h, static_cast<uint64_t>(x));
  return h;
}

bool SteadyState::LengthenPeriod(uint32_t lag) {
  // shift^lag along each chain t, shift[t], shift[shift[t]], ... from the tasks nothing
  // shifts to; a shift that sends two tasks to one has no such chains.
  const HugePageVector<TaskId>& sh = *given_;
  std::vector<uint8_t> has_pred(n_, 0);
  for (TaskId t = 0; t < n_; ++t) {
    const TaskId u = sh[t];
    if (u == kNone) continue;
    if (u >= n_ || has_pred[u]) return false;
    has_pred[u] = 1;
  }
  composed_.assign(n_, kNone);
  std::vector<TaskId> chain;
  for (TaskId t = 0; t < n_; ++t) {
    if (has_pred[t] || sh[t] == kNone) continue;
    chain.clear();
    for (TaskId x = t; x != kNone; x = sh[x]) chain.push_back(x);
    for (size_t i = 0; i + lag < chain.size(); ++i) composed_[chain[i]] = chain[i + lag];
  }
  shift_ = &composed_;
  lag_ = lag;
  chain_.clear();
  return true;
}

bool SteadyState::Repeats(Snapshot* cur) {
  if (!have_prev_ || cur->nums != prev_.nums || cur->tasks.size() != prev_.tasks.size() ||
      cur->time <= prev_.time) {
    return false;
  }
  std::sort(cur->waits.begin(), cur->waits.end());
  std::sort(prev_.waits.begin(), prev_.waits.end());
  // Each task of the state is its predecessor's by shift, or, where that has none, the same
  // task, which the period did not start or finish (a stream's head waiting for the step's
  // end, say). Such a task may wait for fewer things each period, by as many every period
  // (the step's last reduction, counting one per micro-batch): an accumulator.
  std::vector<TaskId> period(started_);
  period.insert(period.end(), completed_.begin(), completed_.end());
  std::sort(period.begin(), period.end());
  static_.clear();
  accumulators_.clear();
  const bool same = SameTasks(*cur, period) && SameWaits(*cur, period);
  std::sort(static_.begin(), static_.end());
  static_.erase(std::unique(static_.begin(), static_.end()), static_.end());
  return same;
}

TaskId SteadyState::Expect(TaskId a, const std::vector<TaskId>& period, bool* same) {
  if (a == kNone) return kNone;
  const TaskId b = (*shift_)[a];
  if (b != kNone) return b;
  if (std::binary_search(period.begin(), period.end(), a)) *same = false;
  static_.push_back(a);
  return a;
}

bool SteadyState::SameTasks(const Snapshot& cur, const std::vector<TaskId>& period) {
  // Each task in place. A task left alone need only be the same task here: whether the period
  // started or finished it is not asked of the state's tasks (it was not when the comparison
  // was one function), only of the frontier's (SameWaits).
  bool same = true;
  for (size_t i = 0; i < cur.tasks.size() && same; ++i) {
    bool unasked = true;
    same = Expect(prev_.tasks[i], period, &unasked) == cur.tasks[i];
  }
  return same;
}

bool SteadyState::SameWaits(const Snapshot& cur, const std::vector<TaskId>& period) {
  if (cur.waits.size() != prev_.waits.size()) return false;
  bool same = true;
  std::vector<std::pair<TaskId, uint32_t>> moved;
  for (const auto& [t, w] : prev_.waits) {
    const TaskId to = Expect(t, period, &same);
    if (to != t) {
      moved.push_back({to, w});
      continue;
    }
    auto it = std::lower_bound(cur.waits.begin(), cur.waits.end(), std::pair{t, 0u});
    if (it == cur.waits.end() || it->first != t || it->second > w) return false;
    if (it->second < w) accumulators_.push_back({t, it->second, w - it->second});
    moved.push_back(*it);
  }
  std::sort(moved.begin(), moved.end());
  return same && moved == cur.waits;
}

uint32_t SteadyState::RepeatLag(const Snapshot& cur) {
  const uint64_t h = Hash(cur);
  uint32_t lag = 0;  // the nearest match but the last state's (compared above)
  for (size_t k = 2; k <= seen_.size() && lag == 0; ++k) {
    if (seen_[seen_.size() - k] == h) lag = static_cast<uint32_t>(k);
  }
  seen_.push_back(h);
  if (seen_.size() > kMaxLag) seen_.pop_front();
  // A frontier longer than ever before, anchor after anchor, is a backlog that grows each
  // period (a data-parallel stream slower than the micro-batches that feed it): no state of
  // it comes back.
  growing_ = cur.waits.size() > longest_ ? growing_ + 1 : 0;
  longest_ = std::max(longest_, cur.waits.size());
  return lag;
}

void SteadyState::BeginPeriod(Snapshot cur) {
  prev_ = std::move(cur);
  have_prev_ = true;
  started_.clear();
  completed_.clear();
  period_touched_.clear();
  moves_.clear();
  batches_.clear();
  events_then_ = s_.tl.events;
  moves_then_ = s_.tl.moves;
  busy_then_ = s_.tl.busy;
}

void SteadyState::BuildChains() {
  // A task has the shape of its successor by shift u when they match in cost, stream, kind,
  // route, category, label and memory events; u's dependencies are t's moved by shift; u's
  // next task on its stream is t's next moved by shift; and every task t waits for has such a
  // successor, so that u waits for exactly their successors.
  //
  // One pass over every task: the arrays are read through local pointers, which the stores to
  // byte arrays below cannot alias (through the members, each such store made the compiler
  // load every array's address again).
  const size_t n = n_;
  const TaskId* const sh = shift_->data();
  const Program::Columns c = s_.p.columns();
  // Each task's next on its stream (a periodic replay has no task on extra streams).
  HugePageVector<TaskId> next(n, kNone);
  const uint32_t* const q = s_.queue.data();
  for (size_t st = 0; st + 1 < s_.q_offset.size(); ++st) {
    for (uint32_t k = s_.q_offset[st]; k + 1 < s_.q_offset[st + 1]; ++k) next[q[k]] = q[k + 1];
  }
  // Each task's memory events: [mem_first[t], mem_first[t + 1]) of the sorted list.
  const MemoryEvent* const mem = s_.p.memory_events().data();
  const size_t num_mem = s_.p.memory_events().size();
  HugePageVector<uint32_t> mem_first(n + 1, 0);
  for (size_t i = 0; i < num_mem; ++i) ++mem_first[mem[i].task + 1];
  for (size_t t = 0; t < n; ++t) mem_first[t + 1] += mem_first[t];
  // Per task: 1 when it has its successor's shape; 0 where a task it waits for has not.
  HugePageVector<uint8_t> shape(n, 0), waits_ok(n, 1);
  HugePageVector<uint32_t> indeg(n, 0);
  std::vector<TaskId> a, b;
  auto moved = [sh](TaskId x) { return sh[x] != kNone ? sh[x] : x; };
  for (TaskId t = 0; t < n; ++t) {
    const TaskId u = sh[t];
    if (u == kNone || u <= t || u >= n) continue;
    if (!(c.task[u] == c.task[t]) || c.category[u] != c.category[t]) continue;
    const TaskId nt = next[t];
    if (nt == kNone || sh[nt] == kNone || sh[nt] != next[u]) continue;
    const TaskId* const st = c.succ + c.succ_offset[t];
    const TaskId* const su = c.succ + c.succ_offset[u];
    const uint32_t ns = c.succ_offset[t + 1] - c.succ_offset[t];
    if (ns != c.succ_offset[u + 1] - c.succ_offset[u]) continue;
    // The lowering adds a unit's dependencies in the same order each time: compared in place
    // first, as sets when that fails.
    // A dependant without a successor by shift (the step's last reduction, say) is the same
    // task for u: it then counts one more done each period (an accumulator, AtAnchor).
    bool in_place = true;
    for (uint32_t i = 0; i < ns; ++i) in_place &= moved(st[i]) == su[i];
    if (!in_place) {
      a.clear();
      for (uint32_t i = 0; i < ns; ++i) a.push_back(moved(st[i]));
      b.assign(su, su + ns);
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (a != b) continue;
    }
    const uint32_t t0 = mem_first[t], t1 = mem_first[t + 1], u0 = mem_first[u];
    if (t1 - t0 != mem_first[u + 1] - u0) continue;
    bool same_mem = true;
    for (uint32_t i = t0, j = u0; i != t1; ++i, ++j) {
      same_mem &=
          mem[i].rank == mem[j].rank && mem[i].bytes == mem[j].bytes && mem[i].at == mem[j].at;
    }
    shape[t] = same_mem ? 1 : 0;
  }
  // Waits: every dependency of t has the shape, and u waits for as many.
  for (TaskId x = 0; x < n; ++x) {
    const uint8_t ok = shape[x];
    for (uint32_t i = c.succ_offset[x], e = c.succ_offset[x + 1]; i != e; ++i) {
      const TaskId y = c.succ[i];
      ++indeg[y];
      waits_ok[y] &= ok;
    }
  }
  chain_.assign(n, 0);
  uint32_t* const chain = chain_.data();
  for (TaskId t = static_cast<TaskId>(n); t-- > 0;) {
    if (!shape[t] || !waits_ok[t] || indeg[t] != indeg[sh[t]]) continue;
    const uint32_t rest = chain[sh[t]];
    chain[t] = rest == std::numeric_limits<uint32_t>::max() ? rest : rest + 1;
  }
}

uint64_t SteadyState::Reach(const Snapshot& prev) {
  if (chain_.empty()) BuildChains();
  // Each period ahead is the last one moved by shift once more: every task it touched must have
  // the shape of its successor that many times over, and the shift must keep their order
  // (tasks released at once start in task order).
  auto moving = [&](TaskId t) {
    return t != kNone && !std::binary_search(static_.begin(), static_.end(), t);
  };
  uint64_t periods = std::numeric_limits<uint64_t>::max();
  bool touched = false;
  for (const std::vector<TaskId>* v : {&started_, &completed_, &period_touched_}) {
    for (TaskId t : *v) {
      if (!moving(t)) continue;
      touched = true;
      periods = std::min<uint64_t>(periods, chain_[t]);
    }
  }
  // The tasks of the state it started from are moved once more than the period's.
  auto moved_once_more = [&](TaskId t) {
    if (moving(t)) periods = std::min<uint64_t>(periods, chain_[t] == 0 ? 0 : chain_[t] - 1);
  };
  for (TaskId t : prev.tasks) moved_once_more(t);
  for (const auto& [t, w] : prev.waits) moved_once_more(t);
  // An accumulator must still wait for something after the last period placed.
  for (const auto& [t, w, fewer] : accumulators_) {
    periods = std::min<uint64_t>(periods, (w - 1) / fewer);
  }
  if (periods == 0 || !touched) return 0;
  const HugePageVector<TaskId>& sh = *shift_;
  std::vector<TaskId> at = batches_;
  for (uint64_t j = 1; j <= periods; ++j) {
    for (TaskId& t : at) {
      if (t != kNone) t = sh[t];
    }
    for (size_t i = 1; i < at.size(); ++i) {
      if (at[i - 1] != kNone && at[i] != kNone && at[i - 1] >= at[i]) return j - 1;
    }
  }
  return periods;
}

void SteadyState::Jump(uint64_t periods, int64_t period) {
  // Place the periods' tasks from the last one's (each one later by a period, its parts
  // played by the tasks the shift gives), then move the state as many periods on.
  std::vector<std::pair<TaskId, uint32_t>> waits;  // the frontier now, before the placing
  for (TaskId t : frontier_) {
    if (mark_[t] == 1) waits.push_back({t, s_.waiting[t]});
  }
  PlacePeriods(periods, period);
  AddUpPeriods(periods);
  MoveState(periods, static_cast<int64_t>(periods) * period, waits);
}

void SteadyState::PlacePeriods(uint64_t periods, int64_t period) {
  std::vector<TaskId> s_at(started_), c_at(completed_);
  std::vector<TaskId> enabler_at;
  if (critical_path_) {
    for (TaskId t : started_) enabler_at.push_back(s_.enabler[t]);
  }
  // Through local pointers: the stores to mark_ (bytes) would otherwise make the compiler load
  // every array's address again for each task placed.
  const TaskId* const shp = shift_->data();
  Duration* const start = s_.tl.start.data();
  Duration* const end = s_.tl.end.data();
  uint32_t* const waiting = s_.waiting.data();
  TaskId* const enabler = s_.enabler.data();
  uint8_t* const mark = mark_.data();
  const TaskId* const started = started_.data();
  const TaskId* const completed = completed_.data();
  const size_t ns = s_at.size(), nc = c_at.size();
  const bool critical = critical_path_;
  for (uint64_t j = 1; j <= periods; ++j) {
    const int64_t off = static_cast<int64_t>(j) * period;
    for (size_t i = 0; i < ns; ++i) {
      const TaskId to = shp[s_at[i]];
      start[to] = Duration::Picoseconds(start[started[i]].picoseconds() + off);
      waiting[to] = EventQueue::kAbsent;  // started: no event (Retrack places those queued)
      mark[to] = 2;
      if (critical) {
        if (enabler_at[i] != kNone) enabler_at[i] = shp[enabler_at[i]];
        enabler[to] = enabler_at[i];
      }
      s_at[i] = to;
    }
    for (size_t i = 0; i < nc; ++i) {
      const TaskId to = shp[c_at[i]];
      end[to] = Duration::Picoseconds(end[completed[i]].picoseconds() + off);
      c_at[i] = to;
    }
    for (const auto& [l, moved] : moves_) s_.tl.link_bytes[l] += moved;
  }
}

void SteadyState::AddUpPeriods(uint64_t periods) {
  Timeline& tl = s_.tl;
  for (StreamId st = 0; st < tl.busy.size(); ++st) {
    const int64_t per = (tl.busy[st] - busy_then_[st]).picoseconds();
    tl.busy[st] =
        Duration::Picoseconds(tl.busy[st].picoseconds() + per * static_cast<int64_t>(periods));
  }
  tl.events += (tl.events - events_then_) * periods;
  tl.moves += (tl.moves - moves_then_) * periods;
  s_.done += completed_.size() * periods;
  tl.jumped_tasks += started_.size() * periods;
  tl.period_anchors = lag_;
}

void SteadyState::MoveState(uint64_t periods, int64_t dt,
                            const std::vector<std::pair<TaskId, uint32_t>>& waits) {
  // The state: tasks waiting part-way, events, what runs, stream heads, flows.
  const uint64_t J = periods;
  for (const auto& [t, w] : waits) {
    const TaskId to = ShiftBy(t, J);
    s_.waiting[to] = w;
    if (mark_[to] == 0) {
      mark_[to] = 1;
      frontier_.push_back(to);
    }
  }
  for (const auto& [t, w, fewer] : accumulators_) {
    s_.waiting[t] = w - fewer * static_cast<uint32_t>(J);
  }
  std::vector<TaskId> before;
  for (const Event& e : s_.events.items()) before.push_back(e.task());
  for (Event& e : s_.events.items()) {
    e.time += dt;
    e.packed = (e.packed & ~(uint64_t{kMaxTasks - 1} << 2)) | (uint64_t{ShiftBy(e.task(), J)} << 2);
  }
  s_.events.Retrack(before);
  for (Running& r : s_.running) {
    if (r.task == kNone) continue;
    r.task = ShiftBy(r.task, J);
    r.since += dt;
    r.done.due += dt;
  }
  for (StreamId st = 0; st < s_.head.size(); ++st) {
    if (s_.stream_last[st] != kNone) s_.stream_last[st] = ShiftBy(s_.stream_last[st], J);
    const TaskId head = s_.Head(st);
    if (head == kNone) continue;
    const TaskId to = ShiftBy(head, J);
    const auto first = s_.queue.begin() + s_.q_offset[st];
    const auto last = s_.queue.begin() + s_.q_offset[st + 1];
    s_.head[st] = static_cast<uint32_t>(std::lower_bound(first, last, to) - s_.queue.begin());
  }
  s_.flows.Relabel([&](TaskId t) { return ShiftBy(t, J); }, dt);
  s_.now += dt;
}

}  // namespace parasim::sim
