#include "sim/replay_state.h"

#include <doctest/doctest.h>

namespace parasim::sim {
namespace {

TEST_CASE("a fresh replay state: each task waits for its dependencies and its streams") {
  Program p;
  TableCost cost;
  const uint32_t r0 = p.AddRank("r0"), r1 = p.AddRank("r1");
  const StreamId s0 = p.AddStream(r0, "compute", StreamRole::kCompute);
  const StreamId s1 = p.AddStream(r1, "comm", StreamRole::kCommunication);
  const StreamId empty = p.AddStream(r1, "empty");
  p.AddLink("nic", Bandwidth::GBps(1));
  auto task = [&](StreamId s) { return p.AddCompute(s, cost.AddCompute(Duration::Zero()), 0, 0); };
  const TaskId a = task(s0), b = task(s1), c = task(s0);
  p.AddDep(a, b);
  p.AddDep(a, c);
  p.AddDep(b, c);
  p.AddStreamToTask(c, s1);
  p.Finalize();

  ReplayState s(p, {});
  CHECK(s.waiting[a] == 1);  // its stream
  CHECK(s.waiting[b] == 2);  // a, its stream
  CHECK(s.waiting[c] == 4);  // a, b, and both streams it holds
  CHECK(s.Head(s0) == a);
  CHECK(s.Head(s1) == b);
  CHECK(s.Head(empty) == kNone);
  CHECK(s.stream_last[s0] == kNone);
  CHECK(s.now == 0);
  CHECK(s.done == 0);
  CHECK(s.events.empty());
  CHECK(s.tl.start.size() == 3);
  CHECK(s.tl.busy.size() == 3);
  CHECK(s.tl.peak_memory.size() == 2);
  CHECK(s.tl.link_bytes.size() == 1);
  CHECK(s.enabler.size() == 3);  // the critical path is asked for by default
  CHECK(s.comm_running.size() == 2);
  CHECK(s.running.size() == 3);
  CHECK(s.state_bytes() > 0);

  ReplayState plain(p, {.critical_path = false});
  CHECK(plain.enabler.empty());
}

}  // namespace
}  // namespace parasim::sim
