// The deadlock report: a cycle is the program's own error; otherwise the task ready but for
// its stream order is named with its label, rank and stream, with how many tasks finished.
#include "sim/deadlock.h"

#include <doctest/doctest.h>

#include <string>

#include "sim/engine.h"
#include "sim/engine_fixture.h"
#include "sim/replay_state.h"

namespace parasim::sim {
namespace {

TEST_CASE("a dependency cycle is rejected with a clear error") {
  Fixture f;
  TaskId a = f.Compute(f.s0, 1, "alpha");
  TaskId b = f.Compute(f.s1, 1, "beta");
  f.p.AddDep(a, b);
  f.p.AddDep(b, a);
  CHECK_FALSE(f.p.Validate().ok());
  Engine e;
  auto tl = e.Run(f.p, f.cost);
  REQUIRE_FALSE(tl.ok());
  CHECK(tl.status().message().find("cycle") != std::string::npos);
}

TEST_CASE("a stream order that contradicts dependencies is a reported deadlock") {
  Fixture f;
  TaskId a = f.Compute(f.s0, 1, "first-in-stream");
  TaskId b = f.Compute(f.s0, 1, "second-in-stream");
  f.p.AddDep(b, a);            // a waits for b, b waits behind a in the stream
  f.Compute(f.s1, 2, "free");  // finishes
  Engine e;
  auto tl = e.Run(f.p, f.cost);
  REQUIRE_FALSE(tl.ok());
  CHECK(tl.status().message() ==
        "deadlock: task 1 ('second-in-stream' on r0/compute) is ready but waits behind another "
        "task in its stream order; 1 of 3 tasks finished");
}

TEST_CASE("the report reads the state it is given: the first task ready but for its streams") {
  // Before the replay takes any stream's head, a task with no dependency that does not head
  // its stream is ready but for the stream order; the head itself is not (it holds its stream).
  Fixture f;
  const TaskId head = f.Compute(f.s0, 1, "head");
  f.Compute(f.s0, 1, "behind");
  const TaskId other = f.Compute(f.s1, 1, "other");
  f.p.AddDep(head, other);
  f.p.Finalize();
  ReplayState fresh(f.p, {});
  CHECK(DeadlockError(fresh).message() ==
        "deadlock: task 1 ('behind' on r0/compute) is ready but waits behind another task in "
        "its stream order; 0 of 3 tasks finished");

  // Every task but the streams' heads waits for a dependency: no task to name.
  Fixture g;
  const TaskId first = g.Compute(g.s0, 1, "first");
  g.p.AddDep(first, g.Compute(g.s0, 1, "second"));
  g.p.Finalize();
  ReplayState waiting(g.p, {});
  CHECK(DeadlockError(waiting).message() == "deadlock: 0 of 2 tasks finished");
}

}  // namespace
}  // namespace parasim::sim
