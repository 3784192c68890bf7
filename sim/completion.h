// A task's completion whose time can move while it runs (a flow re-shared over its links, a
// kernel slowed while a collective runs beside it), queued without stale events.
//
// Every move is numbered by the replay as if its event were queued, but only a move to an
// earlier time queues one: a later one waits for the event already queued, which, when it fires
// without finishing the task, is queued again at the current time with the current number. The
// event that finishes the task so carries the (time, sequence) it would have had if every move
// were queued, and the replay's order of events is the same.
//
//   Completion c;
//   if (c.Move(at, seq)) queue(at, seq);          // the task's completion is now `at`
//   ... event (t, s) fires, but t != c.due:
//   if (c.Refire(s)) queue(c.due, c.seq);
#pragma once

#include <cstdint>
#include <limits>

namespace parasim::sim {

struct Completion {
  // The times first, then the numbers: 24 bytes without padding (a flow's state then fits in
  // one 64-byte cache line).
  int64_t due = -1;                                         // the current completion
  int64_t queued_at = std::numeric_limits<int64_t>::max();  // the event queued for it
  uint32_t seq = 0;                                         // due's sequence number
  uint32_t queued_seq = 0;                                  // queued_at's

  // The completion moves to `at`, numbered `s`: whether to queue an event for it now.
  bool Move(int64_t at, uint32_t s) {
    due = at;
    seq = s;
    if (at >= queued_at) return false;  // the queued event fires first and re-queues it
    queued_at = at;
    queued_seq = s;
    return true;
  }
  // The event numbered `fired` fired without finishing the task: whether it was the one
  // queued, and so (due, seq) is to be queued now.
  bool Refire(uint32_t fired) {
    if (fired != queued_seq) return false;  // stale: a later-queued earlier event took over
    queued_at = due;
    queued_seq = seq;
    return true;
  }
};

}  // namespace parasim::sim
