// The event queue against a sorted reference: pushes, pops and replace_top in random order
// (replace_top with keys below, between and above the heap's) keep the (time, sequence) order.
#include "sim/event_queue.h"

#include <doctest/doctest.h>

#include <random>
#include <set>
#include <utility>

namespace parasim::sim {
namespace {

using Key = std::pair<int64_t, uint64_t>;

Event Make(int64_t time, uint32_t seq, TaskId task) {
  return Event{time, uint64_t{seq} << 32 | uint64_t{task} << 2 | 1};
}

TEST_CASE("events leave in (time, sequence) order, the same number on the same time too") {
  EventQueue q;
  q.push(Make(5, 2, 7));
  q.push(Make(5, 1, 9));
  q.push(Make(3, 4, 1));
  CHECK(q.top().time == 3);
  q.pop();
  CHECK(q.top().seq() == 1);
  CHECK(q.top().task() == 9);
  CHECK(q.top().type() == EventType::kFlowBegin);
  // The event handled leaves as a later one enters: (5, 2) is now the least.
  q.replace_top(Make(6, 0, 3));
  CHECK(q.top().seq() == 2);
  q.pop();
  CHECK(q.top().time == 6);
  q.pop();
  CHECK(q.empty());
}

TEST_CASE("random pushes, pops and replacements match a sorted set") {
  std::mt19937_64 rng(20261126);
  EventQueue q;
  std::set<Key> ref;
  uint32_t seq = 0;
  int64_t now = 0;
  for (int step = 0; step < 200000; ++step) {
    const int op = static_cast<int>(rng() % 8);
    // Times from now on, often equal (ties broken by the sequence number), now and then earlier
    // than the least queued (replace_top must take any key).
    const int64_t time = now + static_cast<int64_t>(rng() % 50);
    const Event e = Make(time, seq++, static_cast<TaskId>(rng() % 1000));
    if (op < 4 || ref.empty()) {
      q.push(e);
      ref.insert({e.time, e.packed});
    } else if (op < 6) {
      REQUIRE(Key{q.top().time, q.top().packed} == *ref.begin());
      now = q.top().time;
      q.pop();
      ref.erase(ref.begin());
    } else {
      REQUIRE(Key{q.top().time, q.top().packed} == *ref.begin());
      now = q.top().time;
      ref.erase(ref.begin());
      q.replace_top(e);
      ref.insert({e.time, e.packed});
    }
    REQUIRE(q.items().size() == ref.size());
  }
  while (!ref.empty()) {
    REQUIRE(Key{q.top().time, q.top().packed} == *ref.begin());
    q.pop();
    ref.erase(ref.begin());
  }
  CHECK(q.empty());
}

}  // namespace
}  // namespace parasim::sim
