#include "sim/memory_tracker.h"

#include <doctest/doctest.h>

namespace parasim::sim {
namespace {

TEST_CASE("memory events apply at their task's start or end; the peak and its time are kept") {
  Program p;
  const uint32_t r = p.AddRank("r");
  const StreamId s = p.AddStream(r, "compute");
  const TaskId a = p.AddCompute(s, 0, 0, p.Intern("a"));
  const TaskId b = p.AddCompute(s, 0, 0, p.Intern("b"));
  p.AddMemory(a, r, Bytes::GiB(2), MemoryAt::kStart);
  p.AddMemory(a, r, Bytes::GiB(-1), MemoryAt::kEnd);
  p.AddMemory(b, r, Bytes::GiB(3), MemoryAt::kStart);
  p.Finalize();
  Timeline tl;
  tl.peak_memory.assign(1, 0.0);
  tl.peak_time.assign(1, Duration::Zero());
  MemoryTracker mem(p, /*record=*/true, &tl);
  mem.Apply(a, MemoryAt::kStart, 10);
  mem.Apply(a, MemoryAt::kEnd, 20);
  CHECK(tl.peak_memory[0] == Bytes::GiB(2).bytes());
  CHECK(tl.peak_time[0] == Duration::Picoseconds(10));
  mem.Apply(b, MemoryAt::kStart, 30);
  CHECK(tl.peak_memory[0] == Bytes::GiB(4).bytes());
  CHECK(tl.peak_time[0] == Duration::Picoseconds(30));
  CHECK(tl.memory.size() == 3);
  mem.Apply(b, MemoryAt::kEnd, 40);  // no event at b's end
  CHECK(tl.memory.size() == 3);
}

TEST_CASE("every task finds its own events, however many share its block of tasks") {
  // 200 tasks: every third has none, the others 1-13 events (about 300 in a block of 64 tasks,
  // past the 254 a byte offset reaches).
  Program p;
  const uint32_t r = p.AddRank("r");
  const StreamId s = p.AddStream(r, "compute");
  std::vector<TaskId> tasks;
  std::vector<double> expect;
  for (int i = 0; i < 200; ++i) {
    const TaskId t = p.AddCompute(s, 0, 0, p.Intern("t"));
    tasks.push_back(t);
    const int n = i % 3 == 0 ? 0 : 1 + i % 13;
    for (int k = 0; k < n; ++k) p.AddMemory(t, r, Bytes(1 + i), MemoryAt::kStart);
    expect.push_back(static_cast<double>(n) * (1 + i));
  }
  p.Finalize();
  Timeline tl;
  tl.peak_memory.assign(1, 0.0);
  tl.peak_time.assign(1, Duration::Zero());
  MemoryTracker mem(p, /*record=*/true, &tl);
  double total = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    CAPTURE(i);
    const size_t before = tl.memory.size();
    mem.Apply(tasks[i], MemoryAt::kStart, static_cast<int64_t>(i));
    total += expect[i];
    CHECK(tl.memory.size() - before == static_cast<size_t>(expect[i] / (1 + i)));
    CHECK(tl.peak_memory[0] == total);
  }
}

}  // namespace
}  // namespace parasim::sim
