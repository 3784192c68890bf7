#include "sim/engine.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <tuple>

#include "sim/event_queue.h"
#include "sim/flow_network.h"
#include "sim/huge_pages.h"
#include "sim/memory_tracker.h"

namespace parasim::sim {
namespace {

// Each cost key's costs, asked of the provider once, the first time a task with the key comes
// up: a compute key's duration (picoseconds) and its slowdown beside a collective, a flow key's
// latency and bytes. The replay and MakespanLowerBound share it.
class KeyCosts {
 public:
  explicit KeyCosts(const CostProvider& costs) : costs_(costs) {}
  // Makes `key` known, as the key of a compute task or of a flow.
  void Learn(uint32_t key, bool compute) {
    if (key < known_.size() && known_[key]) return;  // most calls: answered inline
    Ask(key, compute);
  }
  int64_t duration_ps(uint32_t key) const { return duration_ps_[key]; }
  double slowdown(uint32_t key) const { return slowdown_[key]; }
  const FlowCost& flow(uint32_t key) const { return flow_[key]; }
  size_t state_bytes() const {
    return known_.capacity() + duration_ps_.capacity() * sizeof(int64_t) +
           flow_.capacity() * sizeof(FlowCost) + slowdown_.capacity() * sizeof(double);
  }

 private:
  // The provider's costs of a key not asked before (out of line: the hot path is Learn's check).
  [[gnu::noinline]] void Ask(uint32_t key, bool compute) {
    if (key >= known_.size()) {
      known_.resize(key + 1, 0);
      duration_ps_.resize(key + 1, 0);
      flow_.resize(key + 1);
      slowdown_.resize(key + 1, 1.0);
    }
    if (compute) {
      duration_ps_[key] = costs_.ComputeDuration(key).picoseconds();
      slowdown_[key] = std::max(1.0, costs_.ContendedSlowdown(key));
    } else {
      flow_[key] = costs_.Flow(key);
    }
    known_[key] = 1;
  }
  const CostProvider& costs_;
  std::vector<uint8_t> known_;
  std::vector<int64_t> duration_ps_;
  std::vector<FlowCost> flow_;
  std::vector<double> slowdown_;
};

// Each stream's tasks in the order the stream runs them, task order (a task on extra streams
// queues on each): stream s's are (*queue)[(*offset)[s] .. (*offset)[s + 1]). The replay and
// MakespanLowerBound share this rule.
void BuildStreamQueues(const Program& p, std::vector<uint32_t>* offset,
                       HugePageVector<TaskId>* queue) {
  const auto& extra = p.extra_streams();
  const size_t ns = p.num_streams();
  const size_t n = p.num_tasks();
  const std::vector<uint32_t>& count = p.stream_task_counts();
  offset->assign(ns + 1, 0);
  for (size_t st = 0; st < ns; ++st) (*offset)[st + 1] = (*offset)[st] + count[st];
  queue->assign((*offset)[ns], 0);
  std::vector<uint32_t> fill(offset->begin(), offset->end() - 1);
  size_t e = 0;
  for (TaskId t = 0; t < n; ++t) {
    (*queue)[fill[p.stream(t)]++] = t;
    for (; e < extra.size() && extra[e].first == t; ++e) (*queue)[fill[extra[e].second]++] = t;
  }
}

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

// One replay of a finalized program: the step loop over (time, sequence) events, the stream
// queues and dependency counts that decide when a task starts, the cost keys' durations asked
// once each, and the flow network and memory tracker it drives.
template <bool kPeriodic>
class Replay {
 public:
  Replay(const Program& p, const CostProvider& costs, RunOptions options);
  StatusOr<Timeline> Run();

