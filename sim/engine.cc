#include "sim/engine.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "sim/deadlock.h"
#include "sim/event_queue.h"
#include "sim/flow_network.h"
#include "sim/huge_pages.h"
#include "sim/key_costs.h"
#include "sim/replay_state.h"
#include "sim/steady_state.h"

namespace parasim::sim {
namespace {

// The tasks released by the event being handled, a few at a time: appended inline. The
// replay's functions are large once their helpers are inlined, and there std::vector's push_back
// was left out of line, about 20 instructions for each task released.
class TaskList {
 public:
  [[gnu::always_inline]] void push(TaskId t) {
    if (n_ == buf_.size()) [[unlikely]]
      Grow();
    buf_[n_++] = t;
  }
  TaskId* begin() { return buf_.data(); }
  TaskId* end() { return buf_.data() + n_; }
  TaskId& operator[](size_t i) { return buf_[i]; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  void clear() { n_ = 0; }

 private:
  [[gnu::noinline]] void Grow() { buf_.resize(std::max<size_t>(16, 2 * buf_.size())); }
  std::vector<TaskId> buf_;
  size_t n_ = 0;
};

// A duration in picoseconds scaled by a factor, held just past the longest replay when it
// would run beyond it (the replay stops there): the sums of times stay far from wrapping.
int64_t ScaledPs(double ps) {
  return ps > static_cast<double>(kMaxReplayPs) ? kMaxReplayPs + 1 : RoundHalfAway(ps);
}

// One replay of a finalized program: the step loop over (time, sequence) events, the stream
// queues and dependency counts that decide when a task starts (its state: ReplayState), the
// cost keys' durations asked once each, and the flow network and memory tracker it drives.
// kPeriodic: with the steady-state jump's hooks (sim/steady_state.h), compiled out of the
// plain replay, which pays nothing for them.
template <bool kPeriodic>
class Replay {
 public:
  Replay(const Program& p, const CostProvider& costs, RunOptions options);
  StatusOr<Timeline> Run();

 private:
  void Start(TaskId t);
  void TryStart(TaskId t, TaskId trigger);
  void TakeHead(StreamId s);
  void DrainReady();
  void ReleaseStream(StreamId s, TaskId t);
  void Complete(TaskId t);
  void Handle(const Event& e);
  void Schedule(const FlowNetwork::Due& due);
  // A task that starts has no event queued (its word was just set to kAbsent): its first one
  // enters without the look-up.
  void Push(int64_t time, TaskId t, EventType type) {
    Enter(MakeEvent(time, static_cast<uint32_t>(s_.seq++), t, type));
  }
  // Inline at every call, as are TakeHead, DrainReady and FlowNetwork::SetRate: out of line,
  // their calls and register saves were about a tenth of the engine benchmark's instructions
  // (cachegrind), and inlined they took its replay from about 0.136 to 0.127 s and the Llama 3
  // 405B engine from 1.51 to 1.46 ms.
  [[gnu::always_inline]] void PushNumbered(int64_t time, uint32_t seq, TaskId t, EventType type) {
    // A task has one event queued at most: a completion that moves is moved in place, unless
    // the event is the one being handled (the top), which its task's next one replaces.
    const Event e = MakeEvent(time, seq, t, type);
    const uint32_t at = s_.events.place(t);
    if (at == EventQueue::kAbsent || (pop_pending_ && at == 0)) {
      Enter(e);
    } else {
      s_.events.move(at, e);
      ++s_.tl.moves;
    }
  }
  static Event MakeEvent(int64_t time, uint32_t seq, TaskId t, EventType type) {
    return Event{time, uint64_t{seq} << 32 | uint64_t{t} << 2 | static_cast<uint64_t>(type)};
  }
  // A new event enters the queue: the event being handled, at the top, leaves as the first
  // one its handling queues takes its place.
  [[gnu::always_inline]] void Enter(Event e) {
    if (pop_pending_) {
      s_.events.replace_top(e);
      pop_pending_ = false;
    } else {
      s_.events.push(e);
    }
  }
  // A communication task began (+1) or ended (-1) on `rank`: only when the rank goes from none
  // to some or back does anything running there change pace (Retime).
  void Contend(uint32_t rank, int delta) {
    const uint32_t before = s_.comm_running[rank];
    s_.comm_running[rank] += delta;
    if ((before == 0) != (s_.comm_running[rank] == 0)) Retime(rank);
  }
  [[gnu::noinline]] void Retime(uint32_t rank);
  void Finish();
  [[gnu::noinline]] Status PastHorizon(TaskId t) const;

