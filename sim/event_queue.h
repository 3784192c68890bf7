// The replay's queue of events: a 4-ary min-heap ordered by (time, sequence number), which
// knows where each task's event sits (a task has one event queued at most), so that a
// completion that moves is moved in place rather than queued again beside a stale one.
//
//   EventQueue q;
//   q.Track(place);   // one word per task, where the queue writes each queued task's place
//   q.push(Event{time_ps, uint64_t{seq} << 32 | uint64_t{task} << 2 | type});
//   const Event e = q.top();
//   q.replace_top(next);          // or q.pop(): e leaves, `next` enters, in one pass down
//   q.move(q.place(task), ev);    // task's event becomes ev (a later or earlier time)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/program.h"

namespace parasim::sim {

enum class EventType : uint8_t { kComplete, kFlowBegin, kFlowDone };

// An event is 16 bytes: its time in picoseconds, then its sequence number (32 bits), task (30)
// and type (2) packed so that comparing (time, packed) orders events by (time, sequence), the
// rule that makes a replay deterministic. Program sizes and event counts are checked against
// these widths (Replay::Run).
inline constexpr uint32_t kMaxTasks = 1u << 30;
struct Event {
  int64_t time;
  uint64_t packed;  // sequence << 32 | task << 2 | type
  uint32_t seq() const { return static_cast<uint32_t>(packed >> 32); }
  TaskId task() const { return static_cast<TaskId>(packed >> 2) & (kMaxTasks - 1); }
  EventType type() const { return static_cast<EventType>(packed & 3); }
  bool operator<(const Event& o) const {
    return time != o.time ? time < o.time : packed < o.packed;
  }
  // The same order as one unsigned 128-bit number (times are never negative), for a compare
  // without a branch in the heap's pop.
  unsigned __int128 key() const {
    return static_cast<unsigned __int128>(static_cast<uint64_t>(time)) << 64 | packed;
  }
};

// A 4-ary min-heap of events: half the depth of a binary heap, and a node's children share a
// cache line. The replay's hottest structure (each event is pushed and popped once, and moved
// as often as its task's completion moves).
class EventQueue {
 public:
  static constexpr uint32_t kAbsent = ~0u;
  // Where the queue writes each task's place (one word per task, the owner's; each task has at
  // most one event queued at a time, and its word is read only while it has one).
  void Track(uint32_t* place) { place_ = place; }
  // Where task t's event sits in the heap (0: the top), or kAbsent.
  uint32_t place(TaskId t) const { return place_[t]; }
  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.front(); }
  void push(Event e) {
    heap_.emplace_back();
    RiseFrom(heap_.size() - 1, e);
  }
  // The event at place i becomes e (the same task's, at another time or number): it rises or
  // sinks from there.
  void move(uint32_t i, Event e) {
    if (e < heap_[i]) {
      RiseFrom(i, e);
    } else {
      SinkFrom(i, e);
    }
  }
  // Floyd's pop: the hole at the root goes down the smallest children to a leaf without
  // comparing with the last event, which then rises from there; the last event of a heap
  // belongs near the bottom, so this saves most of the comparisons a sift-down makes.
  void pop() {
    place_[heap_[0].task()] = kAbsent;
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n == 0) return;
    size_t i = 0;
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      const size_t best = LeastChild(first, n).first;
      Put(i, heap_[best]);
      i = best;
    }
    RiseFrom(i, last);
  }
  // A pop and a push at once: e takes the top's place and sinks from the root (one pass down
  // where the pop and the push would take a pass down and two up). Any valid heap pops events
  // in the same order: their keys are distinct.
  void replace_top(Event e) {
    place_[heap_[0].task()] = kAbsent;
    SinkFrom(0, e);
  }
  size_t capacity_bytes() const { return heap_.capacity() * sizeof(Event); }
  // The events in heap order. A change that moves every event's time by the same amount and
  // keeps each one's sequence number keeps the order (the periodic jump's); Retrack() after a
  // change of their tasks.
  std::vector<Event>& items() { return heap_; }
  void Retrack(const std::vector<TaskId>& before) {
    for (TaskId t : before) place_[t] = kAbsent;
    for (size_t i = 0; i < heap_.size(); ++i) place_[heap_[i].task()] = static_cast<uint32_t>(i);
  }

 private:
  void Put(size_t i, Event e) {
    heap_[i] = e;
    place_[e.task()] = static_cast<uint32_t>(i);
  }
  // Event e, placed at the hole i, sinks past the children that come before it.
  void SinkFrom(size_t i, Event e) {
    const size_t n = heap_.size();
    const unsigned __int128 ke = e.key();
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      const auto [best, least] = LeastChild(first, n);
      if (!(least < ke)) break;
      Put(i, heap_[best]);
      i = best;
    }
    Put(i, e);
  }
  // Event e, placed at the hole i, rises past the parents it comes before.
  void RiseFrom(size_t i, Event e) {
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!(e < heap_[parent])) break;
      Put(i, heap_[parent]);
      i = parent;
    }
    Put(i, e);
  }
  // The least of the children from `first` (up to four, within n) and its key, chosen by
  // conditional moves rather than branches: which child is least is not predictable.
  std::pair<size_t, unsigned __int128> LeastChild(size_t first, size_t n) const {
    size_t best = first;
    unsigned __int128 least = heap_[first].key();
    const size_t end = std::min(first + 4, n);
    for (size_t c = first + 1; c < end; ++c) {
      const unsigned __int128 k = heap_[c].key();
      const bool less = k < least;
      best = less ? c : best;
      least = less ? k : least;
    }
    return {best, least};
  }
  std::vector<Event> heap_;
  uint32_t* place_ = nullptr;  // per task (Track)
};

}  // namespace parasim::sim
