// The steady-state jump (RunOptions::shift and anchors): at each anchor the replay's state is
// compared with the one it had a period before; when the two are the same but for the shift
// and the time between them, and the program has the same shape over the periods ahead, those
// periods' tasks are placed from the one just replayed and the state moves on as many periods.
// The timeline is the full replay's, bit for bit (sim/steady_state_test.cc checks it).
//
//   SteadyState steady(&state, options);  // looks for a period when options ask and allow it
//   // in the event loop, while steady.looking():
//   steady.Started(t);  steady.Touched(t);  steady.Completed(t);  steady.StartedTogether(b, e);
//   if (steady.anchor_due() && next_event_time > state.now) steady.AtAnchor();  // may jump
//
// The loop calls the hooks (inline here: they run for every task of a periodic replay); the
// comparison and the jump (sim/steady_state.cc) run once per anchor.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/huge_pages.h"
#include "sim/program.h"
#include "sim/replay_state.h"
#include "sim/timeline.h"

namespace parasim::sim {

class SteadyState {
 public:
  // Looks for a period only with both RunOptions::shift and anchors, a shift of one entry per
  // task, no memory recorded and no task on several streams; `state` is the replay's, which
  // the jump moves (it outlives this).
  SteadyState(ReplayState* state, const RunOptions& options);
  SteadyState(const SteadyState&) = delete;
  SteadyState& operator=(const SteadyState&) = delete;

  // Whether it still looks (a jump made, or no period found, and it stops for good).
  bool looking() const { return looking_; }
  // An anchor has started since the last comparison.
  bool anchor_due() const { return due_; }

  // Hooks of the event loop, while looking(). Task t started:
  void Started(TaskId t) {
    mark_[t] = 2;
    started_.push_back(t);
    const std::vector<TaskId>& anchors = *anchors_;
    if (next_anchor_ < anchors.size() && anchors[next_anchor_] == t) {
      due_ = true;
      ++next_anchor_;
    }
  }
  // One of t's dependencies or streams is done.
  void Touched(TaskId t) {
    if (mark_[t] == 0) {
      mark_[t] = 1;
      frontier_.push_back(t);
      period_touched_.push_back(t);
    }
  }
  void Completed(TaskId t) { completed_.push_back(t); }
  // Tasks started at once, in task order: the shift must keep their order.
  void StartedTogether(const TaskId* first, const TaskId* last) {
    batches_.push_back(kNone);
    batches_.insert(batches_.end(), first, last);
  }

  // Every event of the anchor's time is handled: compares the state with the one a period
  // before, and perhaps jumps ahead (the state's time, events, stream heads and timeline move).
  void AtAnchor();

 private:
  // The state at an anchor, written with the tasks apart (compared through the shift) from
  // everything else (compared as is: times relative to the snapshot's, sequence numbers by
  // rank, doubles by their bits).
  struct Snapshot {
    int64_t time = 0;
    std::vector<int64_t> nums;
    std::vector<TaskId> tasks;
    // The frontier: compared as a set, sorted only when the rest matches (it can be long).
    std::vector<std::pair<TaskId, uint32_t>> waits;
  };
  void TakeSnapshot(Snapshot* s);
  static uint64_t Hash(const Snapshot& s);
  // Whether `cur` is the last snapshot moved a period on by the shift (sorts both frontiers,
  // and finds the tasks the period left alone and the accumulators among them).
  bool Repeats(Snapshot* cur);
  bool SameTasks(const Snapshot& cur, const std::vector<TaskId>& period);
  bool SameWaits(const Snapshot& cur, const std::vector<TaskId>& period);
  // The task that plays a's part a period on: its successor by shift, else a itself (a task
  // of the state left alone, which the period must not have started or finished: else *same
  // becomes false).
  TaskId Expect(TaskId a, const std::vector<TaskId>& period, bool* same);
  // Keeps the snapshot's hash; the nearest earlier anchor but the last with the same one (0:
  // none), and whether the frontier keeps growing.
  uint32_t RepeatLag(const Snapshot& cur);
  // The snapshot starts the next period compared.
  void BeginPeriod(Snapshot cur);
  void BuildChains();
  // How many periods ahead the replay may place, from the state one period ago (`prev`).
  uint64_t Reach(const Snapshot& prev);
  void Jump(uint64_t periods, int64_t period);
  // The steps of the jump: the periods' tasks placed, the counts added up, the state moved.
  void PlacePeriods(uint64_t periods, int64_t period);
  void AddUpPeriods(uint64_t periods);
  void MoveState(uint64_t periods, int64_t dt,
                 const std::vector<std::pair<TaskId, uint32_t>>& waits);
  void StopLooking() {
    looking_ = false;
    s_.flows.LogMoves(nullptr);
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

  ReplayState& s_;
  const size_t n_;
  const HugePageVector<TaskId>* const given_;  // RunOptions::shift
  const std::vector<TaskId>* const anchors_;
  const bool critical_path_;
  bool looking_ = false;
  bool due_ = false;
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

}  // namespace parasim::sim