  const Program& p_;
  // Prefetching (Start) pays once the per-task arrays the replay reads, about 40 bytes a task,
  // outgrow a core's L2 cache (1 MiB on the development machine's AMD EPYC): from 2^16 tasks.
  // Below that it only adds instructions (about 1% of the Llama 3 405B replay, 14.5k tasks).
  static constexpr size_t kPrefetchFrom = size_t{1} << 16;
  const bool prefetch_ = p_.num_tasks() >= kPrefetchFrom;
  const Program::Task* const task_ = p_.columns().task;
  const uint32_t* const succ_offset_ = p_.columns().succ_offset;
  const RunOptions options_;
  const size_t n_;
  ReplayState s_;
  KeyCosts keys_;
  // Contention (sim/program.h, StreamRole): each rank's compute-role streams (compressed rows).
  std::vector<uint32_t> compute_offset_;
  std::vector<StreamId> compute_streams_;
  TaskList ready_;
  bool pop_pending_ = false;  // the top is the event being handled, to leave the queue
  FlowNetwork::Due due_;
  SteadyState steady_;  // looks for a period only in the periodic replay
};

template <bool kPeriodic>
Replay<kPeriodic>::Replay(const Program& p, const CostProvider& costs, RunOptions options)
    : p_(p),
      options_(std::move(options)),
      n_(p.num_tasks()),
      s_(p, options_),
      keys_(costs),
      steady_(&s_, options_) {
  const size_t ns = p.num_streams(), nr = p.num_ranks();
  compute_offset_.assign(nr + 1, 0);
  for (StreamId st = 0; st < ns; ++st) {
    if (p.stream_role(st) == StreamRole::kCompute) ++compute_offset_[p.stream_rank(st) + 1];
  }
  for (size_t r = 0; r < nr; ++r) compute_offset_[r + 1] += compute_offset_[r];
  compute_streams_.assign(compute_offset_[nr], 0);
  std::vector<uint32_t> fill(compute_offset_.begin(), compute_offset_.end() - 1);
  for (StreamId st = 0; st < ns; ++st) {
    if (p.stream_role(st) == StreamRole::kCompute) compute_streams_[fill[p.stream_rank(st)]++] = st;
  }
}

template <bool kPeriodic>
void Replay<kPeriodic>::Retime(uint32_t rank) {
  for (uint32_t i = compute_offset_[rank]; i < compute_offset_[rank + 1]; ++i) {
    Running& r = s_.running[compute_streams_[i]];
    if (r.task == kNone) continue;
    const double slow = keys_.slowdown(p_.cost_key(r.task));
    if (slow == 1.0) continue;
    r.left -= static_cast<double>(s_.now - r.since) / r.factor;
    r.since = s_.now;
    r.factor = s_.comm_running[rank] > 0 ? slow : 1.0;
    r.done = {s_.now + ScaledPs(std::max(r.left, 0.0) * r.factor), static_cast<uint32_t>(s_.seq++)};
    PushNumbered(r.done.due, r.done.seq, r.task, EventType::kComplete);
  }
}

template <bool kPeriodic>
void Replay<kPeriodic>::Start(TaskId t) {
  s_.waiting[t] = EventQueue::kAbsent;  // from now on the word is its event's place
  s_.tl.start[t] = Duration::Picoseconds(s_.now);
  if (kPeriodic && steady_.looking()) steady_.Started(t);
  s_.memory.Apply(t, MemoryAt::kStart, s_.now);
  const uint32_t key = p_.cost_key(t);
  const bool compute = p_.kind(t) == TaskKind::kCompute;
  keys_.Learn(key, compute);
  const StreamId st = p_.stream(t);
  const StreamRole role = p_.stream_role(st);
  // A stream's busy time is the sum of its tasks' ends less their starts, counted as they come
  // (the task's start is not read back at its end: it is far away in a large program).
  const Duration at = Duration::Picoseconds(s_.now);
  s_.tl.busy[st] -= at;
  if (prefetch_) {
    // In a large program, what this task's end and its stream's next start will read is far
    // away: asked for now, it arrives while other events are handled.
    const uint32_t nx = s_.head[st] + 1;
    if (nx < s_.q_offset[st + 1]) {
      const TaskId next = s_.queue[nx];
      __builtin_prefetch(&task_[next]);
      __builtin_prefetch(&s_.waiting[next], 1);
    }
    __builtin_prefetch(&succ_offset_[t]);
  }
  for (const auto& [task, extra] : p_.extra_streams_of(t)) s_.tl.busy[extra] -= at;
  if (compute) {
    int64_t d = keys_.duration_ps(key);
    if (role == StreamRole::kCompute) {
      const uint32_t rank = p_.stream_rank(st);
      if (rank < options_.rank_slowdown.size()) {
        d = ScaledPs(static_cast<double>(d) * options_.rank_slowdown[rank]);
      }
      const double factor = s_.comm_running[rank] > 0 ? keys_.slowdown(key) : 1.0;
      s_.running[st] = {t, s_.now, static_cast<double>(d), factor, Completion{}};
      if (factor != 1.0) d = ScaledPs(static_cast<double>(d) * factor);
      s_.running[st].done = {s_.now + d, static_cast<uint32_t>(s_.seq)};
    }
    Push(s_.now + d, t, EventType::kComplete);
  } else {
    Push(s_.now + keys_.flow(key).latency.picoseconds(), t, EventType::kFlowBegin);
  }
  if (role == StreamRole::kCommunication) Contend(p_.stream_rank(st), +1);
}

// A task starts when its dependencies are done and it heads every stream it needs.
template <bool kPeriodic>
void Replay<kPeriodic>::TryStart(TaskId t, TaskId trigger) {
  if (s_.waiting[t] == 0) {
    ready_.push(t);
    if (options_.critical_path) s_.enabler[t] = trigger;
  }
}

template <bool kPeriodic>
[[gnu::always_inline]] inline void Replay<kPeriodic>::TakeHead(StreamId s) {
  if (s_.head[s] < s_.q_offset[s + 1]) {
    TaskId h = s_.queue[s_.head[s]];
    --s_.waiting[h];
    if (kPeriodic && steady_.looking()) steady_.Touched(h);
    TryStart(h, s_.stream_last[s]);
  }
}

template <bool kPeriodic>
[[gnu::always_inline]] inline void Replay<kPeriodic>::DrainReady() {
  // Start in task order for determinism. Most events release one task or two: those are
  // ordered in place, more by a sort.
  if (ready_.size() == 2) {
    if (ready_[1] < ready_[0]) std::swap(ready_[0], ready_[1]);
  } else if (ready_.size() > 2) {
    std::sort(ready_.begin(), ready_.end());
  }
  if (kPeriodic && steady_.looking() && ready_.size() > 1) {
    steady_.StartedTogether(ready_.begin(), ready_.end());
  }
  for (TaskId t : ready_) Start(t);
  ready_.clear();
}

template <bool kPeriodic>
void Replay<kPeriodic>::ReleaseStream(StreamId s, TaskId t) {
  s_.tl.busy[s] += Duration::Picoseconds(s_.now);  // its start was taken off (Start)
  s_.stream_last[s] = t;
  ++s_.head[s];
  TakeHead(s);
}

template <bool kPeriodic>
void Replay<kPeriodic>::Complete(TaskId t) {
  s_.tl.end[t] = Duration::Picoseconds(s_.now);
  if (kPeriodic && steady_.looking()) steady_.Completed(t);
  const StreamId st = p_.stream(t);
  if (p_.stream_role(st) == StreamRole::kCompute) s_.running[st].task = kNone;
  s_.memory.Apply(t, MemoryAt::kEnd, s_.now);
  ++s_.done;
  for (TaskId s : p_.successors(t)) {
    --s_.waiting[s];
    if (kPeriodic && steady_.looking()) steady_.Touched(s);
    TryStart(s, t);
  }
  ReleaseStream(st, t);
  if (p_.stream_role(st) == StreamRole::kCommunication) Contend(p_.stream_rank(st), -1);
  for (const auto& [task, extra] : p_.extra_streams_of(t)) ReleaseStream(extra, t);
}

template <bool kPeriodic>
void Replay<kPeriodic>::Schedule(const FlowNetwork::Due& due) {
  for (const FlowNetwork::Completed& c : due)
    PushNumbered(c.at, c.seq, c.task, EventType::kFlowDone);
}

template <bool kPeriodic>
void Replay<kPeriodic>::Handle(const Event& e) {
  switch (e.type()) {
    case EventType::kComplete:
      Complete(e.task());
      break;
    case EventType::kFlowBegin: {
      const FlowCost& fc = keys_.flow(p_.cost_key(e.task()));
      if (fc.bytes.bytes() <= 0 || p_.route_links(p_.route(e.task())).empty()) {
        Complete(e.task());
        break;
      }
      due_.clear();
      s_.flows.Begin(e.task(), fc.bytes.bytes(), s_.now, &due_);
      Schedule(due_);
      break;
    }
    case EventType::kFlowDone:
      due_.clear();
      s_.flows.Finish(e.task(), s_.now, &due_);
      Schedule(due_);
      Complete(e.task());
      break;
  }
}

template <bool kPeriodic>
void Replay<kPeriodic>::Finish() {
  s_.tl.makespan = Duration::Zero();
  TaskId last = kNone;
  for (TaskId t = 0; t < n_; ++t) {
    if (last == kNone || s_.tl.end[t] > s_.tl.makespan) {
      s_.tl.makespan = s_.tl.end[t];
      last = t;
    }
  }
  if (options_.critical_path && last != kNone) {
    for (TaskId t = last; t != kNone; t = s_.enabler[t]) s_.tl.critical_path.push_back(t);
    std::reverse(s_.tl.critical_path.begin(), s_.tl.critical_path.end());
  }
  s_.tl.state_bytes = s_.state_bytes() + keys_.state_bytes() + StorageBytes(compute_offset_) +
                      StorageBytes(compute_streams_);
}

template <bool kPeriodic>
Status Replay<kPeriodic>::PastHorizon(TaskId t) const {
  std::string what;
  if (t != kNone) {
    what = fmt::format(" (task {}, '{}' on {}/{}, ends there)", t, p_.label_text(p_.label(t)),
                       p_.rank_name(p_.stream_rank(p_.stream(t))), p_.stream_name(p_.stream(t)));
  }
  return InvalidArgument(fmt::format(
      "the step runs past {:.0e} s ({:.1f} days) of simulated time{}: out of range, a step is at "
      "most that long; check the GPU's peak and hbm_bandwidth and the fabrics' bandwidth and "
      "latency",
      kMaxReplaySeconds, kMaxReplaySeconds / 86400, what));
}

template <bool kPeriodic>
StatusOr<Timeline> Replay<kPeriodic>::Run() {
  if (n_ >= kMaxTasks) {
    return InvalidArgument(
        fmt::format("the program has {} tasks; the engine replays at most {}", n_, kMaxTasks - 1));
  }
  for (StreamId s = 0; s < p_.num_streams(); ++s) TakeHead(s);
  DrainReady();
  while (!s_.events.empty()) {
    if (kPeriodic && steady_.anchor_due() && s_.events.top().time > s_.now) {
      // Every event of the anchor's time is handled: compare, and perhaps jump ahead.
      steady_.AtAnchor();
      continue;
    }
    // The top leaves the queue when the first event its handling queues takes its place, or
    // after the handling when it queues none.
    const Event e = s_.events.top();
    if (e.time > kMaxReplayPs) [[unlikely]]
      return PastHorizon(e.task());
    pop_pending_ = true;
    s_.now = e.time;
    ++s_.tl.events;
    if (s_.seq >> 32) {
      return Internal(
          fmt::format("the replay passed {} events, more than the engine numbers", s_.seq));
    }
    Handle(e);
    // Tasks released by this event start now, in task order.
    if (!ready_.empty()) DrainReady();
    if (pop_pending_) {
      s_.events.pop();
      pop_pending_ = false;
    }
  }
  if (s_.done != n_) return DeadlockError(s_);
  Finish();
  // A jump over periods (RunOptions::shift) places tasks without their events.
  if (s_.tl.makespan.picoseconds() > kMaxReplayPs) return PastHorizon(kNone);
  return std::move(s_.tl);
}

// One replay, its setup and event loop timed apart when RunOptions::timing asks.
template <bool kPeriodic>
StatusOr<Timeline> Replayed(const Program& p, const CostProvider& costs, RunOptions options) {
  RunOptions::Timing* const timing = options.timing;
  using Clock = std::chrono::steady_clock;
  const auto now = [timing] { return timing != nullptr ? Clock::now() : Clock::time_point{}; };
  const auto t0 = now();
  Replay<kPeriodic> replay(p, costs, std::move(options));
  const auto t1 = now();
  StatusOr<Timeline> timeline = replay.Run();
  if (timing != nullptr) {
    timing->setup_s = std::chrono::duration<double>(t1 - t0).count();
    timing->loop_s = std::chrono::duration<double>(now() - t1).count();
  }
  return timeline;
}

}  // namespace

StatusOr<Timeline> Engine::Run(Program& p, const CostProvider& costs, RunOptions options) {
  p.Finalize();
  // The periodic replay's bookkeeping is compiled out of the plain one, which pays nothing
  // for it.
  if (options.shift != nullptr && options.anchors != nullptr) {
    return Replayed<true>(p, costs, std::move(options));
  }
  return Replayed<false>(p, costs, std::move(options));
}

}  // namespace parasim::sim