 private:
  void BuildQueues();
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
    Enter(MakeEvent(time, static_cast<uint32_t>(seq_++), t, type));
  }
  // Inline at every call, as are TakeHead, DrainReady and FlowNetwork::SetRate: out of line,
  // their calls and register saves were about a tenth of the engine benchmark's instructions
  // (cachegrind), and inlined they took its replay from about 0.136 to 0.127 s and the Llama 3
  // 405B engine from 1.51 to 1.46 ms.
  [[gnu::always_inline]] void PushNumbered(int64_t time, uint32_t seq, TaskId t, EventType type) {
    // A task has one event queued at most: a completion that moves is moved in place, unless
    // the event is the one being handled (the top), which its task's next one replaces.
    const Event e = MakeEvent(time, seq, t, type);
    const uint32_t at = events_.place(t);
    if (at == EventQueue::kAbsent || (pop_pending_ && at == 0)) {
      Enter(e);
    } else {
      events_.move(at, e);
      ++tl_.moves;
    }
  }
  static Event MakeEvent(int64_t time, uint32_t seq, TaskId t, EventType type) {
    return Event{time, uint64_t{seq} << 32 | uint64_t{t} << 2 | static_cast<uint64_t>(type)};
  }
  // A new event enters the queue: the event being handled, at the top, leaves as the first
  // one its handling queues takes its place.
  [[gnu::always_inline]] void Enter(Event e) {
    if (pop_pending_) {
      events_.replace_top(e);
      pop_pending_ = false;
    } else {
      events_.push(e);
    }
  }
  // A communication task began (+1) or ended (-1) on `rank`: only when the rank goes from none
  // to some or back does anything running there change pace (Retime).
  void Contend(uint32_t rank, int delta) {
    const uint32_t before = comm_running_[rank];
    comm_running_[rank] += delta;
    if ((before == 0) != (comm_running_[rank] == 0)) Retime(rank);
  }
  [[gnu::noinline]] void Retime(uint32_t rank);
  Status Deadlock() const;
  void Finish();

