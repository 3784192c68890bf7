// The makespan lower bound: at or below the replay's makespan, equal to it without contention,
// a link's bytes where they take longer than any path, and the same for any task order.
#include "sim/lower_bound.h"

#include <doctest/doctest.h>
#include <fmt/core.h>

#include <numeric>
#include <random>
#include <vector>

#include "sim/engine.h"
#include "sim/engine_fixture.h"

namespace parasim::sim {
namespace {

TEST_CASE("makespan lower bound: the replay without contention, or a link's bytes") {
  // Without shared links or collectives beside compute, the bound is the replay itself: the
  // chain, the fan-in, the stream order and the extra stream all hold.
  Fixture f;
  uint32_t r1 = f.p.AddRank("r1");
  StreamId other = f.p.AddStream(r1, "comm");
  TaskId a = f.Compute(f.s0, 1);
  TaskId b = f.Compute(f.s0, 2);
  TaskId c = f.Compute(f.s1, 5);
  TaskId d = f.Compute(f.s0, 1);
  f.p.AddDep(a, b);
  f.p.AddDep(c, d);
  f.Compute(other, 7);
  TaskId coll = f.Compute(f.s1, 2);
  f.p.AddStreamToTask(coll, other);
  auto bound = MakespanLowerBound(f.p, f.cost);
  REQUIRE(bound.ok());
  CHECK(*bound == Ms(9));  // coll waits for 7 ms on `other` and for c on s1: 7 + 2
  CHECK(*bound == f.Run().makespan);

  // Two 1 GB flows on one 10 GB/s link: alone each takes 100 ms, but the link moves 2 GB,
  // 200 ms, which is the replay's makespan.
  Fixture g;
  LinkId link = g.p.AddLink("nic", Bandwidth::GBps(10));
  RouteId r = g.p.AddRoute({link});
  StreamId s2 = g.p.AddStream(g.rank, "comm2");
  uint32_t k = g.cost.AddFlow({Duration::Microseconds(10), Bytes::GB(1)});
  TaskId x = g.p.AddFlow(g.s1, k, 1, g.p.Intern("x"), r);
  g.p.AddFlow(s2, k, 1, g.p.Intern("y"), r);
  TaskId after = g.Compute(g.s0, 50);
  g.p.AddDep(x, after);
  auto shared = MakespanLowerBound(g.p, g.cost);
  REQUIRE(shared.ok());
  // The path: 10 us latency + 100 ms alone + 50 ms = 150.01 ms; the link: 200 ms.
  CHECK(shared->milliseconds() == doctest::Approx(200).epsilon(1e-9));
  const Timeline tl = g.Run();
  CHECK(*shared <= tl.makespan);
  CHECK(tl.makespan.milliseconds() == doctest::Approx(250.01).epsilon(1e-9));

  // A compute task slowed by a collective beside it: the bound takes it at its cost.
  Program p;
  TableCost cost;
  uint32_t r0 = p.AddRank("r0");
  StreamId compute = p.AddStream(r0, "compute", StreamRole::kCompute);
  StreamId comm = p.AddStream(r0, "comm", StreamRole::kCommunication);
  p.AddCompute(compute, cost.AddCompute(Ms(10), 1.5), 0, p.Intern("gemm"));
  p.AddCompute(comm, cost.AddCompute(Ms(10)), 0, p.Intern("nccl"));
  auto slowed = MakespanLowerBound(p, cost);
  REQUIRE(slowed.ok());
  CHECK(*slowed == Ms(10));
  Engine e;
  auto replayed = e.Run(p, cost);
  REQUIRE(replayed.ok());
  // 10 ms at 1/1.5 of its rate does 6.67 ms of it; the rest alone: 13.33 ms.
  CHECK(replayed->makespan.milliseconds() == doctest::Approx(40.0 / 3).epsilon(1e-6));

  // A dependency against the stream order is a cycle for the bound as for the replay.
  Fixture h;
  TaskId first = h.Compute(h.s0, 1);
  TaskId second = h.Compute(h.s0, 1);
  h.p.AddDep(second, first);
  auto cycle = MakespanLowerBound(h.p, h.cost);
  REQUIRE_FALSE(cycle.ok());
  CHECK(cycle.status().message().find("cycle") != std::string::npos);
}

TEST_CASE("makespan lower bound: one pass in task order equals the general walk") {
  // Random programs whose dependencies run forward in task order (the one-pass path), and the
  // same programs with their tasks renumbered by a random merge of the streams' sequences: each
  // stream keeps its order, but dependencies now run backwards too (the general path). Both
  // give the same bound, at or below each replay's makespan.
  std::mt19937 rng(20261124);
  int backwards = 0;
  for (int trial = 0; trial < 50; ++trial) {
    const int streams = 2 + static_cast<int>(rng() % 4), tasks = 10 + static_cast<int>(rng() % 40);
    struct Spec {
      int stream, extra;  // extra: a second stream the task also holds, or -1
      bool flow;
      double ms;
    };
    std::vector<Spec> spec;
    std::vector<std::pair<int, int>> deps;
    for (int t = 0; t < tasks; ++t) {
      int stream = static_cast<int>(rng() % streams);
      int extra = rng() % 6 == 0 ? static_cast<int>(rng() % streams) : -1;
      if (extra == stream) extra = -1;
      spec.push_back({stream, extra, rng() % 3 == 0, 1.0 + static_cast<double>(rng() % 9)});
      for (int d = 0; d < t; ++d) {
        if (rng() % 8 == 0) deps.emplace_back(d, t);
      }
    }
    // A random merge of the streams' sequences (the first stream a task holds decides).
    std::vector<std::vector<int>> per_stream(static_cast<size_t>(streams));
    for (int t = 0; t < tasks; ++t) per_stream[static_cast<size_t>(spec[t].stream)].push_back(t);
    std::vector<int> merged;
    std::vector<size_t> taken(static_cast<size_t>(streams), 0);
    while (static_cast<int>(merged.size()) < tasks) {
      const size_t s = rng() % static_cast<size_t>(streams);
      if (taken[s] < per_stream[s].size()) merged.push_back(per_stream[s][taken[s]++]);
    }
    auto build = [&](const std::vector<int>& order, Program* p, TableCost* cost) {
      uint32_t r = p->AddRank("r");
      std::vector<StreamId> st;
      for (int s = 0; s < streams; ++s) st.push_back(p->AddStream(r, fmt::format("s{}", s)));
      RouteId route = p->AddRoute({p->AddLink("nic", Bandwidth::GBps(10))});
      std::vector<TaskId> id(static_cast<size_t>(tasks));
      for (int t : order) {
        const Spec& x = spec[static_cast<size_t>(t)];
        id[static_cast<size_t>(t)] =
            x.flow ? p->AddFlow(st[x.stream], cost->AddFlow({Ms(x.ms), Bytes::MB(x.ms * 10)}), 1,
                                p->Intern("f"), route)
                   : p->AddCompute(st[x.stream], cost->AddCompute(Ms(x.ms)), 0, p->Intern("c"));
      }
      for (auto [a, b] : deps) p->AddDep(id[static_cast<size_t>(a)], id[static_cast<size_t>(b)]);
      return id;
    };
    // A task on an extra stream must keep that stream's order too: only keep extras whose
    // stream order is the same in both numberings (checked after building).
    Program forward, shuffled;
    TableCost fc, sc;
    std::vector<int> identity(static_cast<size_t>(tasks));
    std::iota(identity.begin(), identity.end(), 0);
    auto fid = build(identity, &forward, &fc);
    auto sid = build(merged, &shuffled, &sc);
    // Extra streams: in task order on both, so that the tasks a stream runs keep their order.
    std::vector<std::vector<int>> on_extra(static_cast<size_t>(streams));
    for (int t = 0; t < tasks; ++t) {
      const Spec& x = spec[static_cast<size_t>(t)];
      if (x.extra < 0) continue;
      // The extra stream's order is by task id in each program: keep the extra only when the
      // two numberings agree on it against every task already on that stream.
      bool agrees = true;
      for (int u : per_stream[static_cast<size_t>(x.extra)]) {
        agrees &= (fid[static_cast<size_t>(u)] < fid[static_cast<size_t>(t)]) ==
                  (sid[static_cast<size_t>(u)] < sid[static_cast<size_t>(t)]);
      }
      for (int u : on_extra[static_cast<size_t>(x.extra)]) {
        agrees &= (fid[static_cast<size_t>(u)] < fid[static_cast<size_t>(t)]) ==
                  (sid[static_cast<size_t>(u)] < sid[static_cast<size_t>(t)]);
      }
      if (!agrees) continue;
      on_extra[static_cast<size_t>(x.extra)].push_back(t);
      forward.AddStreamToTask(fid[static_cast<size_t>(t)], static_cast<StreamId>(x.extra));
      shuffled.AddStreamToTask(sid[static_cast<size_t>(t)], static_cast<StreamId>(x.extra));
    }
    auto a = MakespanLowerBound(forward, fc);
    auto b = MakespanLowerBound(shuffled, sc);
    REQUIRE(forward.deps_in_task_order());
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(*a == *b);
    Engine e;
    for (auto [p, c] : {std::pair<Program*, TableCost*>{&forward, &fc}, {&shuffled, &sc}}) {
      auto tl = e.Run(*p, *c);
      REQUIRE(tl.ok());
      CHECK(*a <= tl->makespan);
    }
    if (!shuffled.deps_in_task_order()) ++backwards;
  }
  CHECK(backwards > 25);  // most renumbered programs take the general path
}

}  // namespace
}  // namespace parasim::sim
