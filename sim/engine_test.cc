// Engine tests with analytic answers.
#include "sim/engine.h"

#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <vector>

#include "sim/engine_fixture.h"
#include "sim/trace.h"

namespace parasim::sim {
namespace {

TEST_CASE("a chain adds up, a fan-in waits for the slowest") {
  Fixture f;
  TaskId a = f.Compute(f.s0, 1);
  TaskId b = f.Compute(f.s0, 2);
  TaskId c = f.Compute(f.s1, 5);
  TaskId d = f.Compute(f.s0, 1);
  f.p.AddDep(a, b);
  f.p.AddDep(c, d);  // d waits for c (5 ms) though its stream is free at 3 ms
  Timeline tl = f.Run();
  CHECK(tl.start[b] == Ms(1));
  CHECK(tl.end[b] == Ms(3));
  CHECK(tl.start[d] == Ms(5));
  CHECK(tl.makespan == Ms(6));
  CHECK(tl.busy[f.s0] == Ms(4));
  CHECK(tl.busy[f.s1] == Ms(5));
}

TEST_CASE("two streams overlap; one stream serialises in issue order") {
  Fixture f;
  f.Compute(f.s0, 10);
  f.Compute(f.s1, 4);
  f.Compute(f.s0, 10);
  Timeline tl = f.Run();
  CHECK(tl.makespan == Ms(20));  // the 4 ms on the comm stream hides under compute
}

TEST_CASE("compute slows while a communication kernel runs beside it on its rank") {
  Program p;
  TableCost cost;
  uint32_t r0 = p.AddRank("r0"), r1 = p.AddRank("r1");
  StreamId compute = p.AddStream(r0, "compute", StreamRole::kCompute);
  StreamId comm = p.AddStream(r0, "dp", StreamRole::kCommunication);
  StreamId other = p.AddStream(r0, "host");
  StreamId compute1 = p.AddStream(r1, "compute", StreamRole::kCompute);
  auto add = [&](StreamId s, double ms, double slow = 1.0) {
    return p.AddCompute(s, cost.AddCompute(Ms(ms), slow), 0, p.Intern("t"));
  };
  TaskId gemm = add(compute, 10, 1.5);
  TaskId wait = add(other, 2);
  TaskId collective = add(comm, 4);
  p.AddDep(wait, collective);  // the collective runs from 2 to 6 ms
  TaskId elsewhere = add(compute1, 10, 1.5);
  TaskId after = add(compute, 3, 1.5);
  Engine e;
  auto tl = e.Run(p, cost);
  REQUIRE(tl.ok());
  // 2 ms alone, 4 ms at 1/1.5 of its rate (2.667 ms of work), the last 5.333 ms alone.
  CHECK(tl->end[gemm].milliseconds() == doctest::Approx(2 + 4 + 16.0 / 3).epsilon(1e-9));
  CHECK(tl->end[collective] == Ms(6));
  CHECK(tl->end[elsewhere] == Ms(10));  // another rank is not slowed
  CHECK(tl->start[after] == tl->end[gemm]);
  CHECK((tl->end[after] - tl->start[after]) == Ms(3));  // starts after the collective ended

  SUBCASE("a kernel that does not slow (factor 1) keeps its time") {
    Program q;
    TableCost c2;
    uint32_t r = q.AddRank("r");
    StreamId qc = q.AddStream(r, "compute", StreamRole::kCompute);
    StreamId qm = q.AddStream(r, "dp", StreamRole::kCommunication);
    TaskId k = q.AddCompute(qc, c2.AddCompute(Ms(5)), 0, q.Intern("k"));
    q.AddCompute(qm, c2.AddCompute(Ms(3)), 0, q.Intern("c"));
    auto t2 = e.Run(q, c2);
    REQUIRE(t2.ok());
    CHECK(t2->end[k] == Ms(5));
  }
}

TEST_CASE("two flows sharing one link each get half the bandwidth") {
  Fixture f;
  LinkId link = f.p.AddLink("nic", Bandwidth::GBps(10));
  RouteId r = f.p.AddRoute({link});
  StreamId s2 = f.p.AddStream(f.rank, "comm2");
  // 1 GB each at 10 GB/s alone would take 100 ms; sharing, both finish at 200 ms.
  uint32_t k = f.cost.AddFlow({Duration::Zero(), Bytes::GB(1)});
  TaskId x = f.p.AddFlow(f.s1, k, 1, f.p.Intern("x"), r);
  TaskId y = f.p.AddFlow(s2, k, 1, f.p.Intern("y"), r);
  Timeline tl = f.Run();
  CHECK(tl.end[x].milliseconds() == doctest::Approx(200).epsilon(1e-9));
  CHECK(tl.end[y].milliseconds() == doctest::Approx(200).epsilon(1e-9));
  CHECK(tl.link_bytes[link] == doctest::Approx(2e9));
  CHECK(tl.LinkUtilisation(f.p, link) == doctest::Approx(1.0));
}

TEST_CASE("a flow joining late slows the first only while both run") {
  Fixture f;
  LinkId link = f.p.AddLink("nic", Bandwidth::GBps(10));
  RouteId r = f.p.AddRoute({link});
  StreamId s2 = f.p.AddStream(f.rank, "comm2");
  TaskId wait = f.Compute(s2, 50);
  uint32_t big = f.cost.AddFlow({Duration::Zero(), Bytes::GB(1)});
  uint32_t small = f.cost.AddFlow({Duration::Microseconds(0), Bytes::GB(0.25)});
  TaskId x = f.p.AddFlow(f.s1, big, 1, f.p.Intern("x"), r);
  TaskId y = f.p.AddFlow(s2, small, 1, f.p.Intern("y"), r);
  f.p.AddDep(wait, y);
  Timeline tl = f.Run();
  // x alone for 50 ms (0.5 GB); then both at 5 GB/s: y's 0.25 GB takes 50 ms (to 100 ms),
  // x moves 0.25 GB meanwhile; x's last 0.25 GB alone takes 25 ms: 125 ms.
  CHECK(tl.end[y].milliseconds() == doctest::Approx(100).epsilon(1e-9));
  CHECK(tl.end[x].milliseconds() == doctest::Approx(125).epsilon(1e-9));
}

TEST_CASE("a flow slowed and sped up again and again finishes once, when its bytes are moved") {
  // The replay queues a completion only when it comes earlier; a later one is re-queued when
  // the earlier event fires (sim/completion.h). x's completion moves four times here.
  Fixture f;
  LinkId link = f.p.AddLink("nic", Bandwidth::GBps(10));
  RouteId r = f.p.AddRoute({link});
  StreamId s2 = f.p.AddStream(f.rank, "comm2");
  uint32_t big = f.cost.AddFlow({Duration::Zero(), Bytes::GB(1)});
  uint32_t small = f.cost.AddFlow({Duration::Zero(), Bytes::GB(0.1)});
  TaskId x = f.p.AddFlow(f.s1, big, 1, f.p.Intern("x"), r);
  f.Compute(s2, 10);
  TaskId y1 = f.p.AddFlow(s2, small, 1, f.p.Intern("y1"), r);
  f.Compute(s2, 10);
  TaskId y2 = f.p.AddFlow(s2, small, 1, f.p.Intern("y2"), r);
  Timeline tl = f.Run();
  // x alone to 10 ms (0.1 GB); with y1 at 5 GB/s each to 30 ms (0.2); alone to 40 ms (0.3);
  // with y2 to 60 ms (0.4); its last 0.6 GB alone: 120 ms.
  CHECK(tl.end[y1].milliseconds() == doctest::Approx(30).epsilon(1e-9));
  CHECK(tl.end[y2].milliseconds() == doctest::Approx(60).epsilon(1e-9));
  CHECK(tl.end[x].milliseconds() == doctest::Approx(120).epsilon(1e-9));
  CHECK(tl.link_bytes[link] == doctest::Approx(1.2e9));
}

TEST_CASE("compute slowed by two collectives in turn finishes once, at its work's end") {
  Program p;
  TableCost cost;
  uint32_t r0 = p.AddRank("r0");
  StreamId compute = p.AddStream(r0, "compute", StreamRole::kCompute);
  StreamId comm = p.AddStream(r0, "dp", StreamRole::kCommunication);
  StreamId host = p.AddStream(r0, "host");
  auto add = [&](StreamId s, double ms, double slow = 1.0) {
    return p.AddCompute(s, cost.AddCompute(Ms(ms), slow), 0, p.Intern("t"));
  };
  TaskId gemm = add(compute, 30, 1.5);
  TaskId next = add(compute, 1, 1.5);
  TaskId w1 = add(host, 5), w2 = add(host, 10);
  TaskId c1 = add(comm, 5), c2 = add(comm, 5);
  p.AddDep(w1, c1);  // 5 to 10 ms
  p.AddDep(w2, c2);  // 15 to 20 ms
  Engine e;
  auto tl = e.Run(p, cost);
  REQUIRE(tl.ok());
  // Work done: 5 ms alone, 5/1.5 slowed, 5 alone, 5/1.5 slowed (16.667 ms of 30 by 20 ms),
  // then 13.333 ms alone: 33.333 ms.
  CHECK(tl->end[c2] == Ms(20));
  CHECK(tl->end[gemm].milliseconds() == doctest::Approx(20 + 40.0 / 3).epsilon(1e-9));
  CHECK(tl->start[next] == tl->end[gemm]);
  CHECK((tl->end[next] - tl->start[next]) == Ms(1));
}

TEST_CASE("flow latency is paid before the bytes move") {
  Fixture f;
  LinkId link = f.p.AddLink("nvlink", Bandwidth::GBps(100));
  uint32_t k = f.cost.AddFlow({Duration::Microseconds(10), Bytes::GB(1)});
  TaskId x = f.p.AddFlow(f.s1, k, 1, f.p.Intern("x"), f.p.AddRoute({link}));
  Timeline tl = f.Run();
  CHECK(tl.end[x].milliseconds() == doctest::Approx(10.01).epsilon(1e-9));
}

TEST_CASE("memory peaks at the right moment") {
  Fixture f;
  TaskId a = f.Compute(f.s0, 1);
  TaskId b = f.Compute(f.s0, 1);
  TaskId c = f.Compute(f.s0, 1);
  f.p.AddMemory(a, f.rank, Bytes::GB(2), MemoryAt::kStart);
  f.p.AddMemory(b, f.rank, Bytes::GB(3), MemoryAt::kStart);
  f.p.AddMemory(b, f.rank, Bytes::GB(-2), MemoryAt::kEnd);
  f.p.AddMemory(c, f.rank, Bytes::GB(1), MemoryAt::kStart);
  Timeline tl = f.Run({.record_memory = true});
  CHECK(tl.peak_memory[f.rank] == doctest::Approx(5e9));
  CHECK(tl.peak_time[f.rank] == Ms(1));
  CHECK(tl.memory.size() == 4);
  CHECK(tl.memory.back().bytes == doctest::Approx(4e9));
}

TEST_CASE("critical path of a known graph") {
  Fixture f;
  TaskId a = f.Compute(f.s0, 1, "a");
  TaskId b = f.Compute(f.s1, 10, "b");
  TaskId c = f.Compute(f.s0, 2, "c");
  TaskId d = f.Compute(f.s0, 1, "d");
  f.p.AddDep(a, c);
  f.p.AddDep(b, d);  // b (10 ms) is longer than a+c (3 ms): the path is b -> d
  Timeline tl = f.Run();
  REQUIRE(tl.critical_path.size() == 2);
  CHECK(tl.critical_path[0] == b);
  CHECK(tl.critical_path[1] == d);
}

TEST_CASE("the same program gives the same timeline bit for bit") {
  auto build = [](Program& p, TableCost& cost) {
    uint32_t r = p.AddRank("r");
    LinkId l = p.AddLink("l", Bandwidth::GBps(3));
    RouteId route = p.AddRoute({l});
    std::vector<StreamId> s;
    for (int i = 0; i < 4; ++i) s.push_back(p.AddStream(r, "s"));
    TaskId prev = kNone;
    for (int i = 0; i < 200; ++i) {
      TaskId t = (i % 3 == 0)
                     ? p.AddFlow(s[i % 4],
                                 cost.AddFlow({Duration::Nanoseconds(i), Bytes(1e6 * (i % 7 + 1))}),
                                 1, p.Intern("f"), route)
                     : p.AddCompute(s[i % 4], cost.AddCompute(Duration::Microseconds(i % 5 + 1)), 0,
                                    p.Intern("c"));
      if (prev != kNone && i % 2 == 0) p.AddDep(prev, t);
      prev = t;
    }
  };
  Program p1, p2;
  TableCost c1, c2;
  build(p1, c1);
  build(p2, c2);
  Engine e;
  auto t1 = e.Run(p1, c1);
  auto t2 = e.Run(p2, c2);
  REQUIRE(t1.ok());
  REQUIRE(t2.ok());
  CHECK(t1->start == t2->start);
  CHECK(t1->end == t2->end);
  CHECK(t1->critical_path == t2->critical_path);
  // Timed apart (the engine benchmark's setup and event loop), the replay is the same.
  RunOptions::Timing timing{.setup_s = -1, .loop_s = -1};
  auto t3 = e.Run(p1, c1, {.timing = &timing});
  REQUIRE(t3.ok());
  CHECK(t3->start == t1->start);
  CHECK(t3->end == t1->end);
  CHECK(t3->critical_path == t1->critical_path);
  CHECK(t3->events == t1->events);
  CHECK(timing.setup_s >= 0);
  CHECK(timing.loop_s >= 0);
}

TEST_CASE("a task on several streams waits for all of them (collectives in --full mode)") {
  Fixture f;
  uint32_t r1 = f.p.AddRank("r1");
  StreamId other = f.p.AddStream(r1, "comm");
  f.Compute(other, 7);
  TaskId coll = f.Compute(f.s1, 2);
  f.p.AddStreamToTask(coll, other);
  Timeline tl = f.Run();
  CHECK(tl.start[coll] == Ms(7));
  CHECK(tl.makespan == Ms(9));
}

TEST_CASE("a program changed after a replay keeps its dependencies") {
  // Replays finalize the program; whatever is added afterwards (a task, a memory event, a
  // dependency, a second stream) reopens it without losing the dependencies it held.
  Fixture f;
  TaskId a = f.Compute(f.s0, 5);
  TaskId b = f.Compute(f.s1, 1);
  f.p.AddDep(a, b);
  CHECK(f.Run().start[b] == Ms(5));
  f.p.AddMemory(b, f.rank, Bytes::GB(1), MemoryAt::kStart);
  Timeline again = f.Run();
  CHECK(again.start[b] == Ms(5));
  CHECK(again.peak_memory[f.rank] == doctest::Approx(1e9));
  TaskId c = f.Compute(f.s1, 2);
  CHECK(f.Run().start[b] == Ms(5));
  f.p.AddDep(c, f.Compute(f.s0, 1));
  Timeline third = f.Run();
  CHECK(third.start[b] == Ms(5));
  CHECK(third.makespan == Ms(9));  // a 5, b 5-6, c 6-8, then the last task 8-9
  // A second stream added to a task after a replay holds it too: d on s0 also needs s1, so
  // it waits for c there as well as for a on s0.
  Fixture g;
  g.Compute(g.s0, 1);
  g.Compute(g.s1, 4);
  TaskId d = g.Compute(g.s0, 1);
  CHECK(g.Run().start[d] == Ms(1));
  g.p.AddStreamToTask(d, g.s1);
  CHECK(g.Run().start[d] == Ms(4));
  // Each stream's count of tasks, which the replay lays its stream queues out by, follows:
  // f's s0 runs a and the last task, s1 b and c; g's s1 runs its own task and d.
  CHECK(f.p.stream_task_counts() == std::vector<uint32_t>{2, 2});
  CHECK(g.p.stream_task_counts() == std::vector<uint32_t>{2, 2});
  const StreamId late = g.p.AddStream(g.rank, "late");
  g.Compute(late, 3);
  CHECK(g.p.stream_task_counts() == std::vector<uint32_t>{2, 2, 1});
  CHECK(g.Run().makespan == Ms(5));
}

TEST_CASE("chrome trace has one event per task and process names") {
  Fixture f;
  f.Compute(f.s0, 1, "fwd");
  f.Compute(f.s1, 1, "allreduce");
  Timeline tl = f.Run({.record_memory = true});
  std::string json = ChromeTraceJson(f.p, tl, {"compute"});
  CHECK(json.find("\"fwd\"") != std::string::npos);
  CHECK(json.find("\"process_name\"") != std::string::npos);
  CHECK(json.find("\"thread_name\"") != std::string::npos);
  CHECK(json.front() == '{');
}

TEST_CASE("a replay past 1e6 s is refused as out of range, never wrapped") {
  // Issue 62: a GPU of 1000 B/s gave tasks of years, whose sums wrapped int64 picoseconds into
  // negative times (a segfault in the flow network, MFU 4817%). Each way a time can grow: a
  // compute task, a chain of them, a flow's latency and its bytes at a crawl, and a task
  // beyond even int64's range (Duration::Infinite).
  struct Case {
    const char* what;
    std::function<void(Fixture&)> build;
  };
  const std::vector<Case> cases = {
      {"one long task", [](Fixture& f) { f.Compute(f.s0, 2e9); }},  // 2e6 s
      {"a chain",
       [](Fixture& f) {
         TaskId a = f.Compute(f.s0, 6e8), b = f.Compute(f.s0, 6e8);  // 2 x 6e5 s
         f.p.AddDep(a, b);
       }},
      {"an infinite task",
       [](Fixture& f) {
         f.p.AddCompute(f.s0, f.cost.AddCompute(Duration::Infinite()), 0, f.p.Intern("inf"));
       }},
      {"a flow's bytes at 1 B/s",
       [](Fixture& f) {
         LinkId l = f.p.AddLink("slow", Bandwidth::BytesPerSecond(1));
         f.p.AddFlow(f.s1, f.cost.AddFlow({Duration::Zero(), Bytes::GB(1)}), 1, f.p.Intern("x"),
                     f.p.AddRoute({l}));
       }},
      {"a flow's latency",
       [](Fixture& f) {
         LinkId l = f.p.AddLink("far", Bandwidth::GBps(1));
         f.p.AddFlow(f.s1, f.cost.AddFlow({Duration::Seconds(5e6), Bytes::GB(1)}), 1,
                     f.p.Intern("x"), f.p.AddRoute({l}));
       }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    Fixture f;
    c.build(f);
    Engine e;
    const StatusOr<Timeline> tl = e.Run(f.p, f.cost, {});
    REQUIRE_FALSE(tl.ok());
    CHECK(tl.status().exit_code() == 2);
    CHECK(tl.status().message().find("the step runs past 1e+06 s (11.6 days)") !=
          std::string::npos);
    // The lower bound saturates just past the range too, never wraps.
    const StatusOr<Duration> bound = MakespanLowerBound(f.p, f.cost);
    REQUIRE(bound.ok());
    CHECK(bound->picoseconds() > 0);
  }
  // Just inside the range: replayed.
  Fixture f;
  TaskId a = f.Compute(f.s0, 4e8), b = f.Compute(f.s0, 5e8);  // 9e5 s in all
  f.p.AddDep(a, b);
  CHECK(f.Run().makespan.seconds() == doctest::Approx(9e5));
}

TEST_CASE("Duration arithmetic saturates, never wraps") {
  const Duration inf = Duration::Infinite();
  const Duration lowest = Duration::Picoseconds(std::numeric_limits<int64_t>::min());
  CHECK((inf + Duration::Seconds(1)).is_infinite());
  CHECK((Duration::Zero() - lowest).is_infinite());  // -INT64_MIN does not exist
  CHECK((lowest - Duration::Seconds(1)) == lowest);
  CHECK((Duration::Seconds(1) - Duration::Seconds(3)) == Duration::Seconds(-2));
}

}  // namespace
}  // namespace parasim::sim
