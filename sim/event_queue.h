// The replay's queue of events: a 4-ary min-heap ordered by (time, sequence number).
//
//   EventQueue q;
//   q.push(Event{time_ps, uint64_t{seq} << 32 | uint64_t{task} << 2 | type});
//   const Event e = q.top();
//   q.replace_top(next);   // or q.pop(): e leaves, `next` enters, in one pass down
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
// cache line. The replay's hottest structure (each event is pushed and popped once).
class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.front(); }
  void push(Event e) {
    heap_.push_back(e);
    RiseFrom(heap_.size() - 1, e);
  }
  // Floyd's pop: the hole at the root goes down the smallest children to a leaf without
  // comparing with the last event, which then rises from there; the last event of a heap
  // belongs near the bottom, so this saves most of the comparisons a sift-down makes.
  void pop() {
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n == 0) return;
    size_t i = 0;
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      const size_t best = LeastChild(first, n).first;
      heap_[i] = heap_[best];
      i = best;
    }
    RiseFrom(i, last);
  }
  // A pop and a push at once: e takes the top's place and sinks from the root (one pass down
  // where the pop and the push would take a pass down and two up). Any valid heap pops events
  // in the same order: their keys are distinct.
  void replace_top(Event e) {
    const size_t n = heap_.size();
    const unsigned __int128 ke = e.key();
    size_t i = 0;
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      const auto [best, least] = LeastChild(first, n);
      if (!(least < ke)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }
  size_t capacity_bytes() const { return heap_.capacity() * sizeof(Event); }
  // The events in heap order. A change that moves every event's time by the same amount and
  // keeps each one's sequence number keeps the order (the periodic jump's).
  std::vector<Event>& items() { return heap_; }

 private:
  // Event e, placed at the hole i, rises past the parents it comes before.
  void RiseFrom(size_t i, Event e) {
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!(e < heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
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
};

}  // namespace parasim::sim
