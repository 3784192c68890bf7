// The state of one replay of a finalized program: what its event loop (sim/engine.cc) advances,
// what the steady-state jump (sim/steady_state.h) compares at each anchor and moves periods on,
// and what the deadlock report (sim/deadlock.h) reads when the events run out early.
//
//   ReplayState s(program, options);         // every task waiting, every stream at its head
//   s.waiting[t] == 0                        // t may start: its dependencies and streams are done
//   s.Head(stream)                           // the task the stream runs next (kNone: none left)
//   s.tl.start[t], s.tl.end[t]               // the timeline so far
//
// Plain data with its layout: the loop and the jump share it, and each keeps the rules it owns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/completion.h"
#include "sim/event_queue.h"
#include "sim/flow_network.h"
#include "sim/huge_pages.h"
#include "sim/memory_tracker.h"
#include "sim/program.h"
#include "sim/timeline.h"

namespace parasim::sim {

// A compute task running on a compute-role stream (sim/program.h, StreamRole), whose pace
// changes while communication runs on its rank.
struct Running {
  TaskId task = kNone;
  int64_t since = 0;  // when `left` was counted
  double left = 0;    // work left, picoseconds at its rate alone
  double factor = 1;  // how much slower it runs now
  Completion done;    // its current completion, queued
};

struct ReplayState {
  // Lays out the per-task state of a finalized program: the timeline's vectors, each task's
  // count of what it waits for, the stream queues (sim/stream_queues.h) at their heads.
  ReplayState(const Program& program, const RunOptions& options);
  ReplayState(const ReplayState&) = delete;
  ReplayState& operator=(const ReplayState&) = delete;

  // The task stream s runs next, kNone when it has run them all.
  TaskId Head(StreamId s) const { return head[s] < q_offset[s + 1] ? queue[head[s]] : kNone; }
  // Bytes of the vectors' capacities (Timeline::state_bytes, with the loop's own).
  size_t state_bytes() const;

  const Program& p;
  Timeline tl;
  int64_t now = 0;   // picoseconds
  uint64_t seq = 0;  // the next event's sequence number
  size_t done = 0;   // tasks completed
  // Until a task starts, what it still waits for: its dependencies not done, plus the streams
  // it needs (its own and any extra ones) whose head it is not yet. From its start, the same
  // word is its event's place in the queue (EventQueue::Track), kAbsent when it has none.
  HugePageVector<uint32_t> waiting;
  // Stream queues in issue order (compressed rows) and each stream's head.
  std::vector<uint32_t> q_offset, head;
  HugePageVector<TaskId> queue;
  std::vector<TaskId> stream_last;  // the task each stream ran last (kNone: none yet)
  // The task whose completion released each task last (dependency or stream predecessor):
  // events come in time order, so the last release is the one that set the start time. Empty
  // without RunOptions::critical_path.
  HugePageVector<TaskId> enabler;
  EventQueue events;
  // Contention: running communication tasks per rank, and what runs on each compute stream.
  std::vector<uint32_t> comm_running;
  std::vector<Running> running;  // per stream
  MemoryTracker memory;
  FlowNetwork flows;
};

}  // namespace parasim::sim
