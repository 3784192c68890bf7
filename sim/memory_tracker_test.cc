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

}  // namespace
}  // namespace parasim::sim
