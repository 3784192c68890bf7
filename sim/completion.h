// A task's completion whose time can move while it runs (a flow re-shared over its links, a
// kernel slowed while a collective runs beside it).
//
// Every move is numbered by the replay (the next sequence number) and the task's one queued
// event is moved in place to (due, seq) (EventQueue::move): the queue never holds a stale event,
// and the order of events is (time, number of the move that set it).
//
//   Completion c{at, seq};   // the task's completion is now `at`, its event numbered `seq`
#pragma once

#include <cstdint>

namespace parasim::sim {

struct Completion {
  int64_t due = -1;  // when the task completes, as things stand
  uint32_t seq = 0;  // the number of the move that set it: its event's
};

}  // namespace parasim::sim