  // Steady-state periodicity (RunOptions::shift): the state at an anchor, written with the
  // tasks apart (compared through the shift) from everything else (compared as is: times
  // relative to the snapshot's, sequence numbers by rank, doubles by their bits).
  struct Snapshot {
    int64_t time = 0;
    std::vector<int64_t> nums;
    std::vector<TaskId> tasks;
    // The frontier: compared as a set, sorted only when the rest matches (it can be long).
    std::vector<std::pair<TaskId, uint32_t>> waits;
  };
  void Touch(TaskId t) {
    if (mark_[t] == 0) {
      mark_[t] = 1;
      frontier_.push_back(t);
      period_touched_.push_back(t);
    }
  }
  void TakeSnapshot(Snapshot* s);
  void AtAnchor();
  void BuildChains();
  // How many periods ahead the replay may place, from the state one period ago (`prev`).
  uint64_t Reach(const Snapshot& prev);
  void Jump(uint64_t periods, int64_t period);
  void StopLooking() {
    periodic_ = false;
    flows_.LogMoves(nullptr);
  }
  // The task that plays t's part j periods on (t itself when the period left it alone).
  TaskId ShiftBy(TaskId t, uint64_t j) const {
    if (t == kNone || std::binary_search(static_.begin(), static_.end(), t)) return t;
    for (; j > 0 && t != kNone; --j) t = (*shift_)[t];
    return t;
  }
  // A state that came back after `lag` anchors rather than one: the period becomes that many
  // of RunOptions::shift's (shift_ their composition). False when the shift is not one-to-one.
  bool LengthenPeriod(uint32_t lag);
  static uint64_t Hash(const Snapshot& s);

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
  Timeline tl_;
  KeyCosts keys_;
  // Contention (sim/program.h, StreamRole): running communication tasks per rank, each rank's
  // compute-role streams (compressed rows), and what runs on each such stream.
  struct Running {
    TaskId task = kNone;
    int64_t since = 0;  // when `left` was counted
    double left = 0;    // work left, picoseconds at its rate alone
    double factor = 1;  // how much slower it runs now
    Completion done;    // its current completion, queued
  };
  std::vector<uint32_t> comm_running_;
  std::vector<uint32_t> compute_offset_;
  std::vector<StreamId> compute_streams_;
  std::vector<Running> running_;  // per stream
  // Until a task starts, what it still waits for: its dependencies not done, plus the streams
  // it needs (its own and any extra ones) whose head it is not yet. From its start, the same
  // word is its event's place in the queue (EventQueue::Track), kAbsent when it has none.
  HugePageVector<uint32_t> waiting_;
  // Stream queues in issue order (compressed rows) and each stream's head.
  std::vector<uint32_t> q_offset_, head_;
  HugePageVector<TaskId> queue_;
  std::vector<TaskId> stream_last_;
  // The task whose completion released each task last (dependency or stream predecessor):
  // events come in time order, so the last release is the one that set the start time.
  HugePageVector<TaskId> enabler_;
  TaskList ready_;
  EventQueue events_;
  bool pop_pending_ = false;  // the top is the event being handled, to leave the queue
  uint64_t seq_ = 0;
  size_t done_ = 0;
  int64_t now_ = 0;
  MemoryTracker memory_;
  FlowNetwork flows_;
  FlowNetwork::Due due_;
  // Periodicity (RunOptions::shift; empty when unused).
  bool periodic_ = false;
  bool snapshot_due_ = false;
  size_t next_anchor_ = 0;
  // Per task: 0 untouched, 1 some dependency or stream done, 2 started.
  HugePageVector<uint8_t> mark_;
  std::vector<TaskId> frontier_;  // tasks marked 1 (and some since started: dropped at snapshots)
  // What the period since the last snapshot did.
  std::vector<TaskId> started_, completed_, period_touched_;
  std::vector<std::pair<uint32_t, double>> moves_;  // bytes credited to links, in order
  uint64_t events_then_ = 0, moves_then_ = 0;
  std::vector<Duration> busy_then_;
  Snapshot prev_;
  bool have_prev_ = false;
  // The period in use: RunOptions::shift, or its composition over `lag_` anchors; while the
  // replay passes the anchors inside a lengthened period, `skip_` counts those left.
  const HugePageVector<TaskId>* shift_ = nullptr;
  HugePageVector<TaskId> composed_;
  uint32_t lag_ = 1;
  uint32_t skip_ = 0;
  // Hashes of the states at the last anchors, oldest first, while looking for a longer period.
  std::deque<uint64_t> seen_;
  size_t longest_ = 0;  // the longest frontier at an anchor so far
  int growing_ = 0;     // anchors in a row whose frontier was the longest so far
  // Per task, how many of it and its successors by shift in turn have the same shape as their
  // successor by shift (0: it does not); built the first time two snapshots match.
  HugePageVector<uint32_t> chain_;
  std::vector<TaskId> static_;  // tasks of the state the period left alone (sorted)
  // Of them, those that wait for fewer things each period: (task, waits now, fewer by).
  std::vector<std::tuple<TaskId, uint32_t, uint32_t>> accumulators_;
  std::vector<TaskId> batches_;  // the period's tasks started at once, each batch after a kNone
  int failed_ = 0;               // comparisons that found no period
};

// A state may repeat only after several anchors: Llama 3 405B at PP64 1F1B with two one-layer
// stages repeats every 62 micro-batches, not every one. The replay keeps the hashes of that
// many recent states (a deque of this length; 128 anchors cover 2p for every pipeline up to
// PP64), and gives up after this many anchors beyond it without a repeat (a zero-bubble PP64
// schedule settles after 63).
constexpr uint32_t kMaxLag = 128;
constexpr int kAttempts = 12;

template <bool kPeriodic>
Replay<kPeriodic>::Replay(const Program& p, const CostProvider& costs, RunOptions options)
    : p_(p),
      options_(options),
      n_(p.num_tasks()),
      keys_(costs),
      memory_(p, options.record_memory, &tl_),
      flows_(p, &tl_.link_bytes, &seq_) {
  tl_.start.assign(n_, Duration::Zero());
  tl_.end.assign(n_, Duration::Zero());
  tl_.peak_memory.assign(p.num_ranks(), 0.0);
  tl_.peak_time.assign(p.num_ranks(), Duration::Zero());
  tl_.busy.assign(p.num_streams(), Duration::Zero());
  tl_.link_bytes.assign(p.num_links(), 0.0);
  waiting_.assign(n_, 1);
  for (TaskId t = 0; t < n_; ++t) {
    for (TaskId s : p.successors(t)) ++waiting_[s];
  }
  for (const auto& [t, s] : p.extra_streams()) ++waiting_[t];
  BuildQueues();
  enabler_.assign(options.critical_path ? n_ : 0, kNone);
  const size_t ns = p.num_streams(), nr = p.num_ranks();
  comm_running_.assign(nr, 0);
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
  running_.assign(ns, Running{});
  events_.Track(waiting_.data());
  periodic_ = options.shift != nullptr && options.anchors != nullptr &&
              options.shift->size() == n_ && !options.anchors->empty() && !options.record_memory &&
              p.extra_streams().empty();
  if (kPeriodic && periodic_) {
    shift_ = options.shift;
    mark_.assign(n_, 0);
    flows_.LogMoves(&moves_);
    busy_then_ = tl_.busy;
  }
}

// Communication on `rank` began or ended (Contend): each running compute task there counts the
// work it did at the old rate and is due again at the new one.
template <bool kPeriodic>
void Replay<kPeriodic>::Retime(uint32_t rank) {
  for (uint32_t i = compute_offset_[rank]; i < compute_offset_[rank + 1]; ++i) {
    Running& r = running_[compute_streams_[i]];
    if (r.task == kNone) continue;
    const double slow = keys_.slowdown(p_.cost_key(r.task));
    if (slow == 1.0) continue;
    r.left -= static_cast<double>(now_ - r.since) / r.factor;
    r.since = now_;
    r.factor = comm_running_[rank] > 0 ? slow : 1.0;
    r.done = {now_ + RoundHalfAway(std::max(r.left, 0.0) * r.factor),
              static_cast<uint32_t>(seq_++)};
    PushNumbered(r.done.due, r.done.seq, r.task, EventType::kComplete);
  }
}

template <bool kPeriodic>
void Replay<kPeriodic>::BuildQueues() {
  BuildStreamQueues(p_, &q_offset_, &queue_);
  head_.assign(q_offset_.begin(), q_offset_.end() - 1);
  stream_last_.assign(p_.num_streams(), kNone);
}

template <bool kPeriodic>
void Replay<kPeriodic>::Start(TaskId t) {
  waiting_[t] = EventQueue::kAbsent;  // from now on the word is its event's place
  tl_.start[t] = Duration::Picoseconds(now_);
  if (kPeriodic && periodic_) {
    mark_[t] = 2;
    started_.push_back(t);
    const auto& anchors = *options_.anchors;
    if (next_anchor_ < anchors.size() && anchors[next_anchor_] == t) {
      snapshot_due_ = true;
      ++next_anchor_;
    }
  }
  memory_.Apply(t, MemoryAt::kStart, now_);
  const uint32_t key = p_.cost_key(t);
  const bool compute = p_.kind(t) == TaskKind::kCompute;
  keys_.Learn(key, compute);
  const StreamId st = p_.stream(t);
  const StreamRole role = p_.stream_role(st);
  // A stream's busy time is the sum of its tasks' ends less their starts, counted as they come
  // (the task's start is not read back at its end: it is far away in a large program).
  const Duration at = Duration::Picoseconds(now_);
  tl_.busy[st] -= at;
  if (prefetch_) {
    // In a large program, what this task's end and its stream's next start will read is far
    // away: asked for now, it arrives while other events are handled.
    const uint32_t nx = head_[st] + 1;
    if (nx < q_offset_[st + 1]) {
      const TaskId next = queue_[nx];
      __builtin_prefetch(&task_[next]);
      __builtin_prefetch(&waiting_[next], 1);
    }
    __builtin_prefetch(&succ_offset_[t]);
  }
  for (const auto& [task, extra] : p_.extra_streams_of(t)) tl_.busy[extra] -= at;
  if (compute) {
    int64_t d = keys_.duration_ps(key);
    if (role == StreamRole::kCompute) {
      const uint32_t rank = p_.stream_rank(st);
      if (rank < options_.rank_slowdown.size()) {
        d = RoundHalfAway(static_cast<double>(d) * options_.rank_slowdown[rank]);
      }
      const double factor = comm_running_[rank] > 0 ? keys_.slowdown(key) : 1.0;
      running_[st] = {t, now_, static_cast<double>(d), factor, Completion{}};
      if (factor != 1.0) d = RoundHalfAway(static_cast<double>(d) * factor);
      running_[st].done = {now_ + d, static_cast<uint32_t>(seq_)};
    }
    Push(now_ + d, t, EventType::kComplete);
  } else {
    Push(now_ + keys_.flow(key).latency.picoseconds(), t, EventType::kFlowBegin);
  }
  if (role == StreamRole::kCommunication) Contend(p_.stream_rank(st), +1);
}

// A task starts when its dependencies are done and it heads every stream it needs.
template <bool kPeriodic>
void Replay<kPeriodic>::TryStart(TaskId t, TaskId trigger) {
  if (waiting_[t] == 0) {
    ready_.push(t);
    if (options_.critical_path) enabler_[t] = trigger;
  }
}

template <bool kPeriodic>
[[gnu::always_inline]] inline void Replay<kPeriodic>::TakeHead(StreamId s) {
  if (head_[s] < q_offset_[s + 1]) {
    TaskId h = queue_[head_[s]];
    --waiting_[h];
    if (kPeriodic && periodic_) Touch(h);
    TryStart(h, stream_last_[s]);
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
  if (kPeriodic && periodic_ && ready_.size() > 1) {
    // Tasks started at once, in task order: the shift must keep their order.
    batches_.push_back(kNone);
    batches_.insert(batches_.end(), ready_.begin(), ready_.end());
  }
  for (TaskId t : ready_) Start(t);
  ready_.clear();
}

template <bool kPeriodic>
void Replay<kPeriodic>::ReleaseStream(StreamId s, TaskId t) {
  tl_.busy[s] += Duration::Picoseconds(now_);  // its start was taken off (Start)
  stream_last_[s] = t;
  ++head_[s];
  TakeHead(s);
}

template <bool kPeriodic>
void Replay<kPeriodic>::Complete(TaskId t) {
  tl_.end[t] = Duration::Picoseconds(now_);
  if (kPeriodic && periodic_) completed_.push_back(t);
  const StreamId st = p_.stream(t);
  if (p_.stream_role(st) == StreamRole::kCompute) running_[st].task = kNone;
  memory_.Apply(t, MemoryAt::kEnd, now_);
  ++done_;
  for (TaskId s : p_.successors(t)) {
    --waiting_[s];
    if (kPeriodic && periodic_) Touch(s);
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
      flows_.Begin(e.task(), fc.bytes.bytes(), now_, &due_);
      Schedule(due_);
      break;
    }
    case EventType::kFlowDone:
      due_.clear();
      flows_.Finish(e.task(), now_, &due_);
      Schedule(due_);
      Complete(e.task());
      break;
  }
}

template <bool kPeriodic>
Status Replay<kPeriodic>::Deadlock() const {
  Status cyc = p_.Validate();
  if (!cyc.ok()) return cyc;
  // A task whose dependencies are all done but which does not head each of its streams.
  auto heads = [&](StreamId s, TaskId t) {
    return head_[s] < q_offset_[s + 1] && queue_[head_[s]] == t ? 1u : 0u;
  };
  for (TaskId t = 0; t < n_; ++t) {
    if (tl_.end[t] != Duration::Zero()) continue;
    uint32_t needed = 1, held = heads(p_.stream(t), t);
    for (const auto& [task, extra] : p_.extra_streams_of(t)) {
      ++needed;
      held += heads(extra, t);
    }
    if (waiting_[t] == needed - held && held < needed) {
      return InvalidArgument(fmt::format(
          "deadlock: task {} ('{}' on {}/{}) is ready but waits behind another task in its "
          "stream order; {} of {} tasks finished",
          t, p_.label_text(p_.label(t)), p_.rank_name(p_.stream_rank(p_.stream(t))),
          p_.stream_name(p_.stream(t)), done_, n_));
    }
  }
  return InvalidArgument(fmt::format("deadlock: {} of {} tasks finished", done_, n_));
}

template <bool kPeriodic>
void Replay<kPeriodic>::Finish() {
  tl_.makespan = Duration::Zero();
  TaskId last = kNone;
  for (TaskId t = 0; t < n_; ++t) {
    if (last == kNone || tl_.end[t] > tl_.makespan) {
      tl_.makespan = tl_.end[t];
      last = t;
    }
  }
  if (options_.critical_path && last != kNone) {
    for (TaskId t = last; t != kNone; t = enabler_[t]) tl_.critical_path.push_back(t);
    std::reverse(tl_.critical_path.begin(), tl_.critical_path.end());
  }
  auto cap = [](const auto& v) { return StorageBytes(v); };
  tl_.state_bytes = cap(waiting_) + cap(q_offset_) + cap(queue_) + cap(head_) + cap(stream_last_) +
                    cap(enabler_) + cap(tl_.start) + cap(tl_.end) + keys_.state_bytes() +
                    cap(comm_running_) + cap(compute_offset_) + cap(compute_streams_) +
                    cap(running_) + memory_.state_bytes() + flows_.state_bytes() +
                    events_.capacity_bytes();
}

namespace {
int64_t Bits(double x) {
  int64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
}  // namespace

template <bool kPeriodic>
void Replay<kPeriodic>::TakeSnapshot(Snapshot* snap) {
  const int64_t T = now_;
  snap->time = T;
  snap->nums.clear();
  snap->tasks.clear();
  auto& nums = snap->nums;
  auto& tasks = snap->tasks;
  // Sequence numbers only order events: each is written as its rank among those in the state.
  std::vector<uint32_t> seqs;
  std::vector<Event> events(events_.items().begin(), events_.items().end());
  std::sort(events.begin(), events.end());
  for (const Event& e : events) seqs.push_back(e.seq());
  auto completion_seqs = [&](const Completion& c) { seqs.push_back(c.seq); };
  for (const Running& r : running_) {
    if (r.task != kNone) completion_seqs(r.done);
  }
  const std::vector<FlowNetwork::State> flows = flows_.States();
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
    nums.push_back(tl_.start[t].picoseconds() - T);
    tasks.push_back(options_.critical_path ? enabler_[t] : kNone);
  };
  nums.push_back(static_cast<int64_t>(events.size()));
  for (const Event& e : events) {
    nums.push_back(e.time - T);
    nums.push_back(static_cast<int64_t>(e.type()));
    nums.push_back(rank(e.seq()));
    started(e.task());
  }
  for (const Running& r : running_) {
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
  for (StreamId st = 0; st < head_.size(); ++st) {
    tasks.push_back(head_[st] < q_offset_[st + 1] ? queue_[head_[st]] : kNone);
    tasks.push_back(stream_last_[st]);
  }
  for (uint32_t c : comm_running_) nums.push_back(c);
  // Tasks some of whose dependencies or streams are done, not started: how many they wait for.
  size_t kept = 0;
  for (TaskId t : frontier_) {
    if (mark_[t] == 1) frontier_[kept++] = t;
  }
  frontier_.resize(kept);
  snap->waits.clear();
  for (TaskId t : frontier_) snap->waits.push_back({t, waiting_[t]});
  for (double level : memory_.levels()) nums.push_back(Bits(level));
  nums.push_back(static_cast<int64_t>(flows.size()));
  for (const auto& f : flows) {
    started(f.task);
    nums.push_back(Bits(f.remaining));
    nums.push_back(Bits(f.rate));
    nums.push_back(f.updated_at - T);
    completion(f.done);
  }
}

template <bool kPeriodic>
uint64_t Replay<kPeriodic>::Hash(const Snapshot& s) {
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

template <bool kPeriodic>
bool Replay<kPeriodic>::LengthenPeriod(uint32_t lag) {
  // shift^lag along each chain t, shift[t], shift[shift[t]], ... from the tasks nothing
  // shifts to; a shift that sends two tasks to one has no such chains.
  const HugePageVector<TaskId>& sh = *options_.shift;
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

template <bool kPeriodic>
void Replay<kPeriodic>::AtAnchor() {
  if (skip_ > 0) {  // inside a lengthened period: its tasks and moves go on adding up
    --skip_;
    return;
  }
  Snapshot cur;
  TakeSnapshot(&cur);
  if (have_prev_ && cur.nums == prev_.nums && cur.tasks.size() == prev_.tasks.size() &&
      cur.time > prev_.time) {
    std::sort(cur.waits.begin(), cur.waits.end());
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
    bool same = true;
    auto expect = [&](TaskId a) {
      if (a == kNone) return kNone;
      const TaskId b = (*shift_)[a];
      if (b != kNone) return b;
      if (std::binary_search(period.begin(), period.end(), a)) same = false;
      static_.push_back(a);
      return a;
    };
    for (size_t i = 0; i < cur.tasks.size() && same; ++i)
      same = expect(prev_.tasks[i]) == cur.tasks[i];
    if (same && cur.waits.size() == prev_.waits.size()) {
      std::vector<std::pair<TaskId, uint32_t>> moved;
      for (const auto& [t, w] : prev_.waits) {
        const TaskId to = expect(t);
        if (to != t) {
          moved.push_back({to, w});
          continue;
        }
        auto it = std::lower_bound(cur.waits.begin(), cur.waits.end(), std::pair{t, 0u});
        if (it == cur.waits.end() || it->first != t || it->second > w) {
          same = false;
          break;
        }
        if (it->second < w) accumulators_.push_back({t, it->second, w - it->second});
        moved.push_back(*it);
      }
      std::sort(moved.begin(), moved.end());
      same = same && moved == cur.waits;
    } else {
      same = false;
    }
    std::sort(static_.begin(), static_.end());
    static_.erase(std::unique(static_.begin(), static_.end()), static_.end());
    if (same) {
      const uint64_t periods = Reach(prev_);
      if (periods > 0) {
        Jump(periods, cur.time - prev_.time);
        StopLooking();  // one jump: the rest of the step is the drain, replayed
        return;
      }
    }
  }
  if (lag_ > 1) {  // the lengthened period did not hold
    StopLooking();
    return;
  }
  // Has the state come back after more than one anchor? The period is then that many; the
  // replay takes this state as the start of one and compares at its end, as above.
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
  if (lag > 1 && LengthenPeriod(lag)) {
    skip_ = lag - 1;
  } else if (have_prev_ &&
             (++failed_ >= kAttempts + static_cast<int>(kMaxLag) || growing_ >= kAttempts)) {
    // A state that has not repeated within a few periods past the longest the replay looks
    // for will not: the snapshots stop costing.
    StopLooking();
    return;
  }
  prev_ = std::move(cur);
  have_prev_ = true;
  started_.clear();
  completed_.clear();
  period_touched_.clear();
  moves_.clear();
  batches_.clear();
  events_then_ = tl_.events;
  moves_then_ = tl_.moves;
  busy_then_ = tl_.busy;
}

template <bool kPeriodic>
void Replay<kPeriodic>::BuildChains() {
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
  const Program::Columns c = p_.columns();
  // Each task's next on its stream (a periodic replay has no task on extra streams).
  HugePageVector<TaskId> next(n, kNone);
  const uint32_t* const q = queue_.data();
  for (size_t st = 0; st + 1 < q_offset_.size(); ++st) {
    for (uint32_t k = q_offset_[st]; k + 1 < q_offset_[st + 1]; ++k) next[q[k]] = q[k + 1];
  }
  // Each task's memory events: [mem_first[t], mem_first[t + 1]) of the sorted list.
  const MemoryEvent* const mem = p_.memory_events().data();
  const size_t num_mem = p_.memory_events().size();
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

template <bool kPeriodic>
uint64_t Replay<kPeriodic>::Reach(const Snapshot& prev) {
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

template <bool kPeriodic>
void Replay<kPeriodic>::Jump(uint64_t periods, int64_t period) {
  // Place the periods' tasks from the last one's (each one later by a period, its parts
  // played by the tasks the shift gives), then move the state as many periods on.
  const HugePageVector<TaskId>& sh = *shift_;
  const uint64_t J = periods;
  const int64_t dt = static_cast<int64_t>(J) * period;
  std::vector<std::pair<TaskId, uint32_t>> waits;  // the frontier now, before the placing
  for (TaskId t : frontier_) {
    if (mark_[t] == 1) waits.push_back({t, waiting_[t]});
  }
  std::vector<TaskId> s_at(started_), c_at(completed_);
  std::vector<TaskId> enabler_at;
  if (options_.critical_path) {
    for (TaskId t : started_) enabler_at.push_back(enabler_[t]);
  }
  // Through local pointers: the stores to mark_ (bytes) would otherwise make the compiler load
  // every array's address again for each task placed.
  const TaskId* const shp = sh.data();
  Duration* const start = tl_.start.data();
  Duration* const end = tl_.end.data();
  uint32_t* const waiting = waiting_.data();
  uint8_t* const mark = mark_.data();
  const TaskId* const started = started_.data();
  const TaskId* const completed = completed_.data();
  const size_t ns = s_at.size(), nc = c_at.size();
  const bool critical = options_.critical_path;
  for (uint64_t j = 1; j <= J; ++j) {
    const int64_t off = static_cast<int64_t>(j) * period;
    for (size_t i = 0; i < ns; ++i) {
      const TaskId to = shp[s_at[i]];
      start[to] = Duration::Picoseconds(start[started[i]].picoseconds() + off);
      waiting[to] = EventQueue::kAbsent;  // started: no event (Retrack places those queued)
      mark[to] = 2;
      if (critical) {
        if (enabler_at[i] != kNone) enabler_at[i] = shp[enabler_at[i]];
        enabler_[to] = enabler_at[i];
      }
      s_at[i] = to;
    }
    for (size_t i = 0; i < nc; ++i) {
      const TaskId to = shp[c_at[i]];
      end[to] = Duration::Picoseconds(end[completed[i]].picoseconds() + off);
      c_at[i] = to;
    }
    for (const auto& [l, moved] : moves_) tl_.link_bytes[l] += moved;
  }
  for (StreamId st = 0; st < tl_.busy.size(); ++st) {
    const int64_t per = (tl_.busy[st] - busy_then_[st]).picoseconds();
    tl_.busy[st] =
        Duration::Picoseconds(tl_.busy[st].picoseconds() + per * static_cast<int64_t>(J));
  }
  tl_.events += (tl_.events - events_then_) * J;
  tl_.moves += (tl_.moves - moves_then_) * J;
  done_ += completed_.size() * J;
  tl_.jumped_tasks += started_.size() * J;
  tl_.period_anchors = lag_;
  // The state: tasks waiting part-way, events, what runs, stream heads, flows.
  for (const auto& [t, w] : waits) {
    const TaskId to = ShiftBy(t, J);
    waiting_[to] = w;
    if (mark_[to] == 0) {
      mark_[to] = 1;
      frontier_.push_back(to);
    }
  }
  for (const auto& [t, w, fewer] : accumulators_) {
    waiting_[t] = w - fewer * static_cast<uint32_t>(J);
  }
  std::vector<TaskId> before;
  for (const Event& e : events_.items()) before.push_back(e.task());
  for (Event& e : events_.items()) {
    e.time += dt;
    e.packed = (e.packed & ~(uint64_t{kMaxTasks - 1} << 2)) | (uint64_t{ShiftBy(e.task(), J)} << 2);
  }
  events_.Retrack(before);
  for (Running& r : running_) {
    if (r.task == kNone) continue;
    r.task = ShiftBy(r.task, J);
    r.since += dt;
    r.done.due += dt;
  }
  for (StreamId st = 0; st < head_.size(); ++st) {
    if (stream_last_[st] != kNone) stream_last_[st] = ShiftBy(stream_last_[st], J);
    if (head_[st] >= q_offset_[st + 1]) continue;
    const TaskId to = ShiftBy(queue_[head_[st]], J);
    head_[st] = static_cast<uint32_t>(
        std::lower_bound(queue_.begin() + q_offset_[st], queue_.begin() + q_offset_[st + 1], to) -
        queue_.begin());
  }
  flows_.Relabel([&](TaskId t) { return ShiftBy(t, J); }, dt);
  now_ += dt;
}

template <bool kPeriodic>
StatusOr<Timeline> Replay<kPeriodic>::Run() {
  if (n_ >= kMaxTasks) {
    return InvalidArgument(
        fmt::format("the program has {} tasks; the engine replays at most {}", n_, kMaxTasks - 1));
  }
  for (StreamId s = 0; s < p_.num_streams(); ++s) TakeHead(s);
  DrainReady();
  while (!events_.empty()) {
    if (kPeriodic && snapshot_due_ && events_.top().time > now_) {
      // Every event of the anchor's time is handled: compare, and perhaps jump ahead.
      snapshot_due_ = false;
      AtAnchor();
      continue;
    }
    // The top leaves the queue when the first event its handling queues takes its place, or
    // after the handling when it queues none.
    const Event e = events_.top();
    pop_pending_ = true;
    now_ = e.time;
    ++tl_.events;
    if (seq_ >> 32) {
      return Internal(
          fmt::format("the replay passed {} events, more than the engine numbers", seq_));
    }
    Handle(e);
    // Tasks released by this event start now, in task order.
    if (!ready_.empty()) DrainReady();
    if (pop_pending_) {
      events_.pop();
      pop_pending_ = false;
    }
  }
  if (done_ != n_) return Deadlock();
  Finish();
  return std::move(tl_);
}

}  // namespace

double Timeline::LinkUtilisation(const Program& p, LinkId l) const {
  double cap = p.link_capacity(l) * makespan.seconds();
  return cap > 0 ? link_bytes[l] / cap : 0.0;
}

namespace {

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
    return f.latency.picoseconds() +
           std::max<int64_t>(0, static_cast<int64_t>(std::floor(move * 1e12)) - 1);
  }

  // The busiest link's bytes over its capacity, with the same floor as a flow's: a whole
  // picosecond below, against the engine's rounding.
  int64_t BusiestLinkPs() const {
    double link_s = 0;
    for (size_t l = 0; l < link_bytes_.size(); ++l) {
      if (capacity_[l] > 0) link_s = std::max(link_s, link_bytes_[l] / capacity_[l]);
    }
    return std::max<int64_t>(0, static_cast<int64_t>(std::floor(link_s * 1e12)) - 1);
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
    const int64_t end = start + shortest(t);
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
    const int64_t end = ready[t] + shortest(t);
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

namespace {

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
