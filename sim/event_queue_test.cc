// The event queue against a sorted reference: pushes, pops, replace_top and in-place moves in
// random order (with keys below, between and above the heap's) keep the (time, sequence) order,
// and every queued task's place is where its event sits.
#include "sim/event_queue.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace parasim::sim {
namespace {

using Key = std::pair<int64_t, uint64_t>;

Event Make(int64_t time, uint32_t seq, TaskId task) {
  return Event{time, uint64_t{seq} << 32 | uint64_t{task} << 2 | 1};
}

TEST_CASE("events leave in (time, sequence) order, the same number on the same time too") {
  std::vector<uint32_t> place(16, EventQueue::kAbsent);
  EventQueue q;
  q.Track(place.data());
  q.push(Make(5, 2, 7));
  q.push(Make(5, 1, 9));
  q.push(Make(3, 4, 1));
  CHECK(q.top().time == 3);
  CHECK(place[1] == 0);
  q.pop();
  CHECK(place[1] == EventQueue::kAbsent);
  CHECK(q.top().seq() == 1);
  CHECK(q.top().task() == 9);
  CHECK(q.top().type() == EventType::kFlowBegin);
  // The event handled leaves as a later one enters: (5, 2) is now the least.
  q.replace_top(Make(6, 0, 3));
  CHECK(place[9] == EventQueue::kAbsent);
  CHECK(q.top().seq() == 2);
  // Task 3's event moves in place, before task 7's and back after it.
  q.move(place[3], Make(4, 5, 3));
  CHECK(q.top().task() == 3);
  q.move(place[3], Make(6, 6, 3));
  CHECK(q.top().task() == 7);
  q.pop();
  CHECK(q.top().time == 6);
  CHECK(q.top().seq() == 6);
  q.pop();
  CHECK(q.empty());
  for (uint32_t at : place) CHECK(at == EventQueue::kAbsent);
}

TEST_CASE("random pushes, pops, replacements and moves match a sorted set") {
  std::mt19937_64 rng(20261126);
  constexpr TaskId kTasks = 4096;
  std::vector<uint32_t> place(kTasks, EventQueue::kAbsent);
  EventQueue q;
  q.Track(place.data());
  std::set<Key> ref;
  std::vector<Key> of(kTasks);  // each queued task's key
  std::vector<TaskId> free_tasks, queued;
  for (TaskId t = 0; t < kTasks; ++t) free_tasks.push_back(kTasks - 1 - t);
  auto take = [&]() {
    const TaskId t = free_tasks.back();
    free_tasks.pop_back();
    return t;
  };
  auto forget = [&](TaskId t) {
    queued.erase(std::find(queued.begin(), queued.end(), t));
    free_tasks.push_back(t);
  };
  uint32_t seq = 0;
  int64_t now = 0;
  for (int step = 0; step < 200000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    // Times from now on, often equal (ties broken by the sequence number), now and then earlier
    // than the least queued (replace_top and move must take any key).
    const int64_t time = now + static_cast<int64_t>(rng() % 50);
    if ((op < 4 || ref.empty()) && !free_tasks.empty()) {
      const Event e = Make(time, seq++, take());
      q.push(e);
      ref.insert({e.time, e.packed});
      of[e.task()] = {e.time, e.packed};
      queued.push_back(e.task());
    } else if (op < 6 && !ref.empty()) {
      REQUIRE(Key{q.top().time, q.top().packed} == *ref.begin());
      now = q.top().time;
      forget(q.top().task());
      q.pop();
      ref.erase(ref.begin());
    } else if (op < 8 && !ref.empty() && !free_tasks.empty()) {
      REQUIRE(Key{q.top().time, q.top().packed} == *ref.begin());
      now = q.top().time;
      forget(q.top().task());
      ref.erase(ref.begin());
      const Event e = Make(time, seq++, take());
      q.replace_top(e);
      ref.insert({e.time, e.packed});
      of[e.task()] = {e.time, e.packed};
      queued.push_back(e.task());
    } else if (!queued.empty()) {
      const TaskId t = queued[rng() % queued.size()];
      const Event e = Make(time, seq++, t);
      REQUIRE(place[t] != EventQueue::kAbsent);
      q.move(place[t], e);
      ref.erase(of[t]);
      ref.insert({e.time, e.packed});
      of[t] = {e.time, e.packed};
    }
    REQUIRE(q.items().size() == ref.size());
    if (step % 1000 == 0) {
      for (size_t i = 0; i < q.items().size(); ++i) REQUIRE(place[q.items()[i].task()] == i);
    }
  }
  while (!ref.empty()) {
    REQUIRE(Key{q.top().time, q.top().packed} == *ref.begin());
    q.pop();
    ref.erase(ref.begin());
  }
  CHECK(q.empty());
  for (uint32_t at : place) CHECK(at == EventQueue::kAbsent);
}

}  // namespace
}  // namespace parasim::sim
