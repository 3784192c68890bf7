// The steady-state jump (sim/steady_state.h) on hand-built pipelines: wherever it places
// periods, the timeline is the full replay's, bit for bit; it places them only where the state
// and the program repeat.
#include "sim/steady_state.h"

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "sim/engine.h"
#include "sim/engine_fixture.h"

namespace parasim::sim {
namespace {

// Micro-batches through two stages on two ranks, each micro-batch's tasks in turn: stage 0's
// forward (slowed by a quarter while a send runs beside it, holding memory until its send
// ends), the send over a 1 GB/s link, stage 1's forward. A step-end task on stage 1 waits for
// every micro-batch's forward, one more done each period (an accumulator). The shift maps each
// micro-batch's tasks to the next one's; the anchors are stage 0's forwards.
struct Pipeline {
  Program p;
  TableCost cost;
  HugePageVector<TaskId> shift;
  std::vector<TaskId> anchors;

  // stage0_ms(m), stage1_ms(m): the forwards' costs of micro-batch m.
  Pipeline(int micro_batches, const std::function<double(int)>& stage0_ms,
           const std::function<double(int)>& stage1_ms) {
    const uint32_t r0 = p.AddRank("stage0"), r1 = p.AddRank("stage1");
    const StreamId c0 = p.AddStream(r0, "compute", StreamRole::kCompute);
    const StreamId send = p.AddStream(r0, "send", StreamRole::kCommunication);
    const StreamId c1 = p.AddStream(r1, "compute", StreamRole::kCompute);
    const RouteId route = p.AddRoute({p.AddLink("nic", Bandwidth::GBps(1))});
    const uint32_t flow = cost.AddFlow({Duration::Microseconds(10), Bytes::MB(1)});
    // One cost key per cost: tasks of the same shape share their key.
    std::map<std::pair<double, double>, uint32_t> keys;
    auto key = [&](double ms, double slowdown) {
      auto [it, added] = keys.try_emplace({ms, slowdown}, 0);
      if (added) it->second = cost.AddCompute(Ms(ms), slowdown);
      return it->second;
    };
    std::vector<TaskId> last;
    for (int m = 0; m < micro_batches; ++m) {
      const TaskId f0 = p.AddCompute(c0, key(stage0_ms(m), 1.25), 0, p.Intern("f0"));
      const TaskId x = p.AddFlow(send, flow, 1, p.Intern("send"), route);
      const TaskId f1 = p.AddCompute(c1, key(stage1_ms(m), 1.0), 0, p.Intern("f1"));
      p.AddDep(f0, x);
      p.AddDep(x, f1);
      p.AddMemory(f0, r0, Bytes::MB(64), MemoryAt::kStart);
      p.AddMemory(x, r0, Bytes::MB(-64), MemoryAt::kEnd);
      anchors.push_back(f0);
      last.push_back(f1);
    }
    const TaskId step_end = p.AddCompute(c1, cost.AddCompute(Ms(1)), 0, p.Intern("step_end"));
    for (TaskId f1 : last) p.AddDep(f1, step_end);
    shift.assign(p.num_tasks(), kNone);
    for (TaskId t = 0; t + 3 < step_end; ++t) shift[t] = t + 3;  // three tasks a micro-batch
  }
};

// Replays `pl` with and without the jump, checks that the timelines are the same and returns
// the one with the jump.
Timeline SameWithJump(Pipeline& pl) {
  Engine engine;
  auto full = engine.Run(pl.p, pl.cost);
  REQUIRE(full.ok());
  CHECK(full->jumped_tasks == 0);
  auto jumped = engine.Run(pl.p, pl.cost, {.shift = &pl.shift, .anchors = &pl.anchors});
  REQUIRE(jumped.ok());
  CHECK(jumped->makespan == full->makespan);
  CHECK(jumped->start == full->start);
  CHECK(jumped->end == full->end);
  CHECK(jumped->peak_memory == full->peak_memory);
  CHECK(jumped->peak_time == full->peak_time);
  CHECK(jumped->busy == full->busy);
  CHECK(jumped->link_bytes == full->link_bytes);
  CHECK(jumped->events == full->events);
  CHECK(jumped->moves == full->moves);
  CHECK(jumped->critical_path == full->critical_path);
  return *jumped;
}

TEST_CASE("a steady pipeline is jumped over, and the timeline is the full replay's") {
  Pipeline pl(
      40, [](int) { return 2.0; }, [](int) { return 1.5; });
  const Timeline tl = SameWithJump(pl);
  CHECK(tl.jumped_tasks > 3 * 20);  // most micro-batches placed, not replayed
  CHECK(tl.period_anchors == 1);
}

TEST_CASE("a state that comes back every second anchor is jumped with a period of two") {
  // Stage 0's forwards alternate in length: micro-batch m's state is m + 2's, not m + 1's.
  Pipeline pl(
      40, [](int m) { return m % 2 == 0 ? 2.0 : 2.5; }, [](int) { return 1.5; });
  const Timeline tl = SameWithJump(pl);
  CHECK(tl.jumped_tasks > 0);
  CHECK(tl.period_anchors == 2);
}

TEST_CASE("the jump stops where the program changes shape") {
  // From micro-batch 30 stage 0 is slower: the periods placed end before it, and the rest is
  // replayed.
  Pipeline pl(
      40, [](int m) { return m < 30 ? 2.0 : 2.2; }, [](int) { return 1.5; });
  const Timeline tl = SameWithJump(pl);
  CHECK(tl.jumped_tasks > 0);
  CHECK(tl.jumped_tasks < 3 * 30);
}

TEST_CASE("a backlog that grows every period is not jumped") {
  // Stage 1 is slower than stage 0: sends pile up in front of it, and no state comes back.
  Pipeline pl(
      60, [](int) { return 1.0; }, [](int) { return 3.0; });
  const Timeline tl = SameWithJump(pl);
  CHECK(tl.jumped_tasks == 0);
  CHECK(tl.period_anchors == 0);
}

}  // namespace
}  // namespace parasim::sim
