// A one-rank program for the engine's tests, built task by task and replayed: two streams
// (compute and comm), compute tasks of given milliseconds. Test-only.
//
//   Fixture f;
//   TaskId a = f.Compute(f.s0, 1), b = f.Compute(f.s1, 2);
//   f.p.AddDep(a, b);
//   CHECK(f.Run().makespan == Ms(3));
#pragma once

#include <doctest/doctest.h>

#include <string_view>

#include "sim/engine.h"

namespace parasim::sim {

inline Duration Ms(double v) { return Duration::Milliseconds(v); }

struct Fixture {
  Program p;
  TableCost cost;
  uint32_t rank = p.AddRank("r0");
  StreamId s0 = p.AddStream(rank, "compute");
  StreamId s1 = p.AddStream(rank, "comm");
  TaskId Compute(StreamId s, double ms, std::string_view name = "t") {
    return p.AddCompute(s, cost.AddCompute(Ms(ms)), 0, p.Intern(name));
  }
  Timeline Run(RunOptions o = {}) {
    Engine e;
    auto tl = e.Run(p, cost, o);
    REQUIRE(tl.ok());
    return *tl;
  }
};

}  // namespace parasim::sim
